"""The power-law fit of heavy-tailed self-regularization (Martin & Mahoney 2021; SPEC 9).

lambda_1 <= ... <= lambda_n: the squared singular values of W above the rank threshold of SPEC 3;
alpha(W) is undefined when n < 20. For each candidate i = 1..n-1 (x_min = lambda_i, tail size
t = n - i + 1), the Clauset-Shalizi-Newman maximum-likelihood fit and its Kolmogorov distance:

    alpha_i = 1 + t / sum_{j >= i} ln(lambda_j / lambda_i)
    D_i     = max_{j >= i} | 1 - (lambda_j / lambda_i)^(1 - alpha_i) - (j - i) / t |

(D_i is taken as 1, its largest possible value, when alpha_i <= 1 or alpha_i = inf: a tail of
equal eigenvalues, as in orthogonal weights; D is None when no candidate has 1 < alpha_i < inf.)
alpha(W) = alpha_i at the first i minimizing D_i, as WeightWatcher 0.7.7 computes its default
``alpha``. The fits of a model's raw weights are computed once per ``MeasureInput``
(``weight_fits``) and shared by ``htsr_alpha``, ``htsr_alpha_weighted`` and the weights table.

Fit quality (``fit_quality``; weights.csv ``htsr_fit`` and ``htsr_fit_reason``), checked in
this order:

* ``short_tail``: fewer than ``MIN_EIGENVALUES`` eigenvalues (no fit), or a tail of
  t < ``MIN_TAIL`` = 20 eigenvalues: the maximum-likelihood alpha of so few points has a
  standard error (alpha - 1)/sqrt(t) above a fifth of (alpha - 1);
* ``poor``: alpha undefined (a tail of equal eigenvalues), the KS distance D above
  ``KS_CRITICAL``/sqrt(t) = 1.358/sqrt(t) (the asymptotic 5% critical value of the Kolmogorov
  test for a tail of t points; lenient, since x_min and alpha were fitted to the same points), or
  x_min at the smallest eigenvalue (the lower edge of the x_min range: the whole spectrum,
  bulk included, was taken as the power-law tail);
* ``ok`` otherwise.

The registered measures average every defined alpha (SPEC 9); ``fit_summary`` adds the means
over ``ok`` fits only with the number of fits each used (summary.json, ``--json``).

WeightWatcher's norm columns (``ww_norm_metrics``; weights.csv), from the same eigenvalues
lambda_i = s_i^2 (unnormalized: WeightWatcher 0.7.7's default ``normalize=False`` takes the
squared singular values of W itself, not of W^T W / N), as its ``apply_norm_metrics`` defines
them:

    lambda_max        = max_i lambda_i = ||W||_2^2
    log_norm          = log10 sum_i lambda_i = log10 ||W||_F^2
    log_spectral_norm = log10 lambda_max
    log_alpha_norm    = log10 sum_i lambda_i^alpha    (alpha: the fit above; undefined without it)

WeightWatcher sums over every eigenvalue, those below the rank threshold included; they change
these sums by less than a relative (k eps)^2 (eps the float64 epsilon).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..linalg.spectra import rank_threshold
from .base import MeasureInput, MeasureValue
from .logspace import LN10, LOG_MAX, logsumexp

#: alpha(W) needs at least this many eigenvalues above the rank threshold.
MIN_EIGENVALUES = 20
#: A fit on fewer tail eigenvalues is ``short_tail``.
MIN_TAIL = 20
#: The asymptotic 5% critical value of the Kolmogorov distance, times sqrt(sample size).
KS_CRITICAL = 1.358
#: The verdicts of ``fit_quality`` (weights.csv ``htsr_fit``).
FIT_OK, FIT_SHORT_TAIL, FIT_POOR = "ok", "short_tail", "poor"
FIT_VERDICTS = (FIT_OK, FIT_SHORT_TAIL, FIT_POOR)
#: WeightWatcher's range of alpha for well-trained layers (Martin & Mahoney 2021): alpha above
#: it reads as under-trained, below it as over-trained.
HTSR_GOOD = (2.0, 6.0)
#: Rows of the (candidates x eigenvalues) work array per chunk (bounds memory at ~32 MiB).
_CHUNK_ENTRIES = 4 * 1024 * 1024
#: Candidates per chunk: small chunks skip most of the j < i half of the square.
_CHUNK_ROWS = 64


@dataclass(frozen=True)
class PowerLawFit:
    """alpha, x_min, D and tail size of one matrix's fit (all None when undefined)."""

    alpha: float | None
    xmin: float | None
    D: float | None
    num_tail: int | None
    lambda_max: float | None
    num_eigenvalues: int
    #: log10 lambda_max, kept when lambda_max itself is beyond float64 (then inf)
    log10_lambda_max: float | None = None

    @property
    def log10_lmax(self) -> float | None:
        """log10 lambda_max (None for no eigenvalue), also beyond float64."""
        if self.lambda_max is not None and math.isfinite(self.lambda_max):
            return math.log10(self.lambda_max) if self.lambda_max > 0 else None
        return self.log10_lambda_max


