"""``htsr_alpha`` = mean over W of the power-law exponent alpha(W) of its eigenvalue tail
(heavy-tailed self-regularization, Martin & Mahoney 2021; SPEC 9).

lambda_1 <= ... <= lambda_n: the squared singular values of W above the rank threshold of SPEC 3;
alpha(W) is undefined when n < 20. For each candidate i = 1..n-1 (x_min = lambda_i, tail size
t = n - i + 1), the Clauset-Shalizi-Newman maximum-likelihood fit and its Kolmogorov distance:

    alpha_i = 1 + t / sum_{j >= i} ln(lambda_j / lambda_i)
    D_i     = max_{j >= i} | 1 - (lambda_j / lambda_i)^(1 - alpha_i) - (j - i) / t |

(D_i is taken as 1, its largest possible value, when alpha_i <= 1.) alpha(W) = alpha_i at the
first i minimizing D_i, as WeightWatcher 0.7.7 computes its default ``alpha``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..spectra import rank_threshold
from .base import Measure, MeasureInput, MeasureValue

#: alpha(W) needs at least this many eigenvalues above the rank threshold.
MIN_EIGENVALUES = 20
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


def power_law_fit(eigenvalues: np.ndarray) -> PowerLawFit:
    """The fit above on positive eigenvalues (any order); undefined below MIN_EIGENVALUES."""
    lam = np.sort(np.asarray(eigenvalues, dtype=np.float64))
    n = lam.size
    lmax = float(lam[-1]) if n else None
    if n < MIN_EIGENVALUES:
        return PowerLawFit(None, None, None, None, lmax, n)
    x = np.log(lam)
    m = n - 1  # candidates i = 0..n-2 (0-based)
    t = (n - np.arange(m)).astype(np.float64)
    tail_sum = np.cumsum(x[::-1])[::-1][:m]  # sum_{j >= i} ln lambda_j
    with np.errstate(divide="ignore"):
        alphas = 1.0 + t / (tail_sum - t * x[:m])
    ds = np.ones(m)
    ok = np.flatnonzero(alphas > 1.0)
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
    return PowerLawFit(
        alpha if math.isfinite(alpha) else None, float(lam[i]), float(ds[i]), int(n - i), lmax, n
    )


def weight_fit(singular_values: np.ndarray, k: int) -> PowerLawFit:
    """The fit of a matrix from its singular values (descending) and k = min(rows, cols)."""
    sv = np.asarray(singular_values, dtype=np.float64)
    kept = sv[sv > rank_threshold(k, sv[0])] if sv.size else sv
    return power_law_fit(kept * kept)


def _mean_alpha(x: MeasureInput, weighted: bool) -> MeasureValue:
    vals = []
    for f in x.fits:
        if f.alpha is None:
            continue
        vals.append(f.alpha * math.log10(f.lambda_max) if weighted else f.alpha)
    skipped = len(x.fits) - len(vals)
    note = (
        (
            f"{skipped} of {len(x.fits)} matrices with < {MIN_EIGENVALUES} eigenvalues above the "
            "rank threshold skipped"
        )
        if skipped
        else None
    )
    if not vals:
        return MeasureValue(None, note or "no weight matrices")
    return MeasureValue(float(np.mean(vals)), note)


def compute(x: MeasureInput) -> MeasureValue:
    return _mean_alpha(x, weighted=False)


MEASURE = Measure(
    "htsr_alpha",
    "mean power-law exponent alpha of the weight eigenvalue tails (WeightWatcher's alpha)",
    compute,
)
