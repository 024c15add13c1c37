"""The two proxies of SPEC.md sections 4-5, in log space. Pure functions: spectra in, numbers out.

Spectrum-adaptive (Sakai & Imaizumi 2026)::

    alpha(l) = prod_{k>l} L_phi C2(M_in(k)) C2(M_out(k)) sum_h C2(OV(k,h)) (1 + 4 C2(QK(k,h)))
    s        = gamma * alpha(l) * L
    c(A, p)  = S_p(A)^(1/(p+2)) s^(p/(p+2)) N^((p+1)/(p+2)),  p in {0, 1/m, ..., 2}
    B_sa     = sum_A min_p c(A, p) + sqrt(L)

Norm-based (Edelman et al. 2022, BERT-adapted)::

    B_nb = (1 + sum_l alpha(l)^(2/3) xi(l))^(3/2)

Logs are natural; ``log10`` fields are for people.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import SpecboundError
from .spectra import M_IN, M_OUT, OV, QK, Spectra, rank_threshold

LN10 = math.log(10.0)
#: s is floored here before taking logs (SPEC.md section 6): the smallest positive normal float.
S_FLOOR = float(np.finfo(np.float64).tiny)
_LOG_MAX = math.log(np.finfo(np.float64).max)


def _log(x: np.ndarray | float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(x, dtype=np.float64))


def logsumexp(a: np.ndarray, axis: int | None = None) -> np.ndarray:
    """log(sum(exp(a))) with -inf entries allowed (all -inf gives -inf)."""
    a = np.asarray(a, dtype=np.float64)
    m = np.max(a, axis=axis, keepdims=True) if a.size else np.array(-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return np.squeeze(out, axis=axis) if axis is not None else out.reshape(())


@dataclass(frozen=True)
class BoundValue:
    """A bound kept as its natural log; ``value`` is None when it does not fit a float64."""

    log: float

    @property
    def log10(self) -> float:
        return self.log / LN10

    @property
    def value(self) -> float | None:
        return math.exp(self.log) if self.log < _LOG_MAX else None

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
    """Everything behind the two numbers; per-matrix arrays follow the Spectra row order."""

    bounds: Bounds
    grid: np.ndarray
    log_alpha: np.ndarray  # (L,)
    log_xi: np.ndarray  # (L,)
    log_gamma: np.ndarray  # per matrix
    log_scale: np.ndarray
    p_star: np.ndarray
    log_contribution: np.ndarray


def default_grid_m(num_layers: int, hidden_size: int) -> int:
    """m = ceil(L + ln max(N, 2))."""
    return int(math.ceil(num_layers + math.log(max(hidden_size, 2))))


#: Largest accepted grid_m: the p search costs O(m) per matrix (memory and time); past this it
#: takes minutes without moving any bound noticeably (the default is ceil(L + ln N)).
MAX_GRID_M = 10_000


def check_grid_m(grid_m: object) -> int | None:
    """``grid_m`` as an int in [1, MAX_GRID_M] (None stays None); SpecboundError otherwise.

    Integral floats (3.0) are accepted; 2.5, bools, strings, NaN are not (never truncated).
    """
    if grid_m is None:
        return None
    ok = isinstance(grid_m, (int, np.integer)) and not isinstance(grid_m, (bool, np.bool_))
    if not ok and isinstance(grid_m, (float, np.floating)) and float(grid_m).is_integer():
        ok = True
    if not ok or not 1 <= grid_m <= MAX_GRID_M:
        raise SpecboundError(f"grid_m must be an integer from 1 to {MAX_GRID_M}, got {grid_m!r}")
    return int(grid_m)


def check_l_phi(l_phi: object) -> float:
    """``l_phi`` as a finite float > 0; SpecboundError otherwise (bools and strings too)."""
    ok = isinstance(l_phi, (int, float, np.integer, np.floating)) and not isinstance(
        l_phi, (bool, np.bool_)
    )
    if not ok or not (math.isfinite(float(l_phi)) and float(l_phi) > 0):
        raise SpecboundError(f"l_phi must be a finite number > 0, got {l_phi!r}")
    return float(l_phi)


def p_grid(m: int) -> np.ndarray:
    """P_m = {0, 1/m, 2/m, ..., 2}."""
    if isinstance(m, (bool, np.bool_)) or not isinstance(m, (int, np.integer)) or m < 1:
        raise SpecboundError(f"grid_m must be a positive integer, got {m!r}")
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
    """log c(A, p) = log S_p/(p+2) + p log s/(p+2) + (p+1) log N/(p+2) over ``grid``."""
    log_s = max(float(log_scale), math.log(S_FLOOR))
    lsp = log_schatten_power(kept, grid)
    return (lsp + grid * log_s + (grid + 1.0) * math.log(hidden_size)) / (grid + 2.0)


def log_alpha(
    log_c2_in: np.ndarray,
    log_c2_out: np.ndarray,
    c2_qk: np.ndarray,
    c2_ov: np.ndarray,
    l_phi: float,
) -> np.ndarray:
    """log alpha(l) for l = 0..L-1; c2_qk, c2_ov have shape (L, H). alpha(L-1) = 1."""
    with np.errstate(divide="ignore"):
        head_sum = _log(np.sum(c2_ov * (1.0 + 4.0 * c2_qk), axis=1))
        factor = math.log(l_phi) + log_c2_in + log_c2_out + head_sum
    tail = np.concatenate([np.cumsum(factor[::-1])[::-1][1:], [0.0]])
    return tail


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
    for label, v in (("num_layers", num_layers), ("hidden_size", hidden_size)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
            raise SpecboundError(f"{label} must be a positive integer, got {v!r}")
    L, N = int(num_layers), int(hidden_size)
    present = np.unique(spectra.layer)
    if present.size != L or (L and (present[0] != 0 or present[-1] != L - 1)):
        raise SpecboundError(
            f"num_layers = {L} does not match the spectra, which cover layers "
            f"{present.tolist() if present.size <= 8 else f'{present[0]}..{present[-1]}'}"
        )
    l_phi = check_l_phi(l_phi)
    grid_m = check_grid_m(grid_m)
    m = default_grid_m(L, N) if grid_m is None else grid_m
    grid = p_grid(m)
    c2 = spectra.spectral_norm
    lay, typ, head = spectra.layer, spectra.matrix_type, spectra.head
    H = int(head[typ == QK].max()) + 1 if np.any(typ == QK) else 0

    def per_layer(t: int) -> np.ndarray:
        out = np.zeros(L)
        out[lay[typ == t]] = c2[typ == t]
        return out

    def per_head(values: np.ndarray, t: int) -> np.ndarray:
        out = np.zeros((L, H))
        sel = typ == t
        out[lay[sel], head[sel]] = values[sel]
        return out

    c2_in, c2_out = per_layer(M_IN), per_layer(M_OUT)
    lc_in, lc_out = _log(c2_in), _log(c2_out)
    c2_qk, c2_ov = per_head(c2, QK), per_head(c2, OV)
    la = log_alpha(lc_in, lc_out, c2_qk, c2_ov, l_phi)

    # gamma per matrix (SPEC.md section 4)
    ffn = lc_out[lay] + lc_in[lay]
    log_c2_ov_of = _log(c2_ov[lay, np.maximum(head, 0)])
    with np.errstate(invalid="ignore"):
        lg = np.select(
            [typ == QK, typ == OV, typ == M_IN, typ == M_OUT],
            [math.log(2.0) + log_c2_ov_of + ffn, ffn, lc_out[lay], np.zeros(len(spectra))],
        )
    log_s = lg + la[lay] + math.log(L)

    k = np.minimum(spectra.rows, spectra.cols)
    p_star = np.zeros(len(spectra))
    log_c = np.full(len(spectra), -np.inf)
    for i in range(len(spectra)):
        kept = kept_singular_values(spectra.singular_values(i), int(k[i]))
        curve = log_contribution_curve(kept, log_s[i], N, grid)
        j = int(np.argmin(curve))  # first minimizer: ties go to the smallest p
        p_star[i], log_c[i] = grid[j], curve[j]

    log_sa = float(logsumexp(np.concatenate([log_c, [0.5 * math.log(L)]])))

    # norm-based baseline (SPEC.md section 5)
    third = 2.0 / 3.0
    l21 = _log(spectra.norm_21)
    terms = np.select(
        [typ == QK, typ == OV, typ == M_IN, typ == M_OUT],
        [
            third * (lc_out[lay] + lc_in[lay] + log_c2_ov_of + l21),
            third * (lc_out[lay] + lc_in[lay] + l21),
            third * (lc_out[lay] + l21),
            third * l21,
        ],
    )
    log_xi = np.array([float(logsumexp(terms[lay == l])) for l in range(L)])
    log_nb = 1.5 * float(logsumexp(np.concatenate([[0.0], third * la + log_xi])))

    bounds = Bounds(BoundValue(log_sa), BoundValue(log_nb), m, float(l_phi))
    return BoundDetails(bounds, grid, la, log_xi, lg, log_s, p_star, log_c)
