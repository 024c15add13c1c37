"""``log_spectral_product`` = sum over W of log10 ||W||_2^2 (Jiang et al. 2020's log product of
spectral norms, over SPEC 9's raw weight matrices). Undefined if some W is the zero matrix."""

from __future__ import annotations

import numpy as np

from .base import Measure, MeasureInput, MeasureValue


def compute(x: MeasureInput) -> MeasureValue:
    s1 = x.weights.spectral_norm
    if s1.size == 0:
        return MeasureValue(None, "no weight matrices")
    if np.any(s1 <= 0):
        return MeasureValue(None, f"{int(np.sum(s1 <= 0))} zero matrices (log of 0)")
    return MeasureValue(float(np.sum(2.0 * np.log10(s1))))


MEASURE = Measure(
    "log_spectral_product",
    "sum over weight matrices of log10 ||W||_2^2 (log product of spectral norms)",
    compute,
    log10=True,
)
