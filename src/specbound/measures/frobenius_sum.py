"""``frobenius_sum`` = sum over W of ||W||_F^2 (SPEC 9)."""

from __future__ import annotations

import numpy as np

from .base import Measure, MeasureInput, MeasureValue, finite_or_none


def compute(x: MeasureInput) -> MeasureValue:
    f = x.weights.frobenius_norm
    return MeasureValue(finite_or_none(float(np.sum(f * f))))


MEASURE = Measure(
    "frobenius_sum",
    "sum over weight matrices of ||W||_F^2",
    compute,
)
