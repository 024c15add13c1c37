"""``frobenius_sum`` = sum over W of ||W||_F^2 (SPEC 9)."""

from __future__ import annotations

import numpy as np

from .base import Measure, MeasureInput, MeasureValue, finite_or_none


def compute(x: MeasureInput) -> MeasureValue:
    f = x.weights.frobenius_norm
    with np.errstate(over="ignore"):
        total = float(np.sum(f * f))
    if not np.isfinite(total):  # SPEC 6: a value beyond float64 is missing, with a reason
        return MeasureValue(None, "beyond float64 (see log_frobenius_product for its log)")
    return MeasureValue(finite_or_none(total))


MEASURE = Measure(
    "frobenius_sum",
    "sum over weight matrices of ||W||_F^2",
    compute,
)
