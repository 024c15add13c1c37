"""``num_parameters`` = number of scalars in the checkpoint, every tensor included (SPEC 9)."""

from __future__ import annotations

from .base import Measure, MeasureInput, MeasureValue


def compute(x: MeasureInput) -> MeasureValue:
    if x.num_parameters is None:
        return MeasureValue(None, "parameter count unknown")
    return MeasureValue(float(x.num_parameters))


MEASURE = Measure(
    "num_parameters",
    "number of scalars in the checkpoint (every tensor)",
    compute,
    bound_form=True,
    needs_weights=False,
)
