"""The statistics of SPEC 10 (protocol v2): pure functions on numpy arrays, no pandas, no files.

Inputs, one entry per model where the measure and the gap are finite: the measure ``mu``, the
gap ``g``, the integer codes of the hyperparameter axes (``codes``, models x axes) and, where
known, the training-set size ``n``. A *configuration* is one value of every axis; its models
are its seeds (replicates). Weights ``w`` (draws x models, non-negative integers) describe
resamples of configurations: a configuration drawn c times gives each of its models weight c;
a pair of models of different configurations counts c_a c_b times, a pair inside one
configuration c (1 - 1/K) times (its models pair within each draw only, a model never pairs
with its own copy, and 1 - 1/K = E[c_a c_b] keeps both kinds of pairs at their weights in the
data). So Jiang's tau is not shrunk by duplicates. The point estimate is ``w = 1``.

For a set of models T, over its pairs {i, j} of distinct models, with s_ij = sign(mu_i - mu_j)
sign(g_i - g_j):

- Kendall tau-b: sum s_ij / sqrt(#pairs untied in mu * #pairs untied in g) (scipy's tau-b);
- Jiang's tau_J(T) = sum s_ij / #pairs (a tie in mu or g counts 0); in a resample, the mean of
  s_ij over its cross-configuration pairs and over its seed pairs, weighed by the numbers of
  such pairs of the group in the data (the point estimate is exactly sum s_ij / #pairs);
- psi_i = mean of tau_J over the groups of >= 2 models sharing every axis value but i's (in a
  resample, a group that spanned >= 2 configurations in the data must still span 2);
  Psi = mean of psi_i over the axes that have such a group;
- tau_fixed_n = mean over the values of n of tau-b within that n (strata with >= 3 models and
  a defined tau-b), only when n takes >= 2 values; psi_fixed_n = mean of psi_i over the axes
  other than the training-set size (only when that is an axis);
- sign-error of axis i: over pairs differing in axis i only (seeds may differ) with g_i != g_j,
  the mean of (1 - sign(dmu) sign(dg)) / 2 (dmu = 0 counts 1/2); overall = over all such pairs;
  the robust figure = the maximum of the per-axis means over axes with >= ``MIN_SIGN_PAIRS``;
- CMI: :mod:`.mutual_info`.

Memory: no statistic holds all pairs. Pair sums over a set of m models use an m x m sign matrix
only for m <= ``SMALL_SET`` (vectorized over draws); larger sets use scipy's O(m log m) tau-b on
each resample (the pair sum is tau-b * sqrt(untied_mu * untied_g), rounded to the integer it
is). Resample weights are handled in chunks of draws (``draw_chunks``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: A set of models up to this size gets its pair sums from an m x m sign matrix.
SMALL_SET = 1024
#: Elements of one block of pair arrays (CMI streaming, bootstrap draw chunks).
PAIR_BLOCK = 1 << 21
#: A per-axis sign-error enters the robust figure only with at least this many pairs.
MIN_SIGN_PAIRS = 10
TOO_FEW_PAIRS = "too few pairs"


# --- grouping --------------------------------------------------------------------------------


def row_ids(codes: np.ndarray) -> np.ndarray:
    """One id (0..K-1) per distinct row of ``codes`` (all 0 when there are no columns)."""
    codes = np.asarray(codes)
    if codes.ndim == 1:
        codes = codes[:, None]
    if codes.shape[1] == 0 or codes.shape[0] == 0:
        return np.zeros(codes.shape[0], dtype=np.int64)
    _, inv = np.unique(codes, axis=0, return_inverse=True)
    return np.asarray(inv, dtype=np.int64).reshape(-1)


def as_codes(codes: np.ndarray, n: int) -> np.ndarray:
    """``codes`` as an int64 (n x axes) array (a 1-D array is one axis)."""
    c = np.asarray(codes, dtype=np.int64)
    return c.reshape(n, 1) if c.ndim == 1 else c.reshape(n, c.shape[-1] if c.ndim else 0)


def members(ids: np.ndarray) -> list[np.ndarray]:
    """Index arrays of the models of each id, in id order."""
    if ids.size == 0:
        return []
    order = np.argsort(ids, kind="stable")
    cuts = np.flatnonzero(np.diff(ids[order])) + 1
    return list(np.split(order, cuts))


def axis_groups(codes: np.ndarray, axis: int) -> list[np.ndarray]:
    """Index arrays of the groups of >= 2 models sharing every axis value except ``axis``'s."""
    gid = row_ids(np.delete(codes, axis, axis=1))
    return [grp for grp in members(gid) if grp.size >= 2]


