"""``htsr_alpha_weighted`` = mean over W of alpha(W) log10 lambda_max(W) (WeightWatcher's
``alpha_weighted``; alpha(W) as in ``htsr_alpha``, lambda_max = ||W||_2^2; SPEC 9)."""

from __future__ import annotations

from .base import Measure, MeasureInput, MeasureValue
from .powerlaw import mean_alpha


def compute(x: MeasureInput) -> MeasureValue:
    return mean_alpha(x, weighted=True)


MEASURE = Measure(
    "htsr_alpha_weighted",
    "mean of alpha * log10 lambda_max over weight matrices (WeightWatcher's alpha_weighted)",
    compute,
)
