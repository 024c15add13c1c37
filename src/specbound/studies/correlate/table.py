"""correlation.csv and differences.csv from the models table (SPEC 10, protocol v3).

``correlation_study(models, measures, axes)`` evaluates every measure over the models where it
and the gap are finite: the point statistics of :mod:`.stats`, and 95% percentile intervals over
``bootstrap`` resamples of the *configurations* (a drawn configuration brings all its seeds),
drawn once (``seed``) and shared by every measure, so differences between measures are paired.
Every interval holds its own point estimate (widened to it where the percentiles miss it).
A draw where a statistic is undefined is left out of that statistic's interval (and of every
difference involving it).

Protocol v3 (``verdicts``): every difference carries its bootstrap p-value over the ``B`` paired
draws where it is defined, ``family`` (``primary`` for the contrasts of the zoo's primary family,
``protocol.families``, drawn again with max(bootstrap, 10000) draws from the same seed; else
``exploratory``), ``p_holm`` (Holm over the primary rows), ``q_bh`` (Benjamini-Hochberg over the
exploratory rows), ``verdict`` (one of ``verdicts.VERDICTS``) and ``evidence`` (the counts beside
it, and the grid's configurations without a usable model, named). A comparison with a measure that
cannot see what the statistic measures (constant on every group of an axis, for Psi; constant within
every value of n, for the fixed-n statistics; constant on every model, for tau; or the two forms of
one measure at fixed n) is "not comparable", never a win.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import SpecboundError
from ...validation import Names, Text, validate_params
from ..protocol import stats as S
from ..protocol import verdicts as V
from . import rows as R

if TYPE_CHECKING:
    import pandas as pd

from ..protocol.families import primary_contrasts
from ..protocol.registry import REGISTRY
from ..protocol.statistics import KENDALL_TAU
from ..protocol.tables import (
    COMPUTED_COLUMNS,
    DIFFERENCE_COLUMNS,
    SEED_COLUMNS,
    correlation_columns,
)
from .rules import (
    BASELINES,
    BOOTSTRAP_OR_ZERO,
    LEVEL,
    PER_SQRT_N,
    PRIMARY,
    SEED,
    degenerate_notes,
)


@dataclass
class Tables:
    """correlation.csv, differences.csv, and one line per statistic left undefined and why."""

    correlation: pd.DataFrame
    differences: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    n_configurations: int = 0
    primary_statistic: str = KENDALL_TAU.name
    primary_bootstrap: int = 0
    missing: list[str] = field(default_factory=list)
    #: The primary family's name (``protocol.families``).
    primary_family: str = "standard"


@validate_params(
    {
        "measures": (Names(what="measure"),),
        "axes": (Names(what="axis name"),),
        "gap": (Text(),),
        "bootstrap": BOOTSTRAP_OR_ZERO,
        "seed": SEED,
        "level": LEVEL,
        "primary": PRIMARY,
        "design": (None, Text()),
    }
)
def correlation_study(
    models: pd.DataFrame,
    measures: Sequence[str],
    axes: Sequence[str],
    *,
    gap: str = "gap",
    bootstrap: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    missing: Sequence[str] = (),
    primary: str = "auto",
    design: str | None = None,
) -> Tables:
    """Every measure's row of correlation.csv and its differences (module doc).

    ``bootstrap``: 0 (point estimates only: no intervals, no p-values, every verdict
    "insufficient evidence") or 200..MAX_BOOTSTRAP. ``missing``: the grid's configurations
    without a usable model, named beside every verdict. ``primary``: ``auto`` (A1-A3 on tau_arch
    for a zoo designed for it, ``protocol.families.designed_for_arch``; else P1-P3), ``arch`` or
    ``standard`` (or another family of the registry, ``protocol.families``). ``design``: the
    zoo's declared design (e.g. "adaptivity"; ``ZooFacts.declared``, which a family's rule may
    read), None when none is declared."""
    import pandas as pd

    axes = list(axes)
    missing = [str(m) for m in missing]
    for c in [gap, *axes, *measures]:
        if c not in models.columns:
            raise SpecboundError(f"the models table has no column '{c}'")
    # the arguments were checked (@validate_params)
    su = R.setup(
        models, measures, axes, gap=gap, bootstrap=bootstrap, seed=seed, level=level,
        missing=missing, primary=primary, design=design,
    )  # fmt: skip
    rows, draws, p_draws, info = [], {}, {}, {}
    for name in measures:
        ev = R.measure_row(models, name, su)
        if ev.p_draw:
            p_draws[name] = ev.p_draw
        draws[name] = ev.boot
        info[name] = ev.info
        rows.append(ev.row)
    corr = pd.DataFrame(rows, columns=correlation_columns(axes))
    expl = differences(corr, draws, level)
    prim = primary_differences(corr, p_draws, su.pstat, level, measures, su.contrasts)
    diffs = with_verdicts(prim, expl, info, bootstrap, su.p_boot, missing)
    notes = degenerate_notes(models, axes, su.n_all, su.config_all, bootstrap, corr)
    return Tables(corr, diffs, notes, su.n_conf, su.pstat, su.p_boot, missing, su.family)


def correlation_table(
    models: pd.DataFrame,
    measures: Sequence[str],
    axes: Sequence[str],
    *,
    gap: str = "gap",
    bootstrap: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """correlation.csv alone (``correlation_study(...).correlation``)."""
    return correlation_study(
        models, measures, axes, gap=gap, bootstrap=bootstrap, seed=seed, level=level
    ).correlation


def _same_ranking(
    draws: dict[str, dict[str, np.ndarray]], point: pd.DataFrame, a: str, b: str, st: str
) -> bool:
    """True when ``a`` and ``b`` have the same point estimate and bootstrap draws of ``st``
    (the same ranking of the models, e.g. m and m_per_sqrt_n when n is constant)."""
    da, db = draws.get(a, {}).get(st), draws.get(b, {}).get(st)
    return (
        da is not None
        and db is not None
        and float(point.loc[a, st]) == float(point.loc[b, st])
        and np.array_equal(da, db, equal_nan=True)
    )


def _twin(name: str) -> str:
    return name.removesuffix(PER_SQRT_N) if name.endswith(PER_SQRT_N) else name + PER_SQRT_N


def _paired(
    delta: float, a: np.ndarray | None, b: np.ndarray | None, level: float
) -> tuple[float, float, int, float]:
    """(low, high, B, p) of a paired difference: its interval (widened to hold ``delta``), the
    number of draws where it is defined and its bootstrap p-value (NaN without draws)."""
    if a is None or b is None or math.isnan(delta):
        return math.nan, math.nan, 0, math.nan
    d = a - b
    lo, hi = S.percentile_interval(d, level, delta)
    return lo, hi, int(np.isfinite(d).sum()), V.bootstrap_p(d)


def differences(
    corr: pd.DataFrame, draws: dict[str, dict[str, np.ndarray]], level: float = 0.95
) -> pd.DataFrame:
    """The exploratory rows of differences.csv: for every measure and statistic of
    ``COMPARED_STATS`` (tau_arch only when some measure has a cell of it), delta = the measure's
    point estimate - the other's, with the percentile interval of the paired per-draw differences
    (widened to hold delta), the number ``B`` of draws where the difference is defined and its
    bootstrap ``p``, against each baseline of ``BASELINES`` present and the best other measure (the
    largest point estimate of that statistic among the others; for the fixed-n statistics the
    measure's own ``_per_sqrt_n`` form, or its raw form, is not an other: inside a stratum of equal
    n the two are the same ranking; nor is a measure whose point estimate and bootstrap draws equal
    this one's, such as both forms when n is constant). ``family`` is ``exploratory``; the adjusted
    figures and
    verdicts come from :func:`with_verdicts`."""
    import pandas as pd

    names = list(corr["measure"])
    point = corr.set_index("measure")
    # a statistic with a condition (tau_arch: some cell of depth x width x n) only when it holds
    records = corr.to_dict("records")
    stats = [
        s.name for s in REGISTRY.compared() if s.compared_when is None or s.compared_when(records)
    ]
    rows = []
    for name in names:
        for st in stats:
            others = [o for o in names if o != name]
            versus = [b for b in BASELINES if b in others]
            vals = {o: float(point.loc[o, st]) for o in others}
            twin = _twin(name)
            fixed_n = REGISTRY.statistics[st].fixed_n
            candidates = [
                o
                for o in others
                if not (fixed_n and o == twin) and not _same_ranking(draws, point, name, o, st)
            ]
            defined = [o for o in candidates if not math.isnan(vals[o])]
            if defined:
                best = max(defined, key=lambda o: vals[o])  # first of equal values
                if best not in versus:
                    versus.append(best)
            for o in versus:
                delta = float(point.loc[name, st]) - vals[o]
                lo, hi, b, p = _paired(
                    delta, draws.get(name, {}).get(st), draws.get(o, {}).get(st), level
                )
                rows.append([name, o, st, delta, lo, hi, V.EXPLORATORY, "", b, p])
    return pd.DataFrame(rows, columns=COMPUTED_COLUMNS)


def _joined(values: Sequence[float]) -> str:
    """Seed figures as one cell: ``;``-joined, full precision (``nan`` where undefined)."""
    return ";".join(repr(float(v)) for v in values)


def split_seeds(cell: Any) -> list[float]:
    """The figures of a ``*_seeds`` cell of differences.csv ([] when empty or missing)."""
    if not isinstance(cell, str) or not cell.strip():
        return []
    return [float(x) for x in cell.split(";")]


def primary_differences(
    corr: pd.DataFrame,
    draws: dict[str, list[np.ndarray]],
    statistic: str,
    level: float = 0.95,
    measures: Sequence[str] | None = None,
    contrasts: Sequence[tuple[str, str, str]] | None = None,
) -> pd.DataFrame:
    """The primary rows (``contrasts``, ``(id, measure, versus)``; default those of the family
    on ``statistic``, ``protocol.primary_contrasts``: P1-P3, or A1-A3 on ``tau_arch``) on
    ``statistic``, from their own draws (``draws[measure][s]``: the statistic on each resample
    of bootstrap seed ``seed + s``). A contrast is written when both its measures are among
    ``measures`` (default: the measures of ``corr``; ``correlate`` always has them), even where
    the exploratory rows would not compare them. ``low``, ``high``, ``B`` and ``p`` are the
    first seed's; ``p_seeds``, ``low_seeds`` and ``high_seeds`` hold every seed's, in order."""
    import pandas as pd

    point = corr.set_index("measure")
    have = set(corr["measure"]) if measures is None else set(measures)
    if contrasts is None:
        contrasts = primary_contrasts(statistic)
    rows = []
    for cid, a, b in contrasts:
        if a not in have or b not in have:
            continue
        delta = (
            float(point.loc[a, statistic]) - float(point.loc[b, statistic])
            if a in point.index and b in point.index
            else math.nan
        )
        none: list[np.ndarray | None] = [None]
        da: list[np.ndarray | None] = list(draws.get(a) or none)
        db: list[np.ndarray | None] = list(draws.get(b) or none)
        per = [_paired(delta, x, y, level) for x, y in zip(da, db, strict=False)]
        lo, hi, n, p = per[0]
        rows.append(
            [
                *[a, b, statistic, delta, lo, hi, V.PRIMARY, cid, n, p],
                *[_joined([q[j] for q in per]) for j in (3, 0, 1)],
            ]
        )
    cols = [*COMPUTED_COLUMNS, *SEED_COLUMNS]
    return pd.DataFrame(rows, columns=cols)


def _comparable(row: dict[str, Any], info: dict[str, R.Measure]) -> str:
    """Why the row's comparison cannot mean anything, "" when it can."""
    st, a, b = row["statistic"], row["measure"], row["versus"]
    entry = REGISTRY.statistic(st)
    if entry is not None and entry.fixed_n and b == _twin(a):
        return f"{a} and {b} rank the models alike within each value of n"
    for name in (b, a):
        if name not in info:
            return f"{name} is not measured"
        why = info[name].blind.get(st, "")
        if why:
            return f"{name} is {why}"
    return ""


def with_verdicts(
    primary: pd.DataFrame,
    exploratory: pd.DataFrame,
    info: dict[str, R.Measure],
    bootstrap: int,
    primary_bootstrap: int,
    missing: Sequence[str] = (),
) -> pd.DataFrame:
    """differences.csv: the primary rows first (an exploratory row of the same measure, versus
    and statistic is dropped), ``p_holm`` over the primary rows, ``q_bh`` over the
    exploratory rows, and every row's ``verdict`` and ``evidence`` (``verdicts``). Protocol v4:
    a primary row's Monte Carlo error is that of its Holm figure (``verdicts.holm_mc_errors``)
    and its verdict is recomputed under each bootstrap seed of ``p_seeds`` (Holm over the
    primary rows of that seed); ``verdict_stable`` is yes when every seed gives the same word,
    and a row whose words differ is "borderline" (``verdicts.stable_verdicts``)."""
    d = _joined_rows(primary, exploratory)
    prim = (d["family"] == V.PRIMARY).to_numpy(bool)
    p = _numbers(d["p"])
    p_holm = np.full(len(d), np.nan)
    q_bh = np.full(len(d), np.nan)
    p_holm[prim] = V.holm(p[prim])
    q_bh[~prim] = V.bh(p[~prim])
    d["p_holm"], d["q_bh"] = p_holm, q_bh
    records = d.to_dict("records")
    gated = [
        _gate(r, info, primary_bootstrap if prim[i] else bootstrap, bootstrap, missing)
        for i, r in enumerate(records)
    ]
    gates, evidence = [g for g, _ in gated], [e for _, e in gated]
    words: list[str] = [""] * len(d)
    for i in np.flatnonzero(~prim).tolist():
        words[i] = gates[i] or _word(records[i], float(q_bh[i]), float(p[i]), None, bootstrap)
    stable = [""] * len(d)
    idx = np.flatnonzero(prim).tolist()
    if idx:
        rows = [records[i] for i in idx]
        final, ok, runs = _primary_words(rows, [gates[i] for i in idx], p[idx], primary_bootstrap)
        for k, i in enumerate(idx):
            words[i] = final[k]
            stable[i] = "yes" if ok[k] else "no"
            if not ok[k]:
                evidence[i] = f"{evidence[i]}; {V.seeds_differ(runs, k)}"
    d["verdict"], d["evidence"], d["verdict_stable"] = words, evidence, stable
    d["B"] = d["B"].astype(int)
    return d[DIFFERENCE_COLUMNS]


def _numbers(column: pd.Series) -> np.ndarray:
    import pandas as pd

    return pd.to_numeric(column, errors="coerce").to_numpy(float)


def _joined_rows(primary: pd.DataFrame, exploratory: pd.DataFrame) -> pd.DataFrame:
    """The primary rows, then the exploratory rows whose measure, versus and statistic no
    primary row has; the seed columns filled ("" where absent)."""
    import pandas as pd

    keys = set(zip(primary["measure"], primary["versus"], primary["statistic"], strict=True))
    keep = [
        (m, v, s) not in keys
        for m, v, s in zip(
            exploratory["measure"], exploratory["versus"], exploratory["statistic"], strict=True
        )
    ]
    exploratory = exploratory[keep]
    frames = [f for f in (primary, exploratory) if len(f)]
    d = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COMPUTED_COLUMNS)
    d = d.reset_index(drop=True)
    for c in SEED_COLUMNS:
        d[c] = d[c].fillna("") if c in d.columns else ""
    return d


