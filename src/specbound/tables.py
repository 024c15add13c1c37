"""The tables of an ``Analysis``: per matrix, per layer, per raw weight, and ``details``.

The depth factor alpha(l) of SPEC 4 is the column ``depth_factor`` (``log10_depth_factor``);
``htsr_alpha`` is WeightWatcher's power-law exponent. Columns are built as numpy arrays (the CLI
writes CSVs without more work); the DataFrames wrap them. SPEC 6: a float cell that is inf/NaN
(a value beyond float64, the log of 0) is missing (written empty); its ``log10_`` column always
holds the number.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .core import MATRIX_TYPES
from .linalg.weights import WeightSpectra
from .measures.logspace import LN10, logsumexp
from .measures.powerlaw import fit_quality, weight_fits, ww_norm_metrics

if TYPE_CHECKING:
    import pandas as pd

#: An ``analysis.Analysis`` (not imported: analysis imports this module).
Analysis = Any

MATRIX_COLUMNS = [
    "layer",
    "head",
    "matrix_type",
    "rows",
    "cols",
    "spectral_norm",
    "frobenius_norm",
    "nuclear_norm",
    "norm_21",
    "norm_11",
    "rank",
    "stable_rank",
    "depth_factor",
    "log10_depth_factor",
    "gamma",
    "log10_gamma",
    "scale",
    "p_star",
    "contribution",
    "log10_scale",
    "log10_contribution",
    "adaptive_headroom",
]

WEIGHT_COLUMNS = [
    "layer",
    "role",
    "tensor",
    "rows",
    "cols",
    "spectral_norm",
    "frobenius_norm",
    "stable_rank",
    "htsr_alpha",
    "htsr_alpha_weighted",
    "htsr_xmin",
    "htsr_D",
    "htsr_num_tail",
    "htsr_fit",
    "htsr_fit_reason",
    "lambda_max",
    "log_norm",
    "log_spectral_norm",
    "log_alpha_norm",
]

#: ``details()``: the raw weights' names by role (SPEC 9's W_Q, W_K, W_V, W_O, W_in, W_out).
WEIGHT_MATRIX_NAMES = {
    "query": "W_Q",
    "key": "W_K",
    "value": "W_V",
    "output": "W_O",
    "ffn_in": "W_in",
    "ffn_out": "W_out",
}

#: ``details()`` columns: which matrix, then every per-matrix column of both tables.
DETAIL_COLUMNS = [
    "kind",
    "matrix",
    "layer",
    "head",
    "role",
    "tensor",
    *[c for c in MATRIX_COLUMNS if c not in ("layer", "head", "matrix_type")],
    *[c for c in WEIGHT_COLUMNS if c not in MATRIX_COLUMNS and c not in ("role", "tensor")],
]


def pd_int(x: np.ndarray) -> np.ndarray:
    """Integer counts with missing cells: an object array of int or None (CSV: empty)."""
    return np.array([None if not np.isfinite(v) else int(v) for v in x], dtype=object)


def _exp(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.exp(x)


def missing_if_not_finite(columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Float cells that are inf/NaN (a value beyond float64, the log of 0) become NaN = missing.

    SPEC 6: no inf in outputs. A value column that overflows is missing (written empty); its
    ``log10_`` column always holds the number.
    """
    out = {}
    for k, v in columns.items():
        v = np.asarray(v)
        if v.dtype.kind == "f":
            v = np.where(np.isfinite(v), v, np.nan)
        out[k] = v
    return out


def weight_columns(a: Analysis) -> dict[str, np.ndarray]:
    """The columns of ``Analysis.weights`` (``WEIGHT_COLUMNS``) as numpy arrays."""
    w = a.weight_spectra or WeightSpectra.empty()
    fits = weight_fits(a.measure_input())

    def col(attr: str) -> np.ndarray:
        return np.array(
            [np.nan if getattr(f, attr) is None else float(getattr(f, attr)) for f in fits],
            dtype=np.float64,
        )

    alpha, lmax = col("alpha"), col("lambda_max")
    with np.errstate(divide="ignore", invalid="ignore"):
        log10_lmax = np.log10(lmax)
    for i, f in enumerate(fits):  # lambda_max beyond float64: its log10 from the fit
        if not np.isfinite(log10_lmax[i]) and f.log10_lmax is not None:
            log10_lmax[i] = f.log10_lmax
    weighted = alpha * log10_lmax
    quality = [fit_quality(f) for f in fits]
    ww = np.array(
        [
            ww_norm_metrics(w.singular_values(i), int(min(w.rows[i], w.cols[i])), f.alpha)
            for i, f in enumerate(fits)
        ],
        dtype=np.float64,
    ).reshape(len(fits), 4)
    return missing_if_not_finite(
        {
            "layer": w.layer,
            "role": w.role_names,
            "tensor": np.asarray(w.tensor, dtype=object),
            "rows": w.rows,
            "cols": w.cols,
            "spectral_norm": w.spectral_norm,
            "frobenius_norm": w.frobenius_norm,
            "stable_rank": w.stable_rank,
            "htsr_alpha": alpha,
            "htsr_alpha_weighted": weighted,
            "htsr_xmin": col("xmin"),
            "htsr_D": col("D"),
            "htsr_num_tail": pd_int(col("num_tail")),
            "htsr_fit": np.array([q[0] for q in quality], dtype=object),
            "htsr_fit_reason": np.array([q[1] for q in quality], dtype=object),
            "lambda_max": ww[:, 0],
            "log_norm": ww[:, 1],
            "log_spectral_norm": ww[:, 2],
            "log_alpha_norm": ww[:, 3],
        }
    )


