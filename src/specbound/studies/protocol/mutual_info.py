"""Conditional mutual information of Jiang et al. 2020 (section 5), SPEC 10's p(u)-weighted form.

Over ordered pairs (a, b) of distinct models with g_a != g_b: V_mu = [mu_a > mu_b] (a tie counts
as -), V_g = [g_a > g_b]; for a set S of axes the cell of a pair is u = (theta_S(a),
theta_S(b)), and

    CMI_S = sum_u p(u) I(V_mu; V_g | u) / sum_u p(u) H(V_g | u)      (logs base 2)

with p(u) the share of pairs in cell u. Reported: the minimum over |S| <= 2 (the empty set
included; an S whose denominator is 0 is undefined and skipped) and the S attaining it (first in
the order (), (a0,), (a1,), ..., (a0, a1), ...). This is not the PGDL 2020 scorer (uniform over
|S| = 2 cells). CMI ignores the sign of the relation: report it with tau, never alone.

Memory: the pairs are streamed in blocks of ``PAIR_BLOCK`` into per-cell counters; a set S whose
cells would need more than ``CMI_MAX_CELLS`` counters is left out (``cmi_values`` names it).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .stats import PAIR_BLOCK, as_codes, row_ids

#: Counters of one CMI_S at most (4 per cell pair); sets S beyond are left out.
CMI_MAX_CELLS = 1 << 21


def axis_subsets(k: int) -> list[tuple[int, ...]]:
    """Every set of at most two of ``k`` axes, the empty set first."""
    return [()] + [(a,) for a in range(k)] + list(itertools.combinations(range(k), 2))


def _cmi_of_counts(counts: np.ndarray) -> float:
    counts = counts.reshape(-1, 2, 2).astype(float)
    n_u = counts.sum(axis=(1, 2))
    keep = n_u > 0
    counts, n_u = counts[keep], n_u[keep]
    if n_u.size == 0:
        return math.nan
    p_u = n_u / n_u.sum()
    joint = counts / n_u[:, None, None]
    pm = joint.sum(axis=2, keepdims=True)
    pg = joint.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(joint > 0, joint * np.log2(joint / (pm * pg)), 0.0)
        hg = np.where(pg > 0, -pg * np.log2(pg), 0.0)
    info = np.maximum(terms.sum(axis=(1, 2)), 0.0)
    den = float(np.sum(p_u * hg.sum(axis=(1, 2))))
    if den <= 1e-15:
        return math.nan
    return float(np.sum(p_u * info)) / den


def cmi_values(
    mu: np.ndarray, g: np.ndarray, codes: np.ndarray
) -> tuple[list[float], list[tuple[int, ...]]]:
    """(CMI_S for every S of ``axis_subsets``, the S left out for too many cells).

    NaN where CMI_S is undefined (no pair, or H(V_g | U_S) = 0) or left out.
    """
    mu = np.asarray(mu, dtype=float)
    g = np.asarray(g, dtype=float)
    codes = as_codes(codes, len(mu))
    n = mu.size
    subsets = axis_subsets(codes.shape[1])
    cls, sizes, skipped = [], [], []
    for s in subsets:
        c = row_ids(codes[:, list(s)])
        k = int(c.max()) + 1 if c.size else 1
        cls.append(c)
        sizes.append(k)
        if 4 * k * k > CMI_MAX_CELLS:
            skipped.append(s)
    acc = [
        None if s in skipped else np.zeros(4 * k * k, dtype=np.int64)
        for s, k in zip(subsets, sizes, strict=True)
    ]
    step = max(1, PAIR_BLOCK // max(n, 1))
    for a0 in range(0, n, step):
        a1 = min(n, a0 + step)
        dg = g[a0:a1, None] - g[None, :]
        keep = dg != 0
        if not keep.any():
            continue
        v = (2 * (mu[a0:a1, None] - mu[None, :] > 0) + (dg > 0))[keep]
        for c, k, out in zip(cls, sizes, acc, strict=True):
            if out is None:
                continue
            key = ((c[a0:a1, None] * k + c[None, :]) * 4)[keep] + v
            out += np.bincount(key, minlength=out.size)
    vals = [math.nan if out is None else _cmi_of_counts(out) for out in acc]
    return vals, skipped


def cmi(mu: np.ndarray, g: np.ndarray, codes: np.ndarray) -> tuple[float, tuple[int, ...] | None]:
    """(min over |S| <= 2 of CMI_S, the first S attaining it); (NaN, None) when none is defined."""
    codes = as_codes(codes, len(mu))
    vals, _ = cmi_values(mu, g, codes)
    best, best_s = math.nan, None
    for s, val in zip(axis_subsets(codes.shape[1]), vals, strict=True):
        if not math.isnan(val) and (best_s is None or val < best - 1e-12):
            best, best_s = val, s
    return best, best_s


#: Ordered pairs of models beyond which the CMI bootstrap is left out (its interval undefined).
CMI_MAX_PAIRS = 1 << 22


def _cmi_batch(counts: np.ndarray) -> np.ndarray:
    """``_cmi_of_counts`` for every row of ``counts`` (draws x cells x 2 x 2)."""
    n_u = counts.sum(axis=(2, 3))
    tot = n_u.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_u = np.where(tot[:, None] > 0, n_u / tot[:, None], 0.0)
        joint = np.where(n_u[..., None, None] > 0, counts / n_u[..., None, None], 0.0)
        pm = joint.sum(axis=3, keepdims=True)
        pg = joint.sum(axis=2, keepdims=True)
        terms = np.where(joint > 0, joint * np.log2(joint / (pm * pg)), 0.0)
        hg = np.where(pg > 0, -pg * np.log2(pg), 0.0).sum(axis=(2, 3))
    info = np.maximum(terms.sum(axis=(2, 3)), 0.0)
    den = (p_u * hg).sum(axis=1)
    num = (p_u * info).sum(axis=1)
    out = np.full(counts.shape[0], np.nan)
    ok = den > 1e-15
    out[ok] = num[ok] / den[ok]
    return out


def cmi_draws(mu: np.ndarray, g: np.ndarray, codes: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The minimum CMI over |S| <= 2 on each resample (row of ``w``: model weights, draws x
    models): an ordered pair of distinct models counts w_a w_b (the resample as a list of
    copies; copies of one model have dg = 0 and never pair). With ``w = 1`` this is
    :func:`cmi`'s value. NaN where undefined, and everywhere for more than
    ``CMI_MAX_PAIRS`` ordered pairs."""
    from scipy.sparse import csr_matrix

    mu = np.asarray(mu, dtype=float)
    g = np.asarray(g, dtype=float)
    w = np.atleast_2d(np.asarray(w, dtype=float))
    codes = as_codes(codes, len(mu))
    rows, n = w.shape[0], mu.size
    out = np.full(rows, np.nan)
    if n < 2 or rows == 0 or n * n > CMI_MAX_PAIRS:
        return out
    ia, ib = np.nonzero(g[:, None] - g[None, :] != 0)
    if ia.size == 0:
        return out
    v = 2 * (mu[ia] > mu[ib]).astype(np.int64) + (g[ia] > g[ib]).astype(np.int64)
    mats = []
    for s in axis_subsets(codes.shape[1]):
        c = row_ids(codes[:, list(s)])
        k = int(c.max()) + 1 if c.size else 1
        if 4 * k * k > CMI_MAX_CELLS:
            continue
        cells, inv = np.unique(c[ia] * k + c[ib], return_inverse=True)
        key = np.asarray(inv).reshape(-1) * 4 + v
        mats.append(
            csr_matrix(
                (np.ones(ia.size), (key, np.arange(ia.size))), shape=(4 * cells.size, ia.size)
            )
        )
    vals = np.full((len(mats), rows), np.nan)
    step = max(1, PAIR_BLOCK // ia.size)
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        pw = w[r0:r1, ia] * w[r0:r1, ib]  # draws x pairs
        for j, mat in enumerate(mats):
            cnt = np.asarray(mat @ pw.T).T  # draws x (4 cells)
            vals[j, r0:r1] = _cmi_batch(cnt.reshape(r1 - r0, -1, 2, 2))
    if not mats:
        return out
    defined = np.isfinite(vals).any(axis=0)
    out[defined] = np.nanmin(vals[:, defined], axis=0)
    return out
