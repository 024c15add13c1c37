"""``spectrum_adaptive``: log10 B_spectrum_adaptive (SPEC 4; Sakai & Imaizumi 2026).

For every canonical matrix A (QK, OV, M_in, M_out) with scale s = gamma * alpha(l) * L
(``_depth``), singular values s_i above the rank threshold (SPEC 3) and the grid
P_m = {0, 1/m, ..., 2}::

    S_p(A)   = sum_{i <= r(A)} s_i^p   (S_0 = r(A))
    c(A, p)  = S_p(A)^(1/(p+2)) * s^(p/(p+2)) * N^((p+1)/(p+2))
    p*(A)    = the first grid point minimizing c(A, .);  c*(A) = c(A, p*(A))
    B        = sum_A c*(A) + sqrt(L)

Rank ceiling (SPEC 10): c*(A) <= c(A, 0) = sqrt(r(A) N), so

    B <= B_ceiling = sum_A sqrt(r(A) N) + sqrt(L),

with equality exactly when every matrix picks p* = 0 (the proxy is then a rank count). The
``ceiling_gap`` = log10 B_ceiling - log10 B >= 0 says how far the trained singular values moved
the proxy below it.

Adaptive headroom (SPEC 4): for a matrix of rank r >= 1 and p > 0, c(A, p) < c(A, 0) exactly
when log s < T_p(A), with

    T_p(A) = [ (p+2)/2 log r - p/2 log N - log S_p(A) ] / p,
    adaptive_headroom(A) = log10 s - max_{p > 0 in grid} T_p(A) / ln 10    (decades).

> 0 means p* = 0 and s must shrink by that many decades before any p > 0 beats the rank count;
<= 0 means some p > 0 already wins. Undefined (NaN) for r = 0.

Protocol v5 (SPEC 10), the adaptive choice itself: the fixed-index forms hold every matrix at
one index q (q need not be a grid point; q = 0 is B_ceiling)::

    B_fixed(q) = sum_A c(A, q) + sqrt(L)        (spectrum_adaptive_fixed_p0.5, _p1, _p2)

and the modal form holds each matrix position (layer, type, head) of a cell of models at the
modal p* of that position over the cell (ties: the smallest p)::

    B_modal = sum_A c(A, modal p*(position of A)) + sqrt(L)    (spectrum_adaptive_modal)

with the switching share = share of (model, position) entries whose p* differs from the
position's modal p*. Every function here is pure and works with natural logs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..linalg.spectra import rank_threshold
from ..validation import check_int
from ._logspace import LN10, S_FLOOR, logsumexp
from .base import Measure, MeasureInput, MeasureValue

#: A model "sits at the rank ceiling" when its ceiling gap (log10) is below this (SPEC 10).
AT_CEILING_GAP = 1e-3

#: SPEC 10 v5's fixed indices q with their form's name, ``spectrum_adaptive_fixed_p<q>``.
FIXED_INDICES: tuple[tuple[str, float], ...] = (
    ("spectrum_adaptive_fixed_p0.5", 0.5),
    ("spectrum_adaptive_fixed_p1", 1.0),
    ("spectrum_adaptive_fixed_p2", 2.0),
)
#: The names of the fixed-index forms, in q order.
FIXED_FORMS: tuple[str, ...] = tuple(name for name, _ in FIXED_INDICES)
#: The modal form's name (SPEC 10 v5): each matrix at its cell's modal p*.
MODAL_FORM = "spectrum_adaptive_modal"


def default_grid_m(num_layers: int, hidden_size: int) -> int:
    """m = ceil(L + ln max(N, 2))."""
    return math.ceil(num_layers + math.log(max(hidden_size, 2)))


def p_grid(m: int) -> np.ndarray:
    """P_m = {0, 1/m, 2/m, ..., 2}."""
    m = check_int(m, "grid_m", min=1)
    return np.arange(2 * m + 1, dtype=np.float64) / m


def kept_singular_values(sv: np.ndarray, k: int) -> np.ndarray:
    """s_i above the rank threshold; the rest count as exact zeros."""
    if sv.size == 0:
        return sv
    return sv[sv > rank_threshold(k, sv[0])]


def log_schatten_power(kept: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """log S_p over ``grid``: log sum_i s_i^p for p > 0 and log r for p = 0 (-inf if r = 0)."""
    if kept.size == 0:
        return np.full(grid.shape, -np.inf)
    return logsumexp(grid[:, None] * np.log(kept)[None, :], axis=1)


def log_contribution_curve(
    kept: np.ndarray, log_scale: float, hidden_size: int, grid: np.ndarray
) -> np.ndarray:
    """log c(A, p) = log S_p/(p+2) + p log s/(p+2) + (p+1) log N/(p+2) over ``grid``.

    s is floored at the smallest positive float before its log (SPEC 6).
    """
    log_s = max(float(log_scale), math.log(S_FLOOR))
    lsp = log_schatten_power(kept, grid)
    return (lsp + grid * log_s + (grid + 1.0) * math.log(hidden_size)) / (grid + 2.0)


def log_threshold_scales(kept: np.ndarray, hidden_size: int, grid: np.ndarray) -> np.ndarray:
    """T_p(A) = [(p+2)/2 log r - p/2 log N - log S_p(A)] / p for every p > 0 of ``grid`` (in
    grid order): the natural log of the scale below which c(A, p) < c(A, 0). Empty when
    ``kept`` is (rank 0: every c is 0, no p beats another)."""
    pos = grid[grid > 0]
    if kept.size == 0 or pos.size == 0:
        return np.zeros(0)
    log_r = math.log(kept.size)
    lsp = log_schatten_power(kept, pos)
    return ((pos + 2.0) / 2.0 * log_r - pos / 2.0 * math.log(hidden_size) - lsp) / pos


def adaptive_headroom(
    kept: np.ndarray, log_scale: float, hidden_size: int, grid: np.ndarray
) -> float:
    """log10 s - max_{p > 0 in grid} T_p(A) / ln 10, in decades (SPEC 4).

    s is floored as in ``log_contribution_curve``, so the sign agrees with p*: > 0 iff every
    p > 0 has c(A, p) > c(A, 0) (p* = 0; at exactly 0 the tie also goes to p = 0). NaN for
    rank 0 or a spectrum beyond float64; +inf for a grid without p > 0.
    """
    if kept.size == 0 or np.any(np.isnan(kept)) or math.isnan(log_scale):
        return math.nan
    t = log_threshold_scales(kept, hidden_size, grid)
    if t.size == 0:
        return math.inf
    log_s = max(float(log_scale), math.log(S_FLOOR))
    return float((log_s - np.max(t)) / LN10)


def adaptive_headrooms(
    singular_values: list[np.ndarray],
    k: np.ndarray,
    log_scale: np.ndarray,
    hidden_size: int,
    grid: np.ndarray,
) -> np.ndarray:
    """``adaptive_headroom`` of every matrix (arguments as for ``optimize_p``)."""
    return np.array(
        [
            adaptive_headroom(
                kept_singular_values(sv, int(k[i])), float(log_scale[i]), hidden_size, grid
            )
            for i, sv in enumerate(singular_values)
        ],
        dtype=np.float64,
    ).reshape(len(singular_values))


def headroom_min(headroom: np.ndarray) -> float:
    """The smallest defined headroom (the matrix closest to using its spectrum); NaN when no
    matrix has one."""
    h = np.asarray(headroom, dtype=np.float64)
    h = h[~np.isnan(h)]
    return float(np.min(h)) if h.size else math.nan


def optimize_p(
    singular_values: list[np.ndarray],
    k: np.ndarray,
    log_scale: np.ndarray,
    hidden_size: int,
    grid: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(p*, log c*) per matrix: the first minimizer of log c(A, .) on ``grid`` (ties: smallest
    p). ``singular_values[i]`` descending, ``k[i]`` = min(rows, cols) of the full matrix."""
    n = len(singular_values)
    p_star = np.zeros(n)
    log_c = np.full(n, -np.inf)
    for i in range(n):
        kept = kept_singular_values(singular_values[i], int(k[i]))
        curve = log_contribution_curve(kept, float(log_scale[i]), hidden_size, grid)
        if np.any(np.isnan(curve)) or np.any(np.isnan(singular_values[i])):
            p_star[i] = log_c[i] = np.nan  # a spectrum beyond float64: undefined, never guessed
            continue
        j = int(np.argmin(curve))  # first minimizer: ties go to the smallest p
        p_star[i], log_c[i] = grid[j], curve[j]
    return p_star, log_c


