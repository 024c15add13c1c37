"""The rules beneath correlation.csv and differences.csv: the baselines compared, the checks of
the bootstrap settings, the configuration codes, a measure row's verdict words and the notes on
statistics a design leaves undefined (SPEC 10). The statistics and the tables' columns are the
protocol registry's (``studies.protocol``)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import SpecboundError
from ...validation import Interval, Options, Satisfies, check_int
from ..protocol import stats as S
from ..protocol import verdicts as V
from ..protocol.registry import REGISTRY
from ..protocol.statistics import KENDALL_TAU, TAU_FIXED_N

if TYPE_CHECKING:
    import pandas as pd

#: The trivial baselines every measure is compared with (when present).
BASELINES = ("sample_size_only", "num_parameters", "num_parameters_per_sqrt_n")
#: The suffix of the bound forms log10 B - 1/2 log10 n.
PER_SQRT_N = "_per_sqrt_n"
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


def axis_codes(table: pd.DataFrame, axes: Sequence[str]) -> np.ndarray:
    """Integer codes (n_models x n_axes) of the axis values; a missing value is a value too."""
    import pandas as pd

    cols = [
        np.asarray(pd.factorize(table[a], use_na_sentinel=False)[0], dtype=np.int64) for a in axes
    ]
    if not cols:
        return np.zeros((len(table), 0), dtype=np.int64)
    return np.stack(cols, axis=1)


def _bootstrap_draws(value: Any, name: str, zero: bool) -> int:
    """``value`` as an int in MIN_BOOTSTRAP..MAX_BOOTSTRAP (``verdicts.check_bootstrap``), or 0
    when ``zero`` (no intervals: point estimates only); one-line errors naming ``name``."""
    b = check_int(value, name, min=0, max=MAX_BOOTSTRAP)
    return b if zero and b == 0 else V.check_bootstrap(b, name)


#: ``bootstrap``'s constraints (:mod:`specbound.validation`) where draws are needed
#: (``correlate``): an integer in MIN_BOOTSTRAP..MAX_BOOTSTRAP (protocol v3 refuses fewer).
BOOTSTRAP = (
    Satisfies(
        functools.partial(_bootstrap_draws, zero=False),
        f"an integer in {V.MIN_BOOTSTRAP}..{MAX_BOOTSTRAP}",
        named=True,
    ),
)
#: ... and where 0 (point estimates only) is accepted too (``correlation_study``, ``pool``).
BOOTSTRAP_OR_ZERO = (
    Satisfies(
        functools.partial(_bootstrap_draws, zero=True),
        f"0 or an integer in {V.MIN_BOOTSTRAP}..{MAX_BOOTSTRAP}",
        named=True,
    ),
)
#: ``seed``: an integer >= 0.
SEED = (Interval(int, 0),)
#: ``level``: the interval level, a real strictly between 0 and 1.
LEVEL = (Interval(float, 0.0, 1.0, closed="neither"),)
#: ``primary``: auto or a family's name (``REGISTRY.primary_choices()``).
PRIMARY = (Options(*REGISTRY.primary_choices()),)


#: Bytes the bootstrap's configuration counts (draws x configurations) may take.
MAX_COUNT_BYTES = 1 << 30


def interval_statistics() -> list[str]:
    """The compared statistics drawn by resampling configurations (correlate.json's
    ``interval_statistics``)."""
    return [s.name for s in REGISTRY.compared() if s.bootstrap == "configurations"]


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


def fmt(v: float) -> str:
    return "undefined" if v != v else f"{v:.2f}"


def missing_clause(missing: Sequence[str]) -> str:
    """``"; missing 2 of the grid: a, b"`` for configurations of the grid without a usable
    model, "" when none is missing."""
    if not missing:
        return ""
    return f"; missing {len(missing)} of the grid: {', '.join(missing)}"


def verdict(
    row: dict[str, Any],
    axes: Sequence[str],
    *,
    bootstrap: int | None = None,
    n_strata_ok: int | None = None,
    missing: Sequence[str] = (),
) -> str:
    """SPEC 10's verdict words from a correlation row.

    "predicts the gap" needs a tau or tau_fixed_n interval above 0 ("ranks the gap the wrong
    way" when one lies below 0); "fails on axis i" needs >= MIN_SIGN_PAIRS pairs on i and a
    sign-error interval above 0.5; otherwise "undetermined" with the counts. With
    ``bootstrap`` (protocol v3's minimum evidence), any verdict word needs >= 8 configurations
    and ``bootstrap`` >= 1000 ("insufficient evidence: ..." with the counts otherwise), and a
    tau_fixed_n claim needs ``n_strata_ok`` >= 2 strata of n with >= 3 configurations.
    ``missing``: the grid's configurations without a usable model, named after the words.
    """
    if not row.get("n_models"):
        return "undefined: no model has a value of this measure"
    tail = missing_clause(missing)
    counts = f"{row['n_models']} models in {row['n_configurations']} configurations"
    if bootstrap is not None:
        lacks = V.insufficient(
            bootstrap=bootstrap,
            n_configurations=int(row.get("n_configurations") or 0),
            statistic=KENDALL_TAU.name,
        )
        if lacks:
            return f"{V.INSUFFICIENT}: {', '.join(lacks)} ({counts}){tail}"
    words = []
    stats_ = [(KENDALL_TAU.name, "tau")]
    if bootstrap is None or (n_strata_ok or 0) >= V.MIN_STRATA:
        stats_.append((TAU_FIXED_N.name, "tau_n"))
    for st, name in stats_:
        lo, hi = row.get(f"{st}_low", math.nan), row.get(f"{st}_high", math.nan)
        if lo > 0:
            words.append(f"predicts the gap ({name} interval [{fmt(lo)}, {fmt(hi)}] above 0)")
            break
        if hi < 0:
            words.append(
                f"ranks the gap the wrong way ({name} interval [{fmt(lo)}, {fmt(hi)}] below 0)"
            )
            break
    for a in axes:
        pairs = row.get(f"sign_error_{a}_pairs", 0) or 0
        lo = row.get(f"sign_error_{a}_low", math.nan)
        if pairs >= S.MIN_SIGN_PAIRS and lo > 0.5:
            hi = row.get(f"sign_error_{a}_high", math.nan)
            words.append(
                f"fails on axis {a} (sign-error interval [{fmt(lo)}, {fmt(hi)}] above 0.5 "
                f"over {int(pairs)} pairs)"
            )
    if words:
        return "; ".join(words) + tail
    pairs = sum(int(row.get(f"sign_error_{a}_pairs", 0) or 0) for a in axes)
    return (
        f"undetermined: tau interval [{fmt(row.get(f'{KENDALL_TAU.name}_low', math.nan))}, "
        f"{fmt(row.get(f'{KENDALL_TAU.name}_high', math.nan))}] over {counts}; {pairs} "
        "one-axis pairs" + tail
    )


def better_word(low: float, high: float) -> str:
    """ "better" / "worse" only when the difference's interval excludes 0, else "not shown"
    (protocol v2's rule; differences.csv's ``verdict`` column is protocol v3's)."""
    if low > 0:
        return "better"
    if high < 0:
        return "worse"
    return "not shown"


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
        notes.append(
            "bootstrap 0: no intervals and no p-values, so every verdict is 'insufficient evidence'"
        )
    if axes and len(corr) and (corr["sign_error_robust_axis"] == S.TOO_FEW_PAIRS).all():
        notes.append(
            f"no axis has >= {S.MIN_SIGN_PAIRS} one-axis pairs: the robust sign-error is "
            f"'{S.TOO_FEW_PAIRS}'"
        )
    return notes
