"""Output margins and the margin-normalized measures (SPEC 12; Jiang et al. 2020).

    margin_i = f(x_i)[y_i] - max_{c != y_i} f(x_i)[c]          (float64 logits)
    γ = |k-th smallest margin|, k = max(1, floor(m / 10))
    inverse_margin                     = 1 / γ²
    log_spectral_product_over_margin   = log_spectral_product - 2 log10 γ
    <bound>_per_margin_sqrt_n          = log10 B - log10 γ - ½ log10 n   (B / (γ √n))

γ = 0 leaves every margin measure undefined (None, with a note).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import extras
from ._common import Examples, check_labels, logits_of


def margins(model: Any, ex: Examples) -> np.ndarray:
    """Every example's margin (float64), in the order of the examples."""
    torch = extras.torch()

    out = []
    with torch.no_grad():
        for inputs, labels in ex.chunks:
            logits = logits_of(model, inputs, ex.logits_fn).double()
            check_labels(logits, labels)
            true = logits.gather(1, labels[:, None]).squeeze(1)
            other = logits.scatter(1, labels[:, None], float("-inf")).amax(dim=1)
            out.append((true - other).cpu().numpy())
    return np.concatenate(out).astype(np.float64)


def kth_margin(values: np.ndarray) -> tuple[float, int]:
    """(γ, k): γ = |k-th smallest margin|, k = max(1, floor(m / 10))."""
    k = max(1, len(values) // 10)
    return abs(float(np.sort(values, kind="stable")[k - 1])), k


def margin_measures(
    gamma: float, n: int, weights: Mapping[str, float | None], bounds: list[str]
) -> tuple[dict[str, float | None], dict[str, str]]:
    """The margin measures from γ, the training-set size n and the weight measures
    (``log_spectral_product`` and the bounds' log10 values; a missing one leaves its form
    undefined)."""
    values: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    names = ["inverse_margin", "log_spectral_product_over_margin"]
    names += [f"{b}_per_margin_sqrt_n" for b in bounds]
    if not (gamma > 0 and math.isfinite(gamma)):
        for name in names:
            values[name] = None
            notes[name] = f"the k-th smallest margin is {gamma!r}: undefined"
        return values, notes
    lg = math.log10(gamma)
    inv = 1.0 / gamma**2
    values["inverse_margin"] = inv if math.isfinite(inv) else None
    if values["inverse_margin"] is None:
        notes["inverse_margin"] = f"1/γ² beyond float64 (log10 = {-2 * lg!r})"
    lsp = weights.get("log_spectral_product")
    values["log_spectral_product_over_margin"] = None if lsp is None else float(lsp) - 2 * lg
    if lsp is None:
        notes["log_spectral_product_over_margin"] = "log_spectral_product is undefined"
    for b in bounds:
        name = f"{b}_per_margin_sqrt_n"
        v = weights.get(b)
        values[name] = None if v is None else float(v) - lg - 0.5 * math.log10(n)
        if v is None:
            notes[name] = f"{b} is undefined"
    return values, notes
