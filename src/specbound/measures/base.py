"""What a measure is and what it is computed from: ``Measure``, ``MeasureInput`` and the bound
values every measure may read (``BoundValue``, ``Bounds``, ``BoundDetails``; assembled by
``measures.bounds.compute_bounds``)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .logspace import LN10, LOG_MAX

if TYPE_CHECKING:
    from ..core import ModelSpec
    from ..linalg.spectra import Spectra
    from ..linalg.weights import WeightSpectra

T = TypeVar("T")


@dataclass(frozen=True)
class BoundValue:
    """A bound kept as its natural log ``ln``; ``log10`` for people; ``value`` is the number
    itself, None when it does not fit a float64 (then only the logs are meaningful).

    ``log`` is a deprecated alias of ``ln`` (every other log in specbound is log10).
    """

    ln: float

    @property
    def log10(self) -> float:
        """log10 of the bound."""
        return self.ln / LN10

    @property
    def log(self) -> float:
        """Deprecated: the natural log; use ``ln`` (natural) or ``log10``."""
        warnings.warn(
            "BoundValue.log is deprecated (it is the natural log); use .ln or .log10",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.ln

    @property
    def value(self) -> float | None:
        """exp(ln), None beyond float64."""
        return math.exp(self.ln) if self.ln < LOG_MAX else None

    def to_dict(self) -> dict[str, float | None]:
        return {"value": self.value, "log10": self.log10}


@dataclass(frozen=True)
class Bounds:
    spectrum_adaptive: BoundValue
    norm_based: BoundValue
    grid_m: int
    L_phi: float


@dataclass
class BoundDetails:
    """Everything behind the two numbers; per-matrix arrays follow the Spectra row order.

    ``log_alpha`` is the log depth factor alpha(l) per layer (``depth_factor`` in outputs).
    """

    bounds: Bounds
    grid: np.ndarray
    log_alpha: np.ndarray  # (L,)
    log_xi: np.ndarray  # (L,)
    log_gamma: np.ndarray  # per matrix
    log_scale: np.ndarray
    p_star: np.ndarray
    log_contribution: np.ndarray


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

    _memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()`` once per input under ``key`` (work several measures share, such as
        the power-law fits of ``powerlaw``); later calls return the stored result."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]


def finite_or_none(x: float) -> float | None:
    """A float, or None when it is not finite (never NaN/inf in outputs)."""
    return float(x) if math.isfinite(x) else None