def power_law_fit(
    eigenvalues: np.ndarray, log_eigenvalues: np.ndarray | None = None
) -> PowerLawFit:
    """The fit above on positive eigenvalues (any order); undefined below MIN_EIGENVALUES.

    ``log_eigenvalues`` (natural logs) replaces ``eigenvalues`` when they exceed float64 (the
    squares of singular values above ~1e154): the fit only reads logs; x_min and lambda_max are
    then inf, with ``log10_lambda_max`` kept.
    """
    if log_eigenvalues is not None:
        x = np.sort(np.asarray(log_eigenvalues, dtype=np.float64))
        with np.errstate(over="ignore"):
            lam = np.exp(x)
    else:
        lam = np.sort(np.asarray(eigenvalues, dtype=np.float64))
    n = lam.size
    lmax = float(lam[-1]) if n else None
    log10_lmax = float(x[-1] / math.log(10.0)) if log_eigenvalues is not None and n else None
    if n < MIN_EIGENVALUES:
        return PowerLawFit(None, None, None, None, lmax, n, log10_lmax)
    if log_eigenvalues is None:
        x = np.log(lam)
    m = n - 1  # candidates i = 0..n-2 (0-based)
    t = (n - np.arange(m)).astype(np.float64)
    tail_sum = np.cumsum(x[::-1])[::-1][:m]  # sum_{j >= i} ln lambda_j
    with np.errstate(divide="ignore"):
        alphas = 1.0 + t / (tail_sum - t * x[:m])
    ds = np.ones(m)
    # a tail of equal eigenvalues (orthogonal or permutation weights) has alpha_i = inf: no
    # power law, D_i = 1 like alpha_i <= 1 (inf * 0 below would be NaN, and argmin picks a NaN)
    ok = np.flatnonzero((alphas > 1.0) & np.isfinite(alphas))
    rows = max(1, min(_CHUNK_ROWS, _CHUNK_ENTRIES // n))
    for r0 in range(0, ok.size, rows):
        idx = ok[r0 : r0 + rows]
        j = np.arange(idx[0], n)  # columns j >= the chunk's first candidate (a triangle)
        # cells with j < i are clipped to ln(lambda_j / lambda_i) = 0 and (j - i)/t = 0, where
        # the deviation is |1 - 1 - 0| = 0 <= every real one: no mask needed
        d = x[j][None, :] - x[idx][:, None]
        np.maximum(d, 0.0, out=d)
        d *= (1.0 - alphas[idx])[:, None]
        np.exp(d, out=d)  # (lambda_j / lambda_i)^(1 - alpha_i); alpha_i > 1, no overflow
        frac = (j[None, :] - idx[:, None]) / t[idx][:, None]
        np.maximum(frac, 0.0, out=frac)
        d += frac
        np.subtract(1.0, d, out=d)
        np.abs(d, out=d)
        ds[idx] = d.max(axis=1)
    i = int(np.argmin(ds))
    alpha = float(alphas[i])
    defined = math.isfinite(alpha) and alpha > 1.0  # else every candidate was undefined
    return PowerLawFit(
        alpha if math.isfinite(alpha) else None,
        float(lam[i]),
        float(ds[i]) if defined else None,
        int(n - i),
        lmax,
        n,
        log10_lmax,
    )


def weight_fit(singular_values: np.ndarray, k: int) -> PowerLawFit:
    """The fit of a matrix from its singular values (descending) and k = min(rows, cols)."""
    sv = np.asarray(singular_values, dtype=np.float64)
    kept = sv[sv > rank_threshold(k, sv[0])] if sv.size else sv
    with np.errstate(over="ignore"):
        lam = kept * kept
    if np.all(np.isfinite(lam)) or not np.all(np.isfinite(kept)):
        return power_law_fit(lam)
    return power_law_fit(lam, log_eigenvalues=2.0 * np.log(kept))  # squares beyond float64


def ww_norm_metrics(
    singular_values: np.ndarray, k: int, alpha: float | None
) -> tuple[float, float, float, float]:
    """(lambda_max, log_norm, log_spectral_norm, log_alpha_norm) of a matrix, as defined in the
    module docstring, from its singular values (descending) and k = min(rows, cols); computed in
    log space, so the three logs stay finite beyond float64 (lambda_max is then inf). NaN for a
    matrix without eigenvalues above the rank threshold; log_alpha_norm NaN when alpha is None."""
    sv = np.asarray(singular_values, dtype=np.float64)
    kept = sv[sv > rank_threshold(k, sv[0])] if sv.size else sv
    if kept.size == 0:
        return math.nan, math.nan, math.nan, math.nan
    log_lam = 2.0 * np.log(kept)
    log_max = float(np.max(log_lam))
    lambda_max = math.exp(log_max) if log_max <= LOG_MAX else math.inf
    log_alpha_norm = math.nan if alpha is None else float(logsumexp(alpha * log_lam)) / LN10
    return lambda_max, float(logsumexp(log_lam)) / LN10, log_max / LN10, log_alpha_norm


def weight_fits(x: MeasureInput) -> list[PowerLawFit]:
    """The fit of every raw weight matrix of ``x`` (memoized on ``x``)."""

    def fits() -> list[PowerLawFit]:
        w = x.weights
        return [
            weight_fit(w.singular_values(i), int(min(w.rows[i], w.cols[i]))) for i in range(len(w))
        ]

    return x.memo("htsr_fits", fits)


def mean_alpha(x: MeasureInput, weighted: bool) -> MeasureValue:
    fits = weight_fits(x)
    vals = []
    for f in fits:
        if f.alpha is None:
            continue
        if not weighted:
            vals.append(f.alpha)
        elif f.log10_lmax is not None:
            vals.append(f.alpha * f.log10_lmax)
    skipped = len(fits) - len(vals)
    note = (
        (
            f"{skipped} of {len(fits)} matrices with < {MIN_EIGENVALUES} eigenvalues above the "
            "rank threshold skipped"
        )
        if skipped
        else None
    )
    if not vals:
        return MeasureValue(None, note or "no weight matrices")
    return MeasureValue(float(np.mean(vals)), note)


def outside_good(alpha: float) -> float:
    """How far ``alpha`` lies outside WeightWatcher's range :data:`HTSR_GOOD` (0 inside)."""
    return max(HTSR_GOOD[0] - alpha, alpha - HTSR_GOOD[1], 0.0)


def fit_quality(f: PowerLawFit) -> tuple[str, str]:
    """(verdict, reason) of one fit: ``ok`` (reason ""), ``short_tail`` or ``poor`` (see the
    module docstring for the rules, checked in that order)."""
    n = f.num_eigenvalues
    if f.num_tail is None:
        return (
            FIT_SHORT_TAIL,
            f"{n} eigenvalues above the rank threshold (< {MIN_EIGENVALUES}): no fit",
        )
    t = f.num_tail
    if t < MIN_TAIL:
        return FIT_SHORT_TAIL, f"tail of {t} eigenvalues (< {MIN_TAIL})"
    if f.alpha is None:
        return FIT_POOR, f"alpha undefined: the {t} tail eigenvalues are all equal"
    bound = KS_CRITICAL / math.sqrt(t)
    ks = f.D
    if ks is not None and ks > bound:
        return FIT_POOR, f"KS D {ks:.3g} > {KS_CRITICAL}/sqrt({t}) = {bound:.3g}"
    if t == n:
        return (
            FIT_POOR,
            "x_min at the smallest eigenvalue (edge of the x_min range): the whole spectrum "
            "taken as the tail",
        )
    return FIT_OK, ""


def fit_summary(fits: list[PowerLawFit]) -> dict[str, float | int | None]:
    """Counts of each verdict and the means of alpha and alpha log10 lambda_max over the ``ok``
    fits only, each with the number of fits it used (``htsr_alpha_fits_used``,
    ``htsr_alpha_weighted_fits_used``; the mean is None when it used none)."""
    verdicts = [fit_quality(f)[0] for f in fits]
    ok = [f for f, v in zip(fits, verdicts, strict=True) if v == FIT_OK and f.alpha is not None]
    alphas = [float(f.alpha) for f in ok if f.alpha is not None]
    weighted = [
        float(f.alpha) * f.log10_lmax
        for f in ok
        if f.alpha is not None and f.log10_lmax is not None
    ]
    return {
        "htsr_fits": len(fits),
        **{f"htsr_fits_{v}": verdicts.count(v) for v in FIT_VERDICTS},
        "htsr_alpha_ok": float(np.mean(alphas)) if alphas else None,
        "htsr_alpha_fits_used": len(alphas),
        "htsr_alpha_weighted_ok": float(np.mean(weighted)) if weighted else None,
        "htsr_alpha_weighted_fits_used": len(weighted),
    }
