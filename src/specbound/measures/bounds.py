"""Both proxies of SPEC 4-5 assembled from a model's spectra: ``compute_bounds``.

The formulas live in the measure modules: ``spectrum_adaptive`` (the c(A, p) curve, p*, the
rank ceiling), ``norm_based`` (xi and its assembly) and ``_depth`` (alpha(l), gamma, s). This
module checks the options, calls them in order and keeps their per-matrix results together::

    B_sa = sum_A min_p c(A, p) + sqrt(L)          B_nb = (1 + sum_l alpha(l)^(2/3) xi(l))^(3/2)

Logs are natural in the arrays; ``BoundValue`` gives both ``ln`` and ``log10``.
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecboundError
from ..linalg.spectra import Spectra
from ..validation import Interval, check_int, validate_params
from . import norm_based, spectrum_adaptive
from ._depth import depth_terms, log_alpha
from .base import BoundDetails, Bounds, BoundValue
from .logspace import LN10, S_FLOOR, logsumexp
from .spectrum_adaptive import (
    default_grid_m,
    kept_singular_values,
    log_contribution_curve,
    log_schatten_power,
    p_grid,
)

__all__ = [
    "GRID_M",
    "LN10",
    "L_PHI",
    "MAX_GRID_M",
    "S_FLOOR",
    "BoundDetails",
    "BoundValue",
    "Bounds",
    "compute_bounds",
    "default_grid_m",
    "kept_singular_values",
    "log_alpha",
    "log_contribution_curve",
    "log_schatten_power",
    "logsumexp",
    "p_grid",
]

#: Largest accepted grid_m: the p search costs O(m) per matrix (memory and time); past this it
#: takes minutes without moving any bound noticeably (the default is ceil(L + ln N)).
MAX_GRID_M = 10_000


#: ``grid_m``'s constraints (:mod:`specbound.validation`): None (the default) or an int in
#: [1, MAX_GRID_M]; whole floats (3.0) are accepted, 2.5, bools, strings, NaN are not (never
#: truncated).
GRID_M = (None, Interval(int, 1, MAX_GRID_M, whole_floats=True))
#: ``l_phi``'s constraint: a finite real > 0 (bools and strings refused).
L_PHI = (Interval(float, 0.0, None, closed="right"),)


@validate_params({"l_phi": L_PHI, "grid_m": GRID_M})
def compute_bounds(
    spectra: Spectra,
    num_layers: int,
    hidden_size: int,
    l_phi: float,
    grid_m: int | None = None,
) -> BoundDetails:
    """Both proxies and their per-matrix details from a model's spectra.

    Arguments are validated (SpecboundError): ``num_layers`` must match the layers of
    ``spectra`` (every layer 0..L-1 present, none beyond), ``hidden_size`` >= 1, ``l_phi``
    finite and > 0, ``grid_m`` None or an integer in [1, MAX_GRID_M].
    """
    L = check_int(num_layers, "num_layers", min=1)
    N = check_int(hidden_size, "hidden_size", min=1)
    present = np.unique(spectra.layer)
    if present.size != L or (L and (present[0] != 0 or present[-1] != L - 1)):
        raise SpecboundError(
            f"num_layers = {L} does not match the spectra, which cover layers "
            f"{present.tolist() if present.size <= 8 else f'{present[0]}..{present[-1]}'}"
        )
    m = default_grid_m(L, N) if grid_m is None else grid_m
    grid = p_grid(m)

    depth = depth_terms(spectra, L, l_phi)
    k = np.minimum(spectra.rows, spectra.cols)
    svs = [spectra.singular_values(i) for i in range(len(spectra))]
    p_star, log_c = spectrum_adaptive.optimize_p(svs, k, depth.log_scale, N, grid)
    log_sa = spectrum_adaptive.log_bound(log_c, L)

    log_xi = norm_based.log_xi(spectra, depth, L)
    log_nb = norm_based.log_bound(depth.log_alpha, log_xi)

    bounds = Bounds(BoundValue(log_sa), BoundValue(log_nb), m, float(l_phi))
    return BoundDetails(
        bounds, grid, depth.log_alpha, log_xi, depth.log_gamma, depth.log_scale, p_star, log_c
    )
