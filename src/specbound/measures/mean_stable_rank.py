"""``mean_stable_rank`` = mean over W of ||W||_F^2 / ||W||_2^2 (0 for a zero matrix; SPEC 9)."""

from __future__ import annotations

import numpy as np

from .base import Measure, MeasureInput, MeasureValue


def compute(x: MeasureInput) -> MeasureValue:
    sr = x.weights.stable_rank
    if sr.size == 0:
        return MeasureValue(None, "no weight matrices")
    return MeasureValue(float(np.mean(sr)))


MEASURE = Measure(
    "mean_stable_rank",
    "mean over weight matrices of the stable rank ||W||_F^2 / ||W||_2^2",
    compute,
)