def matrix_columns(a: Analysis) -> dict[str, np.ndarray]:
    """The columns of ``Analysis.matrices`` (``MATRIX_COLUMNS``) as numpy arrays."""
    s, d = a.spectra, a.details
    la = d.log_alpha[s.layer]
    rank: np.ndarray = s.rank
    undefined = np.array([np.any(np.isnan(s.singular_values(i))) for i in range(len(s))])
    if np.any(undefined):  # a spectrum beyond float64: its rank is unknown, not 0
        rank = pd_int(np.where(undefined, np.nan, rank))
    return missing_if_not_finite(
        {
            "layer": s.layer,
            "head": s.head,
            "matrix_type": np.array(MATRIX_TYPES, dtype=object)[s.matrix_type],
            "rows": s.rows,
            "cols": s.cols,
            "spectral_norm": s.spectral_norm,
            "frobenius_norm": s.frobenius_norm,
            "nuclear_norm": s.nuclear_norm,
            "norm_21": s.norm_21,
            "norm_11": s.norm_11,
            "rank": rank,
            "stable_rank": s.stable_rank,
            "depth_factor": _exp(la),
            "log10_depth_factor": la / LN10,
            "gamma": _exp(d.log_gamma),
            "log10_gamma": d.log_gamma / LN10,
            "scale": _exp(d.log_scale),
            "p_star": d.p_star,
            "contribution": _exp(d.log_contribution),
            "log10_scale": d.log_scale / LN10,
            "log10_contribution": d.log_contribution / LN10,
            "adaptive_headroom": a.adaptive_headroom,
        }
    )


def layer_columns(a: Analysis) -> dict[str, np.ndarray]:
    """The columns of ``Analysis.layers`` as numpy arrays: the depth factor, log10 xi, the
    contributions by matrix type, the p* counts of each layer and, per matrix type t,
    ``adaptive_headroom_min_<t>`` (the smallest headroom of the layer's t matrices)."""
    s, d = a.spectra, a.details
    L = a.spec.num_layers
    c = _exp(d.log_contribution)
    out: dict[str, np.ndarray] = {
        "layer": np.arange(L),
        "depth_factor": _exp(d.log_alpha),
        "log10_depth_factor": d.log_alpha / LN10,
        "log10_xi": d.log_xi / LN10,
    }
    for t, name in enumerate(MATRIX_TYPES):
        out[f"contribution_{name}"] = np.bincount(
            s.layer[s.matrix_type == t], weights=c[s.matrix_type == t], minlength=L
        )
    out["contribution_total"] = np.bincount(s.layer, weights=c, minlength=L)
    lc = d.log_contribution
    out["log10_contribution_total"] = (
        np.array(
            [
                float(logsumexp(lc[s.layer == l])) if np.any(s.layer == l) else -np.inf
                for l in range(L)
            ]
        )
        / LN10
    )
    out["n_p0"] = np.bincount(s.layer[d.p_star == 0], minlength=L)
    out["n_p2"] = np.bincount(s.layer[d.p_star == 2], minlength=L)
    out["mean_p_star"] = np.bincount(s.layer, weights=d.p_star, minlength=L) / np.maximum(
        np.bincount(s.layer, minlength=L), 1
    )
    out.update(headroom_by_layer_type(s.layer, s.matrix_type, a.adaptive_headroom, L))
    return missing_if_not_finite(out)


def headroom_by_layer_type(
    layer: np.ndarray, matrix_type: np.ndarray, headroom: np.ndarray, num_layers: int
) -> dict[str, np.ndarray]:
    """``adaptive_headroom_min_<t>``: per layer, the smallest defined adaptive headroom of its
    matrices of type t (``matrix_type`` as indices into MATRIX_TYPES); NaN where none."""
    h = np.asarray(headroom, dtype=np.float64)
    out = {}
    for t, name in enumerate(MATRIX_TYPES):
        col = np.full(num_layers, np.nan)
        for l in range(num_layers):
            v = h[(layer == l) & (matrix_type == t) & ~np.isnan(h)]
            if v.size:
                col[l] = float(np.min(v))
        out[f"adaptive_headroom_min_{name}"] = col
    return out


def _factor_text(decades: float) -> str:
    """10^decades as a factor: ``7.4x`` below 1000, else ``10^26.7x``."""
    return f"{10.0**decades:.2g}x" if decades < 3 else f"10^{decades:.1f}x"