@dataclass(frozen=True)
class Design:
    """What the statistics need beside mu and g (it depends on the models, not on the measure).

    ``config``: configuration id per model; ``groups[i]``: the groups of axis i (>= 2 models;
    none when axis i takes one value);
    ``group_configs[i][k]``: the configurations inside ``groups[i][k]``; ``configs``: index
    arrays of the configurations with >= 2 models; ``strata``: the models of each value of n
    (None when n is unknown or takes < 2 values); ``n_axis``: the training-set-size axis.
    """

    codes: np.ndarray
    config: np.ndarray
    groups: tuple[tuple[np.ndarray, ...], ...]
    group_configs: tuple[tuple[np.ndarray, ...], ...]
    configs: tuple[np.ndarray, ...]
    strata: tuple[np.ndarray, ...] | None
    n_axis: int | None

    @property
    def n_axes(self) -> int:
        return int(self.codes.shape[1])


def make_design(
    codes: np.ndarray, n: np.ndarray | None = None, n_axis: int | None = None
) -> Design:
    """The :class:`Design` of models with axis ``codes`` and training-set sizes ``n`` (NaN:
    unknown; such a model is in no stratum)."""
    codes = as_codes(codes, len(codes))
    config = row_ids(codes)
    groups, gconfs = [], []
    for a in range(codes.shape[1]):
        # an axis with one value has no groups: its seed pairs say nothing about the axis
        gs = axis_groups(codes, a) if np.unique(codes[:, a]).size >= 2 else []
        groups.append(tuple(gs))
        gconfs.append(tuple(np.unique(config[grp]) for grp in gs))
    configs = tuple(members(config))
    strata = None
    if n is not None:
        n = np.asarray(n, dtype=float)
        idx = np.flatnonzero(np.isfinite(n))
        values, inv = np.unique(n[idx], return_inverse=True)
        if values.size >= 2:
            strata = tuple(idx[m] for m in members(np.asarray(inv).reshape(-1)))
    return Design(codes, config, tuple(groups), tuple(gconfs), configs, strata, n_axis)


# --- pair sums -------------------------------------------------------------------------------


