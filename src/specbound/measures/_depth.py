"""The depth factor alpha(l) and the within-block factor gamma (SPEC 4), in log space.

For l = 0..L-1 (empty product = 1, so alpha(L-1) = 1)::

    alpha(l) = prod_{k=l+1}^{L-1} [ L_phi C2(M_in(k)) C2(M_out(k))
                                    * sum_h C2(OV(k,h)) (1 + 4 C2(QK(k,h))) ]

gamma per matrix of block l: QK(l,h): 2 C2(OV(l,h)) C2(M_out(l)) C2(M_in(l)); OV(l,h):
C2(M_out(l)) C2(M_in(l)); M_in(l): C2(M_out(l)); M_out(l): 1. The scale of a matrix is
s = gamma alpha(l) L. Shared by both bounds (the norm-based xi uses the same C2 products).
Outputs call the depth factor ``depth_factor``; SPEC writes it alpha(l).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..linalg.spectra import M_IN, M_OUT, OV, QK, Spectra
from .logspace import logsumexp, safe_log


def log_alpha(
    log_c2_in: np.ndarray,
    log_c2_out: np.ndarray,
    c2_qk: np.ndarray,
    c2_ov: np.ndarray,
    l_phi: float,
) -> np.ndarray:
    """log alpha(l) for l = 0..L-1; c2_qk, c2_ov have shape (L, H). alpha(L-1) = 1."""
    with np.errstate(divide="ignore", over="ignore"):
        head_sum = safe_log(np.sum(c2_ov * (1.0 + 4.0 * c2_qk), axis=1))
    bad = np.isposinf(head_sum)
    if np.any(bad):  # the products overflow float64: the same sum in logs
        with np.errstate(divide="ignore"):
            terms = safe_log(c2_ov[bad]) + np.logaddexp(0.0, math.log(4.0) + safe_log(c2_qk[bad]))
        head_sum[bad] = logsumexp(terms, axis=1)
    with np.errstate(divide="ignore"):
        factor = math.log(l_phi) + log_c2_in + log_c2_out + head_sum
    tail = np.concatenate([np.cumsum(factor[::-1])[::-1][1:], [0.0]])
    return tail


@dataclass(frozen=True)
class DepthTerms:
    """The C2 products both bounds read, per layer and per matrix (natural logs).

    ``log_c2_in``/``log_c2_out``: log C2(M_in(l)), log C2(M_out(l)), shape (L,);
    ``log_c2_ov_of``: per matrix, log C2(OV(l, h)) of its layer and head (head 0 for M_in/M_out,
    unused there); ``log_alpha`` (L,); ``log_gamma`` and ``log_scale`` per matrix.
    """

    log_c2_in: np.ndarray
    log_c2_out: np.ndarray
    log_c2_ov_of: np.ndarray
    log_alpha: np.ndarray
    log_gamma: np.ndarray
    log_scale: np.ndarray


def depth_terms(spectra: Spectra, num_layers: int, l_phi: float) -> DepthTerms:
    """alpha, gamma and s = gamma alpha(l) L for every matrix of ``spectra`` (SPEC 4)."""
    L = num_layers
    c2 = spectra.spectral_norm
    lay, typ, head = spectra.layer, spectra.matrix_type, spectra.head
    H = int(head[typ == QK].max()) + 1 if np.any(typ == QK) else 0

    def per_layer(t: int) -> np.ndarray:
        out = np.zeros(L)
        out[lay[typ == t]] = c2[typ == t]
        return out

    def per_head(t: int) -> np.ndarray:
        out = np.zeros((L, H))
        sel = typ == t
        out[lay[sel], head[sel]] = c2[sel]
        return out

    lc_in, lc_out = safe_log(per_layer(M_IN)), safe_log(per_layer(M_OUT))
    c2_qk, c2_ov = per_head(QK), per_head(OV)
    la = log_alpha(lc_in, lc_out, c2_qk, c2_ov, l_phi)

    ffn = lc_out[lay] + lc_in[lay]
    log_c2_ov_of = safe_log(c2_ov[lay, np.maximum(head, 0)])
    with np.errstate(invalid="ignore"):
        lg = np.select(
            [typ == QK, typ == OV, typ == M_IN, typ == M_OUT],
            [math.log(2.0) + log_c2_ov_of + ffn, ffn, lc_out[lay], np.zeros(len(spectra))],
        )
    log_s = lg + la[lay] + math.log(L)
    return DepthTerms(lc_in, lc_out, log_c2_ov_of, la, lg, log_s)
