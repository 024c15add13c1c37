"""From statistics to verdicts (SPEC 10, protocol v3 as amended by v4): pure functions, no
pandas, no files.

- :func:`bootstrap_p`: the bootstrap p-value of a difference from its paired draws;
- :func:`holm`, :func:`bh`: Holm's step-down adjustment and Benjamini-Hochberg q-values
  (NaN in, NaN out; NaN entries are not counted in m);
- :func:`mc_error`: the Monte Carlo error sqrt(p (1 - p) / B) of a bootstrap p-value;
- :func:`verdict`: one of :data:`VERDICTS` for a difference, and :func:`evidence` /
  :func:`reason`: the counts behind it and why it is what it is.

The rules, in the order they are applied:

1. B < :data:`MIN_BOOTSTRAP` (200) is refused (:class:`SpecboundValueError`);
2. B < :data:`MIN_VERDICT_BOOTSTRAP` (1000), fewer than :data:`MIN_CONFIGURATIONS` (8)
   configurations, or, on ``tau_fixed_n``, fewer than :data:`MIN_STRATA` (2) strata of >=
   :data:`MIN_STRATUM_CONFIGURATIONS` (3) configurations: "insufficient evidence";
3. a comparison that cannot mean anything (a baseline constant on every group of an axis, a
   measure undefined within fixed n): "not comparable";
4. no adjusted p or no interval: "undetermined";
5. |p_adj - alpha| <= 2 x the Monte Carlo error of p_adj: "borderline" (protocol v4: the error
   of the adjusted figure itself; for Holm, p_holm = k p_j of the row j that attains it, with
   error k sqrt(p_j (1 - p_j) / B): :func:`holm_mc_errors`);
6. p_adj < alpha and the interval excludes 0: "better" when the difference favours the
   measure (delta > 0 on tau-like statistics, where larger is better), else "worse";
7. otherwise "undetermined".

Protocol v4 (:func:`over_seeds`, :func:`stable_verdicts`): a primary row's verdict is
recomputed under :data:`SEEDS` bootstrap seeds (seed, seed + 1, ..., seed + 4, each with its own
B draws, its own Holm adjustment over the family); ``verdict_stable`` is yes when the words
agree, and a row whose words differ is "borderline" (:func:`seeds_differ` says why).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ...errors import Param, SpecboundValueError
from ...validation import check_int
from .registry import REGISTRY

#: B below this is refused.
MIN_BOOTSTRAP = 200
#: Verdict words need at least this many draws.
MIN_VERDICT_BOOTSTRAP = 1000
#: Primary rows use at least this many draws.
PRIMARY_BOOTSTRAP = 10_000
#: Verdict words need at least this many configurations.
MIN_CONFIGURATIONS = 8
#: On tau_fixed_n, verdict words need this many strata of n ...
MIN_STRATA = 2
#: ... each with at least this many configurations.
MIN_STRATUM_CONFIGURATIONS = 3
ALPHA = 0.05

BETTER = "better"
WORSE = "worse"
BORDERLINE = "borderline"
UNDETERMINED = "undetermined"
INSUFFICIENT = "insufficient evidence"
NOT_COMPARABLE = "not comparable"
#: Every verdict word a difference can get.
VERDICTS = (BETTER, WORSE, BORDERLINE, UNDETERMINED, INSUFFICIENT, NOT_COMPARABLE)

PRIMARY = "primary"
EXPLORATORY = "exploratory"
#: Bootstrap seeds a primary verdict must survive (protocol v4).
SEEDS = 5
#: An adjusted p within this many Monte Carlo errors of alpha is "borderline" (protocol v4).
BORDERLINE_MC_ERRORS = 2.0


def larger_is_better(statistic: str) -> bool:
    """The direction of ``statistic`` (its registry entry; a name the registry does not know is
    tau-like: larger is better)."""
    st = REGISTRY.statistic(statistic)
    return True if st is None else st.larger_is_better


def _strata_words(statistic: str) -> str:
    """What the evidence of ``statistic`` counts (strata of n, cells, ...; "" for none)."""
    st = REGISTRY.statistic(statistic)
    return "" if st is None else st.strata_words


def check_bootstrap(bootstrap: Any, name: str = "bootstrap") -> int:
    """``bootstrap`` as an int >= :data:`MIN_BOOTSTRAP` (one-line error otherwise)."""
    b = check_int(bootstrap, name, min=0)
    if b < MIN_BOOTSTRAP:
        raise SpecboundValueError(
            Param(name, str(b)),
            f" is too few draws: p-values and intervals need >= {MIN_BOOTSTRAP} "
            f"(verdict words need >= {MIN_VERDICT_BOOTSTRAP}); use ",
            Param(name, str(MIN_VERDICT_BOOTSTRAP)),
            " or more",
        )
    return b


def bootstrap_p(draws: Iterable[float] | np.ndarray) -> float:
    """p = min(1, 2 min((1 + #{d <= 0}) / (1 + B), (1 + #{d >= 0}) / (1 + B))) over the
    finite draws d of a difference (B = their number); NaN when none is finite."""
    d = np.asarray(list(draws) if not isinstance(draws, np.ndarray) else draws, dtype=float)
    d = d[np.isfinite(d)]
    b = d.size
    if b == 0:
        return math.nan
    low = (1 + int(np.count_nonzero(d <= 0))) / (1 + b)
    high = (1 + int(np.count_nonzero(d >= 0))) / (1 + b)
    return float(min(1.0, 2.0 * min(low, high)))


def _finite(p: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    arr = np.asarray(p, dtype=float).reshape(-1)
    ok = np.flatnonzero(np.isfinite(arr))
    return arr, ok, arr[ok]


def holm(p: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values: sorted ascending p_(1) <= ... <= p_(m),
    p_holm_(i) = max over j <= i of min(1, (m - j + 1) p_(j)). NaN in, NaN out (not in m)."""
    arr, ok, v = _finite(p)
    out = np.full(arr.shape, np.nan)
    m = v.size
    if m == 0:
        return out
    order = np.argsort(v, kind="stable")
    adj = np.minimum(1.0, (m - np.arange(m)) * v[order])
    out[ok[order]] = np.maximum.accumulate(adj)
    return out


def bh(p: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values: sorted ascending, q_(i) = min over j >= i of
    min(1, m p_(j) / j). NaN in, NaN out (not in m)."""
    arr, ok, v = _finite(p)
    out = np.full(arr.shape, np.nan)
    m = v.size
    if m == 0:
        return out
    order = np.argsort(v, kind="stable")
    adj = np.minimum(1.0, m * v[order] / np.arange(1, m + 1))
    out[ok[order]] = np.minimum.accumulate(adj[::-1])[::-1]
    return out


def mc_error(p: float, bootstrap: int) -> float:
    """The Monte Carlo standard error sqrt(p (1 - p) / B) of a bootstrap p-value (NaN for
    p NaN or B <= 0; p is clipped to [0, 1])."""
    if bootstrap <= 0 or not math.isfinite(p):
        return math.nan
    q = min(1.0, max(0.0, float(p)))
    return math.sqrt(q * (1.0 - q) / bootstrap)


def adjusted_mc_error(p_adj: float, bootstrap: int, p: float | None = None) -> float:
    """The Monte Carlo error of an adjusted figure. With the raw ``p``, the adjustment is read
    as the factor p_adj / p on it (Holm's (m - j + 1), BH's m / j), which scales the error of p
    alike; without it, :func:`mc_error` of ``p_adj`` itself."""
    if p is not None and math.isfinite(p) and p > 0 and math.isfinite(p_adj):
        return mc_error(p, bootstrap) * (p_adj / p)
    return mc_error(p_adj, bootstrap)


def holm_mc_errors(
    p: Sequence[float] | np.ndarray, bootstrap: float | Sequence[float] | np.ndarray
) -> np.ndarray:
    """The Monte Carlo error of each Holm-adjusted figure (protocol v4). Sorted ascending,
    p_holm_(i) = max over j <= i of min(1, (m - j + 1) p_(j)); the figure is that of the row j
    attaining the maximum, so its error is (m - j + 1) sqrt(p_(j) (1 - p_(j)) / B) (0 where the
    figure is capped at 1, which no draw can move below it). ``bootstrap``: B, one for all rows
    or one per row (the draws behind each p; the attaining row's is used). NaN in, NaN out."""
    arr, ok, v = _finite(p)
    out = np.full(arr.shape, np.nan)
    m = v.size
    b_all = np.broadcast_to(np.asarray(bootstrap, dtype=float), arr.shape)[ok]
    if m == 0 or not np.all(b_all > 0):
        return out
    order = np.argsort(v, kind="stable")
    k = (m - np.arange(m)).astype(float)
    raw = k * v[order]
    adj = np.minimum(1.0, raw)
    at = np.zeros(m, dtype=np.int64)  # the index (in sorted order) attaining each running max
    for i in range(1, m):
        at[i] = i if adj[i] >= adj[at[i - 1]] else at[i - 1]
    q = np.clip(v[order][at], 0.0, 1.0)
    err = k[at] * np.sqrt(q * (1.0 - q) / b_all[order][at])
    err[raw[at] >= 1.0] = 0.0
    out[ok[order]] = err
    return out


#: ``word(seed, row, p, p_holm, mc)``: a row's verdict under one seed, from that seed's p, the
#: Holm figure over the family and that figure's Monte Carlo error.
SeedWord = Callable[[int, int, float, float, float], str]


def over_seeds(
    p: Sequence[Sequence[float] | np.ndarray],
    bootstrap: Sequence[float] | np.ndarray,
    word: SeedWord,
) -> tuple[np.ndarray, list[list[str]]]:
    """Protocol v4: the family's verdicts under each bootstrap seed. ``p[s][k]``: row k's p under
    seed s (s = 0 the reported one); ``bootstrap``: each row's B. Holm over the rows of each
    seed (:func:`holm`, :func:`holm_mc_errors`), then ``word`` per row. Returns seed 0's Holm
    figures and the words ``[s][k]`` (for :func:`stable_verdicts`)."""
    first = np.full(len(p[0]) if len(p) else 0, np.nan)
    runs: list[list[str]] = []
    for s, seed_p in enumerate(p):
        ps = np.asarray(seed_p, dtype=float)
        hs, mcs = holm(ps), holm_mc_errors(ps, bootstrap)
        if s == 0:
            first = hs
        runs.append([word(s, k, float(ps[k]), float(hs[k]), float(mcs[k])) for k in range(ps.size)])
    return first, runs


def seeds_differ(runs: Sequence[Sequence[str]], k: int) -> str:
    """The evidence of row ``k`` whose words differ between the seeds of ``runs``."""
    return "verdict differs between bootstrap seeds: " + ", ".join(run[k] for run in runs)


def stable_verdicts(words: Sequence[Sequence[str]]) -> tuple[list[str], list[bool]]:
    """Protocol v4: ``words[s][i]`` is row i's verdict under bootstrap seed s (s = 0 the
    reported one). Returns each row's verdict (its seed-0 word when every seed agrees, else
    "borderline") and whether it is stable."""
    if not words:
        return [], []
    rows = len(words[0])
    stable = [all(w[i] == words[0][i] for w in words) for i in range(rows)]
    final = [words[0][i] if stable[i] else BORDERLINE for i in range(rows)]
    return final, stable


def _short(v: float) -> str:
    """3 significant digits (never rounds a small p or endpoint to 0)."""
    if not math.isfinite(v):
        return "undefined"
    return f"{v:.3g}"


def insufficient(
    *,
    bootstrap: int,
    n_configurations: int,
    statistic: str,
    n_strata_ok: int | None = None,
) -> list[str]:
    """What a difference lacks for verdict words (empty: enough evidence)."""
    lacks = []
    if bootstrap < MIN_VERDICT_BOOTSTRAP:
        lacks.append(f"B = {bootstrap} < {MIN_VERDICT_BOOTSTRAP} draws")
    if n_configurations < MIN_CONFIGURATIONS:
        lacks.append(f"{n_configurations} < {MIN_CONFIGURATIONS} configurations")
    words = _strata_words(statistic)
    if words and (n_strata_ok or 0) < MIN_STRATA:
        lacks.append(
            f"{n_strata_ok or 0} < {MIN_STRATA} {words} with >= "
            f"{MIN_STRATUM_CONFIGURATIONS} configurations"
        )
    return lacks


def verdict(
    *,
    estimate: float,
    low: float,
    high: float,
    p_adj: float,
    B: int,
    n_configurations: int,
    n_strata_ok: int | None = None,
    statistic: str,
    comparable: bool = True,
    alpha: float = ALPHA,
    p: float | None = None,
    defined: int | None = None,
    mc: float | None = None,
) -> str:
    """The verdict word of one difference (measure - versus) on ``statistic`` (module doc).

    ``estimate``, [``low``, ``high``]: the difference and its interval; ``p_adj``: its
    adjusted figure (``p_holm`` or ``q_bh``); ``B``: the draws behind it (< 200 raises);
    ``n_strata_ok``: strata of n with >= 3 configurations (used on ``tau_fixed_n``);
    ``comparable``: False when the comparison cannot mean anything; ``p``: the raw p-value,
    when given the Monte Carlo error of ``p_adj`` is that of p scaled by the adjustment;
    ``defined``: the draws where the difference is defined (the B of p and of its Monte Carlo
    error; default ``B``); ``mc``: the Monte Carlo error of ``p_adj`` when known (protocol v4,
    :func:`holm_mc_errors`), which replaces the scaled error of p.
    """
    check_bootstrap(B, "B")
    if insufficient(
        bootstrap=B,
        n_configurations=n_configurations,
        statistic=statistic,
        n_strata_ok=n_strata_ok,
    ):
        return INSUFFICIENT
    if not comparable:
        return NOT_COMPARABLE
    if not all(math.isfinite(x) for x in (estimate, low, high, p_adj)):
        return UNDETERMINED
    err = mc if mc is not None and math.isfinite(mc) else adjusted_mc_error(p_adj, defined or B, p)
    if abs(p_adj - alpha) <= BORDERLINE_MC_ERRORS * err:
        return BORDERLINE
    if p_adj < alpha and (low > 0 or high < 0):
        favours = estimate > 0 if larger_is_better(statistic) else estimate < 0
        return BETTER if favours else WORSE
    return UNDETERMINED


def evidence(
    *,
    B: int,
    n_configurations: int,
    statistic: str,
    n_strata_ok: int | None = None,
    missing: Sequence[str] = (),
    n_missing: int | None = None,
) -> str:
    """The counts beside a verdict: draws, configurations, strata (on ``tau_fixed_n``) and the
    grid's configurations without a usable model, named (``n_missing`` when only some are
    named), e.g. ``B = 10000; 12 configurations; 3 strata of n with >= 3 configurations;
    missing 1 of the grid: depth=2 width=64``."""
    parts = [f"B = {B}", f"{n_configurations} configurations"]
    words = _strata_words(statistic)
    if words:
        parts.append(
            f"{n_strata_ok or 0} {words} with >= {MIN_STRATUM_CONFIGURATIONS} configurations"
        )
    count = len(missing) if n_missing is None else int(n_missing)
    if count:
        names = ", ".join(missing)
        parts.append(f"missing {count} of the grid" + (f": {names}" if names else ""))
    return "; ".join(parts)


def reason(
    *,
    estimate: float,
    low: float,
    high: float,
    p_adj: float,
    B: int,
    n_configurations: int,
    n_strata_ok: int | None = None,
    statistic: str,
    comparable: bool = True,
    alpha: float = ALPHA,
    p: float | None = None,
    why_not_comparable: str = "",
) -> str:
    """Why :func:`verdict` gives what it gives, in one phrase (same arguments)."""
    word = verdict(
        estimate=estimate,
        low=low,
        high=high,
        p_adj=p_adj,
        B=B,
        n_configurations=n_configurations,
        n_strata_ok=n_strata_ok,
        statistic=statistic,
        comparable=comparable,
        alpha=alpha,
        p=p,
    )
    if word == INSUFFICIENT:
        lacks = insufficient(
            bootstrap=B,
            n_configurations=n_configurations,
            statistic=statistic,
            n_strata_ok=n_strata_ok,
        )
        return "insufficient evidence: " + ", ".join(lacks)
    if word == NOT_COMPARABLE:
        return "not comparable" + (f": {why_not_comparable}" if why_not_comparable else "")
    interval = f"[{_short(low)}, {_short(high)}]"
    if word == BORDERLINE:
        err = adjusted_mc_error(p_adj, B, p)
        return (
            f"borderline: adjusted p {_short(p_adj)} is within 2 x {_short(err)} (Monte Carlo "
            f"error) of {alpha:g}"
        )
    if word in (BETTER, WORSE):
        return f"{word}: adjusted p {_short(p_adj)} < {alpha:g} and interval {interval} excludes 0"
    if not math.isfinite(p_adj):
        return "undetermined: no p-value (the difference is undefined on the draws)"
    return f"undetermined: adjusted p {_short(p_adj)}, interval {interval}"
