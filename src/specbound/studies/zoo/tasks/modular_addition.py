"""``modular-addition``: a + b mod P, the grokking setup of Nanda et al. (2023), P = 23 for CPUs.

Input tokens ``[P, a, b]`` (token P is the "=" / classification token read by the BERT pooler),
label ``(a + b) % P``. All P^2 pairs exist; a model trains on a seeded random fraction of them
(the ``train_fraction`` axis) and is tested on every other pair. Small fractions memorize
(gap near 1), large ones generalize (gap near 0).
"""

from __future__ import annotations

from typing import Any

from .... import extras
from .base import Data, Preset, Task, bert_classifier, permutation, standard_presets

P = 23


class ModularAddition(Task):
    name = "modular-addition"
    description = f"a + b mod {P} from tokens [=, a, b] (grokking setup); BERT classifier"
    size_axis = "train_fraction"
    presets = standard_presets(
        tiny=Preset(
            axes={
                "depth": [1],
                "width": [32],
                "lr": [1e-2],
                "weight_decay": [0.0, 1.0],
                "train_fraction": [0.3, 0.8],
                "seed": [0, 1],
            },
            max_steps=60,
        ),
        v1=Preset(
            axes={
                "depth": [1, 2],
                "width": [64, 128],
                "lr": [5e-3, 1e-2],
                "weight_decay": [0.0, 0.3],
                "train_fraction": [0.3, 0.5, 0.7, 0.9],
                "seed": [0, 1],
            },
            max_steps=400,
        ),
        standard={
            "depth": [1, 2],
            "width": [64, 128],
            "lr": [1.5e-3, 3e-3],
            "weight_decay": [0.0, 0.3],
            "train_fraction": [0.3, 0.6, 0.9],
            "seed": [0, 1, 2],
        },
        max_steps=2000,
        size_axis="train_fraction",
        fixed=0.6,
    )

    def data(self) -> Data:
        torch = extras.torch()

        pairs = [(a, b) for a in range(P) for b in range(P)]
        x = torch.tensor([[P, a, b] for a, b in pairs], dtype=torch.long)
        y = torch.tensor([(a + b) % P for a, b in pairs], dtype=torch.long)
        return Data(x=x, y=y, num_classes=P, extra={"P": P})

    def size_problem(self, size: float) -> str | None:
        n = round(float(size) * P * P)
        if not 0 < float(size) < 1 or n < 1 or n >= P * P:
            return f"train_fraction must lie in (0, 1) and leave train and test non-empty (P={P})"
        return None

    def split(self, size: float, seed: int) -> tuple[list[int], list[int]]:
        perm = permutation(P * P, seed)
        n = round(float(size) * P * P)
        return sorted(perm[:n]), sorted(perm[n:])

    def build(self, depth: int, width: int, num_classes: int) -> Any:
        return bert_classifier(P + 1, 3, depth, width, num_classes)
