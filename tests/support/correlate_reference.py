"""A brute-force SPEC 10 (protocol v2) that shares no code with specbound: loops over pairs.

Models are given as lists: ``mu``, ``g``, ``theta`` (a tuple of axis values per model), ``n``
(training-set size or None), ``orig`` (which original model an entry is a copy of) and ``unit``
(which draw of its configuration an entry came with). A pair is skipped when both entries are
copies of one model, or come from two different draws of the same configuration (its models
pair within each draw only), as in specbound's resamples.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict


def sgn(x):
    return int(x > 0) - int(x < 0)


_CTX = {}


def pairs(idx, orig):
    """(i, j, weight): pairs inside one configuration weigh ``within``, the others 1."""
    theta, unit, within = _CTX["theta"], _CTX["unit"], _CTX["within"]
    for i, j in itertools.combinations(idx, 2):
        if orig[i] == orig[j] or (theta[i] == theta[j] and unit[i] != unit[j]):
            continue
        yield i, j, (within if theta[i] == theta[j] else 1.0)


def tau_b(idx, x, y, orig):
    num = ux = uy = 0.0
    for i, j, wt in pairs(idx, orig):
        num += wt * sgn(x[i] - x[j]) * sgn(y[i] - y[j])
        ux += wt * (x[i] != x[j])
        uy += wt * (y[i] != y[j])
    return num / math.sqrt(ux * uy) if ux > 0 and uy > 0 else math.nan


def jiang(idx, x, y, orig):
    num = cnt = 0.0
    for i, j, wt in pairs(idx, orig):
        num += wt * sgn(x[i] - x[j]) * sgn(y[i] - y[j])
        cnt += wt
    return (num / cnt if cnt > 0 else math.nan), cnt


def mean(v):
    v = [x for x in v if not math.isnan(x)]
    return sum(v) / len(v) if v else math.nan


def reference(mu, g, theta, n=None, orig=None, n_axis=None, unit=None, design=None, within=1.0):
    """dict of every statistic: tau, psi, psi_axes, psi_groups, psi_pairs, tau_n, psi_n,
    sign_error, sign_axes, sign_pairs. ``design``: (theta, n) of the original models, which
    decide whether an axis or n varies (a resample may lose values; the design does not).
    ``within``: the weight of a pair inside one configuration (resamples: 1 - 1/K)."""
    m = len(mu)
    orig = list(range(m)) if orig is None else orig
    _CTX["theta"], _CTX["unit"] = theta, [0] * m if unit is None else unit
    _CTX["within"] = within
    k = len(theta[0]) if m else 0
    out = {"tau": tau_b(range(m), mu, g, orig)}
    psi_axes, groups_n, pairs_n = [], [], []
    d_theta, d_n = design if design is not None else (theta, n)
    for a in range(k):
        if len({th[a] for th in d_theta}) < 2:
            psi_axes.append(math.nan)
            groups_n.append(0)
            pairs_n.append(0)
            continue
        groups = defaultdict(list)
        for i, th in enumerate(theta):
            groups[th[:a] + th[a + 1 :]].append(i)
        data_confs = defaultdict(set)  # configurations of each group in the data
        for th in d_theta:
            data_confs[th[:a] + th[a + 1 :]].add(th)
        taus, npairs = [], 0
        data_models = defaultdict(list)
        for th in d_theta:
            data_models[th[:a] + th[a + 1 :]].append(th)
        for key, members in groups.items():
            # cross-configuration and seed pairs apart, mixed at their shares in the data
            sx = px = sw = pw = 0.0
            c = 0
            for i, j, wt in pairs(members, orig):
                v = sgn(mu[i] - mu[j]) * sgn(g[i] - g[j])
                c += 1
                if theta[i] == theta[j]:
                    sw, pw = sw + wt * v, pw + wt
                else:
                    sx, px = sx + v, px + 1
            dm = data_models[key]
            pw0 = sum(dm.count(t) * (dm.count(t) - 1) / 2 for t in set(dm))
            px0 = len(dm) * (len(dm) - 1) / 2 - pw0
            wx, ww = (px0 if px else 0), (pw0 if pw else 0)
            t = (
                (wx * (sx / px if px else 0) + ww * (sw / pw if pw else 0)) / (wx + ww)
                if wx + ww
                else math.nan
            )
            spans = len({theta[i] for i in members}) >= min(2, len(data_confs[key]))
            if wx + ww > 0 and spans:
                taus.append(t)
                npairs += c
        psi_axes.append(sum(taus) / len(taus) if taus else math.nan)
        groups_n.append(len(taus))
        pairs_n.append(npairs)
    out.update(psi_axes=psi_axes, psi_groups=groups_n, psi_pairs=pairs_n, psi=mean(psi_axes))
    tau_n = psi_n = math.nan
    if n is not None and len({v for v in d_n if v is not None}) >= 2:
        strata = defaultdict(list)
        for i, v in enumerate(n):
            if v is not None:
                strata[v].append(i)
        tau_n = mean([tau_b(s, mu, g, orig) for s in strata.values() if len(s) >= 3])
        if n_axis is not None:
            psi_n = mean([p for a, p in enumerate(psi_axes) if a != n_axis])
    out.update(tau_n=tau_n, psi_n=psi_n)
    per_axis = defaultdict(list)
    for i, j in itertools.combinations(range(m), 2):
        differ = [a for a in range(k) if theta[i][a] != theta[j][a]]
        if len(differ) == 1 and g[i] != g[j]:
            per_axis[differ[0]].append((1 - sgn(mu[i] - mu[j]) * sgn(g[i] - g[j])) / 2)
    errs = [e for v in per_axis.values() for e in v]
    out["sign_error"] = sum(errs) / len(errs) if errs else math.nan
    out["sign_axes"] = [mean(per_axis[a]) if per_axis[a] else math.nan for a in range(k)]
    out["sign_pairs"] = [len(per_axis[a]) for a in range(k)]
    return out


def expand(config, counts_of_config):
    """(model index, draw unit) of each entry of a resample: configuration c drawn
    counts[c] times brings all its models each time."""
    out = []
    for c, cnt in enumerate(counts_of_config):
        for u in range(int(cnt)):
            out += [(i, (c, u)) for i, ci in enumerate(config) if ci == c]
    return out


def configurations(theta):
    """Configuration id per model: distinct axis tuples numbered in the lexicographic order of
    their per-axis first-appearance codes (pandas.factorize order)."""
    k = len(theta[0]) if theta else 0
    codes = []
    for a in range(k):
        first = {}
        for th in theta:
            first.setdefault(th[a], len(first))
        codes.append([first[th[a]] for th in theta])
    keys = [tuple(codes[a][i] for a in range(k)) for i in range(len(theta))]
    order = {key: r for r, key in enumerate(sorted(set(keys)))}
    return [order[key] for key in keys]