def _primary_words(
    records: list[dict[str, Any]], gates: list[str], p: np.ndarray, primary_bootstrap: int
) -> tuple[list[str], list[bool], list[list[str]]]:
    """The primary rows' verdicts under each bootstrap seed of ``p_seeds`` (Holm over the rows
    of that seed; a row's gate word stands): the final words, whether each is stable, and the
    words per seed (``verdicts.over_seeds``, ``verdicts.stable_verdicts``). ``p``: the rows'
    p-values (a row without seeds keeps its own)."""
    seeds = max(len(split_seeds(r["p_seeds"])) or 1 for r in records)
    per_seed = [
        np.array([_seed(r, "p_seeds", s, float(p[k])) for k, r in enumerate(records)])
        for s in range(seeds)
    ]
    b = np.array([max(int(r["B"]), 1) for r in records], dtype=float)

    def word(s: int, k: int, p_s: float, p_holm: float, mc: float) -> str:
        r = records[k]
        return gates[k] or _word(
            r,
            p_holm,
            p_s,
            mc,
            primary_bootstrap,
            low=_seed(r, "low_seeds", s, float(r["low"])),
            high=_seed(r, "high_seeds", s, float(r["high"])),
        )

    _, runs = V.over_seeds(per_seed, b, word)
    final, ok = V.stable_verdicts(runs)
    return final, ok, runs


