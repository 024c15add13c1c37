"""correlation.csv and differences.csv from the models table (SPEC 10, protocol v2).

``correlation_study(models, measures, axes)`` evaluates every measure over the models where it
and the gap are finite: the point statistics of :mod:`.stats`, and 95% percentile intervals over
``bootstrap`` resamples of the *configurations* (a drawn configuration brings all its seeds),
drawn once (``seed``) and shared by every measure, so differences between measures are paired.
Every interval holds its own point estimate (widened to it where the percentiles miss it).
A draw where a statistic is undefined is left out of that statistic's interval (and of every
difference involving it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import SpecboundError
from . import stats as S
from .mutual_info import cmi

if TYPE_CHECKING:
    import pandas as pd

EMPTY_SET = "(none)"
#: The statistics with bootstrap intervals, and compared in differences.csv.
INTERVAL_STATS = ("kendall_tau", "psi", "tau_fixed_n", "psi_fixed_n")
#: The trivial baselines every measure is compared with (when present).
BASELINES = ("sample_size_only", "num_parameters", "num_parameters_per_sqrt_n")
#: The suffix of the bound forms log10 B - 1/2 log10 n.
PER_SQRT_N = "_per_sqrt_n"
DIFFERENCE_COLUMNS = ["measure", "versus", "statistic", "delta", "low", "high"]
#: ``bootstrap`` beyond this is refused (memory and time grow linearly with it).
MAX_BOOTSTRAP = 100_000
N_COLUMN = "train_size"


def size_axis(models: pd.DataFrame, axes: Sequence[str]) -> str | None:
    """The axis that sets the training-set size n (SPEC 10's Psi_n leaves it out): ``train_size``
    when it is an axis, else the first axis with >= 2 values whose every value has one n (such
    as a zoo's ``train_fraction``); None when no axis determines n."""
    import pandas as pd

    if N_COLUMN in axes:
        return N_COLUMN
    if N_COLUMN not in models.columns:
        return None
    n = pd.to_numeric(models[N_COLUMN], errors="coerce")
    known = n.notna()
    for a in axes:
        col = models.loc[known, a]
        if (
            col.nunique(dropna=False) >= 2
            and (n[known].groupby(col, dropna=False).nunique() == 1).all()
        ):
            return a
    return None


def correlation_columns(axes: Sequence[str]) -> list[str]:
    """Columns of correlation.csv, in order."""
    cols = ["measure", "n_models", "n_configurations"]
    for st in ("kendall_tau", "psi"):
        cols += [st, f"{st}_low", f"{st}_high"]
    for a in axes:
        cols += [f"psi_{a}", f"psi_{a}_groups", f"psi_{a}_pairs"]
    for st in ("tau_fixed_n", "psi_fixed_n"):
        cols += [st, f"{st}_low", f"{st}_high"]
    cols += ["cmi", "cmi_axes", "sign_error"]
    for a in axes:
        cols += [f"sign_error_{a}", f"sign_error_{a}_low", f"sign_error_{a}_high"]
        cols += [f"sign_error_{a}_pairs"]
    return [*cols, "sign_error_robust", "sign_error_robust_axis", "verdict"]


def axis_codes(table: pd.DataFrame, axes: Sequence[str]) -> np.ndarray:
    """Integer codes (n_models x n_axes) of the axis values; a missing value is a value too."""
    import pandas as pd

    cols = [
        np.asarray(pd.factorize(table[a], use_na_sentinel=False)[0], dtype=np.int64) for a in axes
    ]
    if not cols:
        return np.zeros((len(table), 0), dtype=np.int64)
    return np.stack(cols, axis=1)


def check_bootstrap(bootstrap: Any, seed: Any) -> tuple[int, int]:
    """``bootstrap`` in 0..MAX_BOOTSTRAP and ``seed`` >= 0, as ints (one-line errors)."""
    from ...validation import check_int

    b = check_int(bootstrap, "bootstrap", min=0, max=MAX_BOOTSTRAP)
    s = check_int(seed, "seed", min=0)
    return b, s


#: Bytes the bootstrap's configuration counts (draws x configurations) may take.
MAX_COUNT_BYTES = 1 << 30


def check_size(n_models: int, n_configurations: int, bootstrap: int) -> None:
    """Refuse, before any work, a study whose bootstrap counts would not fit in memory.

    Every pair statistic streams over blocks (memory bounded whatever the number of models);
    what grows is the draws x configurations table of counts (8 bytes each).
    """
    need = 8 * bootstrap * n_configurations
    if need > MAX_COUNT_BYTES:
        raise SpecboundError(
            f"bootstrap {bootstrap} x {n_configurations} configurations needs "
            f"{need / 2**30:.1f} GiB of counts (limit {MAX_COUNT_BYTES / 2**30:.0f} GiB); "
            f"lower bootstrap to {MAX_COUNT_BYTES // (8 * max(n_configurations, 1))} or fewer"
        )


def check_level(level: Any) -> float:
    """The interval level, a real strictly between 0 and 1."""
    from ...validation import check_real

    return check_real(level, "level", min=0.0, max=1.0, include_min=False, include_max=False)


def _fmt(v: float) -> str:
    return "undefined" if v != v else f"{v:.2f}"


def verdict(row: dict[str, Any], axes: Sequence[str]) -> str:
    """SPEC 10's verdict words from a correlation row.

    "predicts the gap" needs a tau or tau_fixed_n interval above 0 ("ranks the gap the wrong
    way" when one lies below 0); "fails on axis i" needs >= MIN_SIGN_PAIRS pairs on i and a
    sign-error interval above 0.5; otherwise "undetermined" with the counts.
    """
    if not row.get("n_models"):
        return "undefined: no model has a value of this measure"
    words = []
    for st, name in (("kendall_tau", "tau"), ("tau_fixed_n", "tau_n")):
        lo, hi = row.get(f"{st}_low", math.nan), row.get(f"{st}_high", math.nan)
        if lo > 0:
            words.append(f"predicts the gap ({name} interval [{_fmt(lo)}, {_fmt(hi)}] above 0)")
            break
        if hi < 0:
            words.append(
                f"ranks the gap the wrong way ({name} interval [{_fmt(lo)}, {_fmt(hi)}] below 0)"
            )
            break
    for a in axes:
        pairs = row.get(f"sign_error_{a}_pairs", 0) or 0
        lo = row.get(f"sign_error_{a}_low", math.nan)
        if pairs >= S.MIN_SIGN_PAIRS and lo > 0.5:
            hi = row.get(f"sign_error_{a}_high", math.nan)
            words.append(
                f"fails on axis {a} (sign-error interval [{_fmt(lo)}, {_fmt(hi)}] above 0.5 "
                f"over {int(pairs)} pairs)"
            )
    if words:
        return "; ".join(words)
    pairs = sum(int(row.get(f"sign_error_{a}_pairs", 0) or 0) for a in axes)
    return (
        f"undetermined: tau interval [{_fmt(row.get('kendall_tau_low', math.nan))}, "
        f"{_fmt(row.get('kendall_tau_high', math.nan))}] over {row['n_models']} models in "
        f"{row['n_configurations']} configurations; {pairs} one-axis pairs"
    )


def better_word(low: float, high: float) -> str:
    """ "better" / "worse" only when the difference's interval excludes 0, else "not shown"."""
    if low > 0:
        return "better"
    if high < 0:
        return "worse"
    return "not shown"


@dataclass
class Tables:
    """correlation.csv, differences.csv, and one line per statistic left undefined and why."""

    correlation: pd.DataFrame
    differences: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    n_configurations: int = 0


def correlation_study(
    models: pd.DataFrame,
    measures: Sequence[str],
    axes: Sequence[str],
    *,
    gap: str = "gap",
    bootstrap: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> Tables:
    """Every measure's row of correlation.csv and its differences (module doc)."""
    import pandas as pd

    axes = list(axes)
    for c in [gap, *axes, *measures]:
        if c not in models.columns:
            raise SpecboundError(f"the models table has no column '{c}'")
    bootstrap, seed = check_bootstrap(bootstrap, seed)
    level = check_level(level)
    g_all = pd.to_numeric(models[gap], errors="coerce").to_numpy(float)
    codes_all = axis_codes(models, axes)
    n_all = (
        pd.to_numeric(models[N_COLUMN], errors="coerce").to_numpy(float)
        if N_COLUMN in models.columns
        else None
    )
    size = size_axis(models, axes)
    n_axis = None if size is None else axes.index(size)
    config_all = S.row_ids(codes_all)
    n_conf = int(np.unique(config_all).size)
    check_size(len(models), n_conf, bootstrap)
    counts = S.bootstrap_config_counts(n_conf, bootstrap, seed) if bootstrap > 0 else None
    designs: dict[bytes, S.Design] = {}
    rows, draws = [], {}
    for name in measures:
        mu_all = pd.to_numeric(models[name], errors="coerce").to_numpy(float)
        ok = np.isfinite(mu_all) & np.isfinite(g_all)
        mu, g = mu_all[ok], g_all[ok]
        key = ok.tobytes()
        if key not in designs:  # groups and strata depend on the models only, not on mu
            designs[key] = S.make_design(
                codes_all[ok], None if n_all is None else n_all[ok], n_axis
            )
        design = designs[key]
        m = int(ok.sum())
        point = S.statistics(mu, g, design, np.ones((1, m)))
        boot: dict[str, np.ndarray] = {}
        if counts is not None and m > 0:
            cfg = config_all[ok]
            parts = [
                S.statistics(mu, g, design, counts[c][:, cfg], within=1.0 - 1.0 / n_conf)
                for c in S.draw_chunks(m, bootstrap)
            ]
            for st in INTERVAL_STATS:
                boot[st] = np.concatenate([getattr(p, st) for p in parts])
            for i, a in enumerate(axes):
                boot[f"sign_error_{a}"] = np.concatenate([p.sign_axes[i] for p in parts])
        draws[name] = boot
        cmi_min, cs = cmi(mu, g, codes_all[ok]) if m > 0 else (math.nan, None)
        row: dict[str, Any] = {
            "measure": name,
            "n_models": m,
            "n_configurations": int(np.unique(config_all[ok]).size),
        }
        for st in INTERVAL_STATS:
            row[st] = float(getattr(point, st)[0])
            lo, hi = (
                S.percentile_interval(boot[st], level, row[st]) if st in boot else (math.nan,) * 2
            )
            row[f"{st}_low"], row[f"{st}_high"] = lo, hi
        for i, a in enumerate(axes):
            row[f"psi_{a}"] = float(point.psi_axes[i][0])
            row[f"psi_{a}_groups"] = int(point.psi_groups[i][0])
            row[f"psi_{a}_pairs"] = int(point.psi_pairs[i][0])
            row[f"sign_error_{a}"] = float(point.sign_axes[i][0])
            key_a = f"sign_error_{a}"
            lo, hi = (
                S.percentile_interval(boot[key_a], level, row[key_a])
                if key_a in boot
                else (math.nan,) * 2
            )
            row[f"sign_error_{a}_low"], row[f"sign_error_{a}_high"] = lo, hi
            row[f"sign_error_{a}_pairs"] = int(point.sign_pairs[i][0])
        row["cmi"] = cmi_min
        row["cmi_axes"] = None if cs is None else "+".join(axes[i] for i in cs) if cs else EMPTY_SET
        row["sign_error"] = float(point.sign_error[0])
        robust, raxis = S.robust_sign_error(
            [float(x[0]) for x in point.sign_axes], [float(x[0]) for x in point.sign_pairs]
        )
        row["sign_error_robust"] = robust
        row["sign_error_robust_axis"] = S.TOO_FEW_PAIRS if raxis is None else axes[raxis]
        row["verdict"] = verdict(row, axes)
        rows.append(row)
    corr = pd.DataFrame(rows, columns=correlation_columns(axes))
    diffs = differences(corr, draws, level)
    notes = degenerate_notes(models, axes, n_all, config_all, bootstrap, corr)
    return Tables(corr, diffs, notes, int(np.unique(config_all).size))


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


def differences(
    corr: pd.DataFrame, draws: dict[str, dict[str, np.ndarray]], level: float = 0.95
) -> pd.DataFrame:
    """differences.csv: for every measure and statistic of ``INTERVAL_STATS``, delta = the
    measure's point estimate - the other's, with the percentile interval of the paired
    per-draw differences (widened to hold delta), against each baseline of ``BASELINES``
    present and the best other measure (the largest point estimate of that statistic among the
    others; for the fixed-n statistics the measure's own ``_per_sqrt_n`` form, or its raw form,
    is not an other: inside a stratum of equal n the two are the same ranking; nor is a measure
    whose point estimate and bootstrap draws equal this one's, such as both forms when n is
    constant)."""
    import pandas as pd

    names = list(corr["measure"])
    point = corr.set_index("measure")
    rows = []
    for name in names:
        for st in INTERVAL_STATS:
            others = [o for o in names if o != name]
            versus = [b for b in BASELINES if b in others]
            vals = {o: float(point.loc[o, st]) for o in others}
            twin = name.removesuffix(PER_SQRT_N) if name.endswith(PER_SQRT_N) else name + PER_SQRT_N
            candidates = [
                o
                for o in others
                if not (st.endswith("_fixed_n") and o == twin)
                and not _same_ranking(draws, point, name, o, st)
            ]
            defined = [o for o in candidates if not math.isnan(vals[o])]
            if defined:
                best = max(defined, key=lambda o: vals[o])  # first of equal values
                if best not in versus:
                    versus.append(best)
            for o in versus:
                delta = float(point.loc[name, st]) - vals[o]
                a, b = draws.get(name, {}).get(st), draws.get(o, {}).get(st)
                lo = hi = math.nan
                if a is not None and b is not None and not math.isnan(delta):
                    lo, hi = S.percentile_interval(a - b, level, delta)
                rows.append([name, o, st, delta, lo, hi])
    return pd.DataFrame(rows, columns=DIFFERENCE_COLUMNS)


def degenerate_notes(
    models: pd.DataFrame,
    axes: Sequence[str],
    n: np.ndarray | None,
    config: np.ndarray,
    bootstrap: int,
    corr: pd.DataFrame,
) -> list[str]:
    """One line per statistic that the design leaves undefined, and why."""
    notes = []
    if len(models) < 2:
        notes.append("one model: every statistic is undefined (pairs of models are needed)")
    if not axes:
        notes.append("no axes: psi, sign-error and CMI by axes are undefined; only tau remains")
    for a in axes:
        if models[a].nunique(dropna=False) < 2:
            notes.append(
                f"axis {a} has one value: psi_{a} and sign_error_{a} are undefined "
                "(nothing varies along it)"
            )
    k = int(np.unique(config).size)
    if axes and k == 1:
        notes.append(
            "one configuration: psi and sign-error are undefined and the bootstrap "
            "has only one configuration to draw (intervals are undefined)"
        )
    elif k == len(models) and len(models) > 1:
        notes.append(
            "every configuration has one model (no seeds): the bootstrap resamples single "
            "models, and seed-to-seed variation is not separated from the axes"
        )
    elif k > 1:
        single = int(np.sum(np.bincount(config) == 1))
        if single:
            notes.append(
                f"{single} of {k} configurations have one model (no seed pairs there); "
                "every statistic stays defined"
            )
    if n is None or not np.isfinite(n).any():
        notes.append(f"no {N_COLUMN}: no bound forms, sample_size_only, tau_fixed_n or psi_fixed_n")
    elif np.unique(n[np.isfinite(n)]).size < 2:
        notes.append(
            f"{N_COLUMN} is constant: sample_size_only, tau_fixed_n and psi_fixed_n are "
            "undefined (no strata of n to compare)"
        )
    elif size_axis(models, axes) is None:
        notes.append(
            f"{N_COLUMN} varies but no axis determines it: psi_fixed_n is undefined (its groups "
            "would not hold n fixed)"
        )
    if bootstrap == 0:
        notes.append("bootstrap 0: no intervals, so no verdict can go beyond 'undetermined'")
    if axes and len(corr) and (corr["sign_error_robust_axis"] == S.TOO_FEW_PAIRS).all():
        notes.append(
            f"no axis has >= {S.MIN_SIGN_PAIRS} one-axis pairs: the robust sign-error is "
            f"'{S.TOO_FEW_PAIRS}'"
        )
    return notes