def headroom_sentence(a: Analysis) -> str | None:
    """The adaptive headroom in plain words (SPEC 4), from the matrices with the smallest and
    the largest headroom; None when no matrix has one."""
    h = np.asarray(a.adaptive_headroom, dtype=np.float64)
    if not np.any(np.isfinite(h)):
        return None
    s = a.spectra
    h = np.where(np.isfinite(h), h, np.nan)
    lo, hi = int(np.nanargmin(h)), int(np.nanargmax(h))

    def name(i: int) -> str:
        head = f" (head {int(s.head[i])})" if int(s.head[i]) >= 0 else ""
        return f"layer {int(s.layer[i])}'s {MATRIX_TYPES[int(s.matrix_type[i])]}{head}"

    span = f"adaptive headroom {h[lo]:.3g} to {h[hi]:.3g} decades"
    if h[lo] > 0:
        return (
            f"The bound would use a trained spectrum only if the scale of {name(lo)} shrank "
            f"{_factor_text(h[lo])}; for {name(hi)}, {_factor_text(h[hi])} ({span})."
        )
    n_used = int(np.sum(h <= 0))
    text = (
        f"{n_used} of {int(np.sum(~np.isnan(h)))} matrices already use their spectrum (p* > 0); "
        f"{name(lo)} would fall back to the rank count only if its scale grew "
        f"{_factor_text(-h[lo])}"
    )
    if h[hi] > 0:
        text += (
            f"; {name(hi)} would use its spectrum only if its scale shrank {_factor_text(h[hi])}"
        )
    return text + f" ({span})."


def details_frame(a: Analysis) -> pd.DataFrame:
    """One row per matrix (``DETAIL_COLUMNS``): first the canonical matrices (``kind`` =
    "canonical", ``matrix`` = QK, OV, M_in, M_out, with every column of ``matrices``), then the
    raw weights (``kind`` = "weight", ``matrix`` = W_Q, W_K, W_V, W_O, W_in, W_out, with every
    column of ``weights``; present when the raw-weight spectra were computed). A column that a
    kind does not have is missing (NaN/None) in its rows."""
    import pandas as pd

    m = pd.DataFrame(matrix_columns(a), columns=MATRIX_COLUMNS)
    m.insert(0, "kind", "canonical")
    m.insert(1, "matrix", m.pop("matrix_type"))
    parts = [m]
    if a.weight_spectra is not None and len(a.weight_spectra):
        w = pd.DataFrame(weight_columns(a), columns=WEIGHT_COLUMNS)
        w.insert(0, "kind", "weight")
        w.insert(1, "matrix", w["role"].map(WEIGHT_MATRIX_NAMES))
        w.insert(3, "head", -1)
        parts.append(w)
    out = pd.concat(parts, ignore_index=True, sort=False).reindex(columns=DETAIL_COLUMNS)
    for c in ("layer", "head", "rows", "cols", "rank", "htsr_num_tail"):
        out[c] = out[c].astype("Int64")  # counts stay integers; missing cells are <NA>
    return out


def type_shares(a: Analysis) -> dict[str, float] | None:
    """Share of each matrix type (QK, OV, M_in, M_out) in the summed contributions,
    sum_{A of type t} c*(A) / sum_A c*(A), computed as exp(log c* - max log c*) so that
    contributions beyond float64 keep their ratios; None when there is no matrix or every
    contribution is beyond float64 (the shares are undefined)."""
    s, d = a.spectra, a.details
    lc = np.asarray(d.log_contribution, dtype=float)
    if not lc.size or not np.isfinite(np.max(lc)):
        return None
    c = np.exp(lc - np.max(lc))
    total = float(np.nansum(c)) or 1.0
    return {
        name: float(np.nansum(c[s.matrix_type == t])) / total for t, name in enumerate(MATRIX_TYPES)
    }


def p_star_counts(a: Analysis) -> list[tuple[float, int]]:
    """(p*, number of matrices that chose it) for every p* used, ascending."""
    used, counts = np.unique(a.details.p_star, return_counts=True)
    return [(float(p), int(n)) for p, n in zip(used, counts, strict=True)]


#: Two contributions tie when their natural logs differ by at most this (relative 1e-9 in c*):
#: matrices of one shape at p* = 0 all contribute sqrt(rank x N) up to rounding.
TIE_LOG = 1e-9


def largest_terms(a: Analysis) -> tuple[int, np.ndarray] | None:
    """The matrix with the largest contribution c* (its index) and every matrix that ties with
    it (within :data:`TIE_LOG` in log, itself included; more than one: no single matrix has
    the largest term, and which one argmax names is a tie-break, not a finding); None without
    matrices."""
    logc = np.asarray(a.details.log_contribution, dtype=float)
    if not logc.size:
        return None
    top = int(np.argmax(logc))
    return top, np.nonzero(logc >= logc[top] - TIE_LOG)[0]