def _seed(r: dict[str, Any], column: str, s: int, default: float) -> float:
    """Seed ``s``'s figure of ``r[column]`` (``default`` when the row has none)."""
    vals = split_seeds(r.get(column))
    return vals[s] if s < len(vals) else default


def _gate(
    r: dict[str, Any],
    info: dict[str, R.Measure],
    asked: int,
    bootstrap: int,
    missing: Sequence[str],
) -> tuple[str, str]:
    """(the word a row gets whatever its p-values, "" when they decide it; its evidence)."""
    a, b, st = r["measure"], r["versus"], r["statistic"]
    n_conf = min((info[x].n_configurations for x in (a, b) if x in info), default=0)
    strata = min((info[x].strata.get(st, 0) for x in (a, b) if x in info), default=0)
    n_draws = int(r["B"])
    why = _comparable(r, info)
    ev = V.evidence(
        B=asked, n_configurations=n_conf, statistic=st, n_strata_ok=strata, missing=missing
    )
    if n_draws < asked:
        ev = f"{ev}; the difference is defined on {n_draws} of the {asked} draws"
    lacks = V.insufficient(
        bootstrap=asked, n_configurations=n_conf, statistic=st, n_strata_ok=strata
    )
    word = ""
    if bootstrap < V.MIN_VERDICT_BOOTSTRAP or lacks:
        # no bootstrap (point estimates only), a study asked for fewer draws than verdicts
        # need (the primary rows' own 10000 do not lift that), too few configurations or
        # strata: never a verdict
        word = V.INSUFFICIENT
        if bootstrap < V.MIN_VERDICT_BOOTSTRAP:
            ev = f"{ev}; bootstrap {bootstrap} < {V.MIN_VERDICT_BOOTSTRAP}"
    elif why:
        word = V.NOT_COMPARABLE
    elif n_draws < V.MIN_BOOTSTRAP:  # defined on too few draws
        word = V.INSUFFICIENT
    if why:
        ev = f"{ev}; not comparable: {why}"
    return word, ev


def _word(
    r: dict[str, Any],
    p_adj: float,
    p: float,
    mc: float | None,
    asked: int,
    *,
    low: float | None = None,
    high: float | None = None,
) -> str:
    """The verdict of a row that passed :func:`_gate`, from its adjusted figure (and, protocol
    v4, that figure's Monte Carlo error ``mc``)."""
    return V.verdict(
        estimate=float(r["delta"]),
        low=float(r["low"]) if low is None else low,
        high=float(r["high"]) if high is None else high,
        p_adj=p_adj,
        p=p,
        B=asked,
        defined=int(r["B"]),
        n_configurations=V.MIN_CONFIGURATIONS,  # the gate already checked the evidence
        n_strata_ok=V.MIN_STRATA,
        statistic=str(r["statistic"]),
        mc=mc,
    )
