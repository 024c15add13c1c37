"""``norm_based``: log10 B_norm_based (SPEC 5; Edelman et al. 2022, BERT-adapted).

For block l (C2(M_in), C2(M_out) of block l; ||.||_{2,1} the sum of column norms)::

    xi(l) = sum_h [ (C2(M_out) C2(M_in) C2(OV(l,h)) ||QK(l,h)||_{2,1})^(2/3)
                  + (C2(M_out) C2(M_in) ||OV(l,h)||_{2,1})^(2/3) ]
            + (C2(M_out) ||M_in(l)||_{2,1})^(2/3) + ||M_out(l)||_{2,1}^(2/3)

    B = (1 + sum_l alpha(l)^(2/3) xi(l))^(3/2)

alpha(l) is the depth factor of ``_depth``. Pure functions in natural logs.
"""

from __future__ import annotations

import math

import numpy as np

from ..linalg.spectra import M_IN, M_OUT, OV, QK, Spectra
from ._depth import DepthTerms
from .base import Measure, MeasureInput, MeasureValue
from .logspace import logsumexp, safe_log
from .spectrum_adaptive import BEYOND_FLOAT64


def log_xi(spectra: Spectra, depth: DepthTerms, num_layers: int) -> np.ndarray:
    """log xi(l) for l = 0..L-1 from the (2,1) norms and the C2 products of ``depth``."""
    third = 2.0 / 3.0
    lay, typ = spectra.layer, spectra.matrix_type
    lc_in, lc_out = depth.log_c2_in[lay], depth.log_c2_out[lay]
    l21 = safe_log(spectra.norm_21)
    terms = np.select(
        [typ == QK, typ == OV, typ == M_IN, typ == M_OUT],
        [
            third * (lc_out + lc_in + depth.log_c2_ov_of + l21),
            third * (lc_out + lc_in + l21),
            third * (lc_out + l21),
            third * l21,
        ],
    )
    return np.array([float(logsumexp(terms[lay == l])) for l in range(num_layers)])


def log_bound(log_alpha: np.ndarray, log_xi_: np.ndarray) -> float:
    """ln B = 3/2 ln(1 + sum_l alpha(l)^(2/3) xi(l))."""
    third = 2.0 / 3.0
    return 1.5 * float(logsumexp(np.concatenate([[0.0], third * log_alpha + log_xi_])))


def compute(x: MeasureInput) -> MeasureValue:
    v = x.details.bounds.norm_based.log10
    return MeasureValue(v) if math.isfinite(v) else MeasureValue(None, BEYOND_FLOAT64)


MEASURE = Measure(
    "norm_based",
    "log10 of the norm-based proxy (Edelman et al. 2022, BERT-adapted)",
    compute,
    log10=True,
    bound_form=True,
    needs_weights=False,
)
