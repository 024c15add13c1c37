"""``log_frobenius_product`` = sum over W of log10 ||W||_F^2 (Jiang et al. 2020's log product of
Frobenius norms, over SPEC 9's raw weight matrices). Undefined if some W is the zero matrix."""

from __future__ import annotations

import numpy as np

from .base import Measure, MeasureInput, MeasureValue


def compute(x: MeasureInput) -> MeasureValue:
    f = x.weights.frobenius_norm
    if f.size == 0:
        return MeasureValue(None, "no weight matrices")
    if np.any(f <= 0):
        return MeasureValue(None, f"{int(np.sum(f <= 0))} zero matrices (log of 0)")
    return MeasureValue(float(np.sum(2.0 * np.log10(f))))


MEASURE = Measure(
    "log_frobenius_product",
    "sum over weight matrices of log10 ||W||_F^2 (log product of Frobenius norms)",
    compute,
    log10=True,
)
