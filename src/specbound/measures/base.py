"""What a measure is and what it is computed from."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..bounds import BoundDetails
    from ..core import ModelSpec
    from ..spectra import Spectra
    from ..weights import WeightSpectra
    from .htsr_alpha import PowerLawFit


@dataclass(frozen=True)
class MeasureValue:
    """A measure's value (None when undefined) and a note for the reader (why, what skipped)."""

    value: float | None
    note: str | None = None


@dataclass(frozen=True)
class Measure:
    """A registered measure.

    ``log10``: the value is already a log10 (the bounds, the log products). ``bound_form``: the
    correlation protocol (SPEC 10) also evaluates ``log10 value - 1/2 log10 n`` as
    ``<name>_per_sqrt_n`` when the training-set size n is known. ``needs_weights``: reads the
    raw-weight spectra (``MeasureInput.weights``: the SVDs of W_Q, W_K, W_V, W_O, the costliest
    part of an analysis); when no chosen measure does, they are not computed.
    """

    name: str
    description: str
    compute: Callable[[MeasureInput], MeasureValue]
    log10: bool = False
    bound_form: bool = False
    needs_init: bool = False
    needs_weights: bool = True


@dataclass(eq=False)
class MeasureInput:
    """Everything a measure may read about one model (pure data, no I/O)."""

    spec: ModelSpec
    spectra: Spectra
    details: BoundDetails
    weights: WeightSpectra
    num_parameters: int | None = None
    distance_from_init: np.ndarray | None = None  # ||W - W0||_F^2 per row of ``weights``

    @functools.cached_property
    def fits(self) -> list[PowerLawFit]:
        """The power-law fit of every raw weight matrix (SPEC 9), computed once."""
        from .htsr_alpha import weight_fit

        return [
            weight_fit(
                self.weights.singular_values(i),
                int(min(self.weights.rows[i], self.weights.cols[i])),
            )
            for i in range(len(self.weights))
        ]


def finite_or_none(x: float) -> float | None:
    """A float, or None when it is not finite (never NaN/inf in outputs)."""
    return float(x) if math.isfinite(x) else None