def log_bound(log_contribution: np.ndarray, num_layers: int) -> float:
    """ln B = ln(sum_A c*(A) + sqrt(L))."""
    return float(logsumexp(np.concatenate([log_contribution, [0.5 * math.log(num_layers)]])))


def log_rank_ceiling(ranks: np.ndarray, hidden_size: int, num_layers: int) -> float:
    """ln B_ceiling = ln(sum_A sqrt(r(A) N) + sqrt(L)) (matrices of rank 0 add nothing).

    Each term is c(A, 0) computed exactly as ``log_contribution_curve`` does at p = 0, so a model
    whose matrices all pick p* = 0 has a gap of exactly 0.
    """
    r = np.asarray(ranks, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_c0 = (np.log(r) + math.log(hidden_size)) / 2.0
    return log_bound(log_c0, num_layers)


def log10_rank_ceiling(ranks: np.ndarray, hidden_size: int, num_layers: int) -> float:
    """log10 B_ceiling = log10(sum_A sqrt(r(A) N) + sqrt(L))."""
    return log_rank_ceiling(ranks, hidden_size, num_layers) / LN10


def ceiling_gap(
    ranks: np.ndarray, log_contribution: np.ndarray, hidden_size: int, num_layers: int
) -> float:
    """log10 B_ceiling - log10 B_spectrum_adaptive (>= 0; 0 = every matrix at p* = 0).

    Rounding can only make the difference a few ulps negative; it is clamped at 0.
    """
    gap = (
        log_rank_ceiling(ranks, hidden_size, num_layers) - log_bound(log_contribution, num_layers)
    ) / LN10
    return max(0.0, float(gap)) if math.isfinite(gap) else math.nan


def share_p0(p_star: np.ndarray) -> float:
    """Share of the matrices (QK, OV, M_in, M_out) whose p* is 0 (0.0 for no matrix; NaN when
    some p* is undefined)."""
    p = np.asarray(p_star)
    if np.any(np.isnan(p)):
        return math.nan
    return float(np.mean(p == 0)) if p.size else 0.0


def log_contributions_at(
    singular_values: list[np.ndarray],
    k: np.ndarray,
    log_scale: np.ndarray,
    hidden_size: int,
    p: float | np.ndarray,
) -> np.ndarray:
    """log c(A, p_A) per matrix, each at its own index ``p[i]`` (or all at one ``p``), by the
    formula of ``log_contribution_curve`` (S_0 = r; rank 0 gives -inf; NaN for a spectrum beyond
    float64). ``p`` need not be a grid point."""
    n = len(singular_values)
    q = np.broadcast_to(np.asarray(p, dtype=np.float64), (n,))
    out = np.full(n, -np.inf)
    for i in range(n):
        sv = singular_values[i]
        if np.any(np.isnan(sv)) or math.isnan(q[i]):
            out[i] = np.nan
            continue
        kept = kept_singular_values(sv, int(k[i]))
        out[i] = log_contribution_curve(kept, float(log_scale[i]), hidden_size, q[i : i + 1])[0]
    return out


def log_fixed_index_bound(
    singular_values: list[np.ndarray],
    k: np.ndarray,
    log_scale: np.ndarray,
    hidden_size: int,
    num_layers: int,
    q: float,
) -> float:
    """ln B_fixed(q) = ln(sum_A c(A, q) + sqrt(L)) (SPEC 10 v5; q = 0 gives ln B_ceiling);
    NaN when some spectrum is beyond float64."""
    if not math.isfinite(q) or q < 0:
        raise ValueError(f"the fixed index q must be finite and >= 0, got {q!r}")
    log_c = log_contributions_at(singular_values, k, log_scale, hidden_size, q)
    if np.any(np.isnan(log_c)):
        return math.nan
    return log_bound(log_c, num_layers)


def log10_fixed_index_bound(
    spectra: Any, log_scale: np.ndarray, hidden_size: int, num_layers: int, q: float
) -> float:
    """log10 B_fixed(q) of a model's ``Spectra`` (``log_fixed_index_bound`` over its rows)."""
    svs = [spectra.singular_values(i) for i in range(len(spectra))]
    k = np.minimum(spectra.rows, spectra.cols)
    return log_fixed_index_bound(svs, k, log_scale, hidden_size, num_layers, float(q)) / LN10


def modal_p_star(p_star: np.ndarray) -> np.ndarray:
    """The modal p* of each matrix position: ``p_star`` is (models x positions); per column the
    most frequent value over the models with a defined (non-NaN) p*, ties to the smallest p;
    NaN for a column with no defined value."""
    p = np.atleast_2d(np.asarray(p_star, dtype=np.float64))
    out = np.full(p.shape[1], np.nan)
    for j in range(p.shape[1]):
        col = p[:, j][~np.isnan(p[:, j])]
        if col.size:
            values, counts = np.unique(col, return_counts=True)  # values ascending
            out[j] = values[int(np.argmax(counts))]  # first maximum: the smallest p
    return out


def switching_counts(p_star: np.ndarray, modal: np.ndarray) -> tuple[int, int]:
    """(entries whose p* differs from the position's modal p*, defined entries) over a
    (models x positions) ``p_star``; NaN entries count in neither."""
    p = np.atleast_2d(np.asarray(p_star, dtype=np.float64))
    m = np.broadcast_to(np.asarray(modal, dtype=np.float64), p.shape)
    ok = ~np.isnan(p) & ~np.isnan(m)
    return int(np.sum(p[ok] != m[ok])), int(np.sum(ok))


def log_bound_at_grid_points(
    curves: np.ndarray, grid: np.ndarray, p: np.ndarray, num_layers: int
) -> float:
    """ln(sum_A c(A, p_A) + sqrt(L)) with every p_A a point of ``grid``, read off row A of
    ``curves`` (log c(A, .) over ``grid``, as ``log_contribution_curve`` gives it): the very
    numbers ``optimize_p`` minimized, so p_A = p*(A) for every A gives ln B exactly. NaN when
    some p_A is NaN or not a grid point, or a curve is undefined."""
    c = np.atleast_2d(np.asarray(curves, dtype=np.float64))
    g = np.asarray(grid, dtype=np.float64)
    q = np.asarray(p, dtype=np.float64).reshape(-1)
    if q.size != c.shape[0] or c.shape[1] != g.size:
        raise ValueError(f"{q.size} indices for {c.shape[0]} curves over a grid of {g.size}")
    out = np.empty(q.size)
    for i, x in enumerate(q):
        j = np.flatnonzero(g == x)
        if j.size == 0:
            return math.nan
        out[i] = c[i, int(j[0])]
    if np.any(np.isnan(out)):
        return math.nan
    return log_bound(out, num_layers)


#: The note of a bound that is undefined because a spectrum does not fit a float64.
BEYOND_FLOAT64 = (
    "undefined: the singular values of some QK/OV products exceed float64 (weights of order "
    "1e154 or more)"
)


def compute(x: MeasureInput) -> MeasureValue:
    v = x.details.bounds.spectrum_adaptive.log10
    return MeasureValue(v) if math.isfinite(v) else MeasureValue(None, BEYOND_FLOAT64)


MEASURE = Measure(
    "spectrum_adaptive",
    "log10 of the spectrum-adaptive proxy (Sakai & Imaizumi 2026), p chosen per matrix",
    compute,
    log10=True,
    bound_form=True,
    needs_weights=False,
)