def _untied(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per row of ``w``: pairs of distinct models untied in x, (W^2 - sum_v c_v^2) / 2."""
    _, inv = np.unique(x, return_inverse=True)
    order = np.argsort(inv, kind="stable")
    starts = np.concatenate([[0], np.flatnonzero(np.diff(inv[order])) + 1])
    c = np.add.reduceat(w[:, order], starts, axis=1)
    tot = w.sum(axis=1)
    return (tot * tot - (c * c).sum(axis=1)) / 2.0


def _sign_sum_large(x: np.ndarray, y: np.ndarray, w: np.ndarray, ux: float, uy: float) -> float:
    """sum over pairs of copies of sign(dx) sign(dy), via scipy's tau-b on the expanded list."""
    if ux <= 0 or uy <= 0:
        return 0.0
    reps = np.rint(w).astype(np.int64)
    if not np.array_equal(reps, w):
        raise ValueError("weights of a large set must be integers")
    from scipy.stats import kendalltau

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tau = float(kendalltau(np.repeat(x, reps), np.repeat(y, reps)).statistic)
    return 0.0 if math.isnan(tau) else float(round(tau * math.sqrt(ux * uy)))


def pair_sums(
    x: np.ndarray, y: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(S, U_x, U_y, P) per row of ``w`` over the pairs of distinct models of the set.

    S = sum w_i w_j sign(x_i - x_j) sign(y_i - y_j), U_x = sum w_i w_j [x_i != x_j],
    U_y likewise, P = sum w_i w_j, each over i < j.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    w = np.atleast_2d(np.asarray(w, dtype=float))
    tot = w.sum(axis=1)
    p = (tot * tot - (w * w).sum(axis=1)) / 2.0
    if x.size < 2:
        z = np.zeros(w.shape[0])
        return z, z.copy(), z.copy(), p
    ux, uy = _untied(x, w), _untied(y, w)
    if x.size <= SMALL_SET:
        sxy = np.sign(x[:, None] - x[None, :]) * np.sign(y[:, None] - y[None, :])
        s = np.einsum("bi,bi->b", w @ sxy, w) / 2.0
    else:
        s = np.array(
            [_sign_sum_large(x, y, w[d], ux[d], uy[d]) for d in range(w.shape[0])], dtype=float
        )
    return s, ux, uy, p


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.full(np.shape(num), np.nan)
    ok = den > 0
    out[ok] = num[ok] / den[ok]
    return out


def kendall_tau(mu: np.ndarray, g: np.ndarray) -> float:
    """Kendall tau-b of (mu, g); NaN when undefined (< 2 models, or mu or g constant)."""
    mu = np.asarray(mu, dtype=float)
    g = np.asarray(g, dtype=float)
    s, ux, uy, _ = pair_sums(mu, g, np.ones((1, mu.size)))
    return float(ratio(s, np.sqrt(ux * uy))[0])


def jiang_tau(mu: np.ndarray, g: np.ndarray) -> float:
    """Jiang's tau_J = (concordant - discordant) / pairs (ties count 0); NaN for < 2 models."""
    mu = np.asarray(mu, dtype=float)
    s, _, _, p = pair_sums(mu, np.asarray(g, dtype=float), np.ones((1, mu.size)))
    return float(ratio(s, p)[0])


# --- all statistics of one measure, for every row of w -----------------------------------------


@dataclass
class Stats:
    """Each field holds one value per row of the weights (draws; one row: the point estimate).

    ``psi_axes[i]``, ``psi_groups[i]``, ``psi_pairs[i]``: psi_i and its evidence (groups with
    a pair, pairs in them); ``sign_axes[i]``, ``sign_pairs[i]``: per-axis sign-error and pairs.
    """

    kendall_tau: np.ndarray
    psi: np.ndarray
    psi_axes: list[np.ndarray]
    psi_groups: list[np.ndarray]
    psi_pairs: list[np.ndarray]
    tau_fixed_n: np.ndarray
    psi_fixed_n: np.ndarray
    sign_error: np.ndarray
    sign_axes: list[np.ndarray]
    sign_pairs: list[np.ndarray]


def nanmean_rows(cols: list[np.ndarray], rows: int) -> np.ndarray:
    if not cols:
        return np.full(rows, np.nan)
    m = np.stack(cols, axis=1)
    cnt = np.isfinite(m).sum(axis=1)
    tot = np.where(np.isfinite(m), m, 0.0).sum(axis=1)
    return ratio(tot, cnt.astype(float))


def statistics(
    mu: np.ndarray, g: np.ndarray, design: Design, w: np.ndarray, within: float = 1.0
) -> Stats:
    """Every SPEC 10 statistic but CMI, for each resample (row of ``w``, draws x models).

    ``w`` must give every model of a configuration the same weight c (the number of times the
    configuration was drawn). Pairs inside one configuration count c times, not c^2: two
    draws of a configuration are the same configuration seen twice, and its models pair only
    within each draw (so a resample weighs seed pairs and cross-configuration pairs as the
    data do: E[c] = 1, E[c_a c_b] = 1 - 1/K). ``within``: a further factor on the pairs inside
    a configuration; resamples of K configurations pass 1 - 1/K, so that both kinds of pairs
    keep, in expectation, their weights in the data (the point estimate: 1).
    """
    mu = np.asarray(mu, dtype=float)
    g = np.asarray(g, dtype=float)
    w = np.atleast_2d(np.asarray(w, dtype=float))
    rows, k = w.shape[0], design.n_axes
    n_conf = int(design.config.max()) + 1 if design.config.size else 0
    # unit sums of each configuration (its seed pairs, once) and its weight in each draw
    unit = np.zeros((4, n_conf))
    cw = np.zeros((rows, n_conf))
    for idx in design.configs:
        cid = design.config[idx[0]]
        cw[:, cid] = w[:, idx[0]]
        if idx.size >= 2:
            unit[:, cid] = [v[0] for v in pair_sums(mu[idx], g[idx], np.ones((1, idx.size)))]
    extra = cw * cw - within * cw  # how much too often a plain weighted sum counts seed pairs

    def sums(idx: np.ndarray, confs: np.ndarray | None = None) -> list[np.ndarray]:
        if confs is None:  # configurations cut by the set (strata when n is no axis)
            return set_sums(mu, g, design.config, w, extra, idx)
        out = list(pair_sums(mu[idx], g[idx], w[:, idx]))
        for j in range(4):
            out[j] = out[j] - extra[:, confs] @ unit[j, confs]
        return out

    all_idx = np.arange(mu.size)
    s, ux, uy, _ = sums(all_idx, np.arange(n_conf)) if mu.size else pair_sums(mu, g, w)
    tau = ratio(s, np.sqrt(ux * uy))
    psi_axes, psi_groups, psi_pairs, sign_axes, sign_pairs = [], [], [], [], []
    sign_num_all = np.zeros(rows)
    sign_den_all = np.zeros(rows)
    for a in range(k):
        tsum = np.zeros(rows)
        tcnt = np.zeros(rows)
        npairs = np.zeros(rows)
        snum = np.zeros(rows)
        sden = np.zeros(rows)
        for grp, confs in zip(design.groups[a], design.group_configs[a], strict=True):
            s_raw, _, u_raw, p_raw = pair_sums(mu[grp], g[grp], w[:, grp])
            c, sq = cw[:, confs], cw[:, confs] ** 2
            # cross-configuration pairs (raw sums count seed pairs c^2 times: take them out)
            s_x, u_x, p_x = (
                s_raw - sq @ unit[0, confs],
                u_raw - sq @ unit[2, confs],
                p_raw - sq @ unit[3, confs],
            )
            s_w, p_w = c @ unit[0, confs], c @ unit[3, confs]  # seed pairs, once per draw
            # Jiang's tau of the group: the mean over its pairs, the two kinds of pairs at their
            # shares in the data (a resample redraws values, not the design's proportions)
            pw0 = float(unit[3, confs].sum())
            px0 = grp.size * (grp.size - 1) / 2.0 - pw0
            wx, ww = px0 * (p_x > 0), pw0 * (p_w > 0)
            tj = ratio(
                wx * np.nan_to_num(ratio(s_x, p_x)) + ww * np.nan_to_num(ratio(s_w, p_w)),
                wx + ww,
            )
            # a group enters psi_i when it has a pair and, in a resample, still spans as many
            # configurations as it needs (2, or its only one): a group reduced to one of its
            # configurations would score seed noise as if it were axis i
            spans = (c > 0).sum(axis=1) >= min(2, confs.size)
            has = (wx + ww > 0) & spans
            tsum[has] += tj[has]
            tcnt += has
            npairs += np.where(has, p_x + p_w, 0.0)
            # sign-error of axis a: the cross pairs (they differ in axis a only), dg != 0
            snum += (u_x - s_x) / 2.0
            sden += u_x
        psi_axes.append(ratio(tsum, tcnt))
        psi_groups.append(tcnt)
        psi_pairs.append(npairs)
        sign_axes.append(ratio(snum, sden))
        sign_pairs.append(sden)
        sign_num_all += snum
        sign_den_all += sden
    psi = nanmean_rows(psi_axes, rows)
    tau_n = np.full(rows, np.nan)
    if design.strata is not None:
        vals = []
        for idx in design.strata:
            ss, sx, sy, _ = sums(idx)
            t = ratio(ss, np.sqrt(sx * sy))
            t[w[:, idx].sum(axis=1) < 3] = np.nan
            vals.append(t)
        tau_n = nanmean_rows(vals, rows)
    psi_n = np.full(rows, np.nan)
    if design.strata is not None and design.n_axis is not None:
        psi_n = nanmean_rows([p for a, p in enumerate(psi_axes) if a != design.n_axis], rows)
    return Stats(
        tau,
        psi,
        psi_axes,
        psi_groups,
        psi_pairs,
        tau_n,
        psi_n,
        ratio(sign_num_all, sign_den_all),
        sign_axes,
        sign_pairs,
    )


def join_stats(parts: Sequence[Stats]) -> Stats:
    """The :class:`Stats` of consecutive chunks of draws, joined (one value per draw)."""

    def cat(arrays: Sequence[np.ndarray]) -> np.ndarray:
        return np.concatenate(list(arrays))

    def cat_axes(lists: Sequence[list[np.ndarray]]) -> list[np.ndarray]:
        return [cat([p[i] for p in lists]) for i in range(len(lists[0]))] if lists else []

    return Stats(
        cat([p.kendall_tau for p in parts]),
        cat([p.psi for p in parts]),
        cat_axes([p.psi_axes for p in parts]),
        cat_axes([p.psi_groups for p in parts]),
        cat_axes([p.psi_pairs for p in parts]),
        cat([p.tau_fixed_n for p in parts]),
        cat([p.psi_fixed_n for p in parts]),
        cat([p.sign_error for p in parts]),
        cat_axes([p.sign_axes for p in parts]),
        cat_axes([p.sign_pairs for p in parts]),
    )


def set_sums(
    mu: np.ndarray,
    g: np.ndarray,
    config: np.ndarray,
    w: np.ndarray,
    extra: np.ndarray,
    idx: np.ndarray,
) -> list[np.ndarray]:
    """:func:`pair_sums` of the models ``idx`` under the weights ``w`` (draws x models), each
    configuration's own pairs counted at their resample weight: ``extra[:, c]`` (draws x
    configurations) is how many times too often the plain weighted sum counts the pairs inside
    configuration c (c^2 - within x c for a configuration drawn c times)."""
    out = list(pair_sums(mu[idx], g[idx], w[:, idx]))
    cid = config[idx]
    present, cnt = np.unique(cid, return_counts=True)
    for c, m in zip(present, cnt, strict=True):
        if m >= 2:
            sub = idx[cid == c]
            u = [v[0] for v in pair_sums(mu[sub], g[sub], np.ones((1, sub.size)))]
            for j in range(4):
                out[j] = out[j] - extra[:, c] * u[j]
    return out


def granulated_psi(mu: np.ndarray, g: np.ndarray, codes: np.ndarray) -> tuple[float, list[float]]:
    """(Psi, [psi_i per axis]) in Jiang's form; psi_i is NaN for an axis without a group."""
    st = statistics(mu, g, make_design(codes), np.ones((1, len(mu))))
    return float(st.psi[0]), [float(p[0]) for p in st.psi_axes]


def robust_sign_error(
    means: Sequence[float], pairs: Sequence[float], min_pairs: int = MIN_SIGN_PAIRS
) -> tuple[float, int | None]:
    """(max of the per-axis means over axes with >= ``min_pairs`` pairs, that axis);
    (NaN, None) when no axis has enough pairs (report ``TOO_FEW_PAIRS``)."""
    best, best_axis = math.nan, None
    for a, (m, p) in enumerate(zip(means, pairs, strict=True)):
        if p >= min_pairs and not math.isnan(m) and (best_axis is None or m > best):
            best, best_axis = float(m), a
    return best, best_axis


def sign_error(mu: np.ndarray, g: np.ndarray, codes: np.ndarray) -> tuple[float, float, int | None]:
    """(mean sign-error, robust figure, its axis) over pairs differing in exactly one axis."""
    st = statistics(mu, g, make_design(codes), np.ones((1, len(mu))))
    robust, axis = robust_sign_error(
        [float(x[0]) for x in st.sign_axes], [float(x[0]) for x in st.sign_pairs]
    )
    return float(st.sign_error[0]), robust, axis


# --- bootstrap over configurations ----------------------------------------------------------


def bootstrap_config_counts(n_configs: int, draws: int, seed: int) -> np.ndarray:
    """Counts (draws x configurations) of ``draws`` resamples of the configurations with
    replacement (``numpy.random.default_rng(seed).integers(0, K, (draws, K))``)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_configs, size=(draws, n_configs))
    flat = (idx + n_configs * np.arange(draws)[:, None]).ravel()
    return np.bincount(flat, minlength=draws * n_configs).reshape(draws, n_configs).astype(float)


def bootstrap_weights(config: np.ndarray, draws: int, seed: int) -> np.ndarray:
    """Model weights (draws x models): a drawn configuration brings all its seeds."""
    config = np.asarray(config, dtype=np.int64)
    k = int(config.max()) + 1 if config.size else 0
    return bootstrap_config_counts(k, draws, seed)[:, config]


def draw_chunks(n_models: int, draws: int) -> list[slice]:
    """Slices of the draws so that one chunk holds at most ``PAIR_BLOCK`` weights."""
    step = max(1, PAIR_BLOCK // max(n_models, 1))
    return [slice(i, min(i + step, draws)) for i in range(0, draws, step)]


def percentile_interval(
    values: np.ndarray, level: float = 0.95, point: float | None = None
) -> tuple[float, float]:
    """The (1 - level)/2 and (1 + level)/2 percentiles of the defined values (NaN if none).

    With ``point`` (the statistic's estimate on the models as they are), the interval is
    widened to hold it: [min(low, point), max(high, point)]. A percentile interval can miss its
    own estimate (a skewed bootstrap distribution, or float rounding when every draw equals the
    estimate up to the last bit); a reported interval never does, so "better" (low > 0) is never
    claimed for a difference whose own estimate is <= 0.
    """
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return math.nan, math.nan
    lo, hi = (float(x) for x in np.percentile(v, [50 * (1 - level), 50 * (1 + level)]))
    if point is not None and math.isfinite(point):
        lo, hi = min(lo, point), max(hi, point)
    return lo, hi


# --- the rank-ceiling diagnosis ---------------------------------------------------------------


def cell_r2(values: np.ndarray, cells: np.ndarray) -> float:
    """Share of the variance of ``values`` explained by the cell means (between-cell sum of
    squares / total sum of squares); NaN for < 2 finite values or zero variance."""
    v = np.asarray(values, dtype=float)
    c = np.asarray(cells)
    ok = np.isfinite(v)
    v, c = v[ok], c[ok]
    if v.size < 2:
        return math.nan
    total = float(np.sum((v - v.mean()) ** 2))
    if total <= 0:
        return math.nan
    ids = row_ids(c.reshape(len(c), -1))
    means = np.bincount(ids, weights=v) / np.bincount(ids)
    within = float(np.sum((v - means[ids]) ** 2))
    return max(0.0, 1.0 - within / total)
