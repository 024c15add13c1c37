"""``distance_from_init`` = sum over W of ||W - W0||_F^2, W0 from an initialization checkpoint of
the same architecture (SPEC 9). Undefined without one (``analyze(..., init=...)``; the CLI's
``--init``)."""

from __future__ import annotations

import numpy as np

from .base import Measure, MeasureInput, MeasureValue, finite_or_none


def compute(x: MeasureInput) -> MeasureValue:
    if x.distance_from_init is None:
        return MeasureValue(None, "no initialization checkpoint given")
    return MeasureValue(finite_or_none(float(np.sum(x.distance_from_init))))


MEASURE = Measure(
    "distance_from_init",
    "sum over weight matrices of ||W - W0||_F^2 from the initialization (needs an init checkpoint)",
    compute,
    needs_init=True,
    needs_weights=False,  # ||W - W0||_F^2 comes from the tensors (linalg.model.compute_distance)
)
