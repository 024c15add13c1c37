"""Label noise of a zoo model (the ``label_noise`` axis, issue 52).

``noisy_labels(y, rho, seed, num_classes)``: exactly ``round(rho * n)`` of the ``n`` training
labels (Python's ``round``), at positions drawn without replacement, are each replaced by a
class drawn uniformly from the ``num_classes - 1`` OTHER classes (``(y + k) % C`` with ``k``
uniform in ``1..C-1``), never the same class. The draw is seeded by the model's seed (a torch
generator seeded ``NOISE_SALT + seed``, so it is the same everywhere and independent of the
split's draw). Only training labels change: the test set keeps its clean labels, so the gap is
measured against them. ``MODEL/data.json`` records the changed positions and their new labels
(``data.py``), and ``training_data`` returns the labels as training used them.
"""

from __future__ import annotations

from typing import Any

from ... import extras

#: Added to the model's seed to seed the noise draw (apart from the split's permutation).
NOISE_SALT = 52_000_000_000


def noise_count(rho: float, n: int) -> int:
    """How many of ``n`` labels a share ``rho`` changes: ``round(rho * n)``."""
    return round(float(rho) * n)


def noisy_labels(y: Any, rho: float, seed: int, num_classes: int) -> tuple[Any, list[int]]:
    """``(labels, positions)``: a copy of the int64 tensor ``y`` with ``noise_count(rho, n)``
    labels replaced by another class, and the sorted positions changed (module doc)."""
    torch = extras.torch()

    y = y.clone()
    k = noise_count(rho, len(y))
    if k == 0:
        return y, []
    if num_classes < 2:
        raise ValueError("label noise needs at least two classes")
    g = torch.Generator().manual_seed(NOISE_SALT + int(seed))
    pos = torch.randperm(len(y), generator=g)[:k].sort().values
    shift = torch.randint(1, num_classes, (k,), generator=g)
    y[pos] = (y[pos] + shift) % num_classes
    return y, pos.tolist()
