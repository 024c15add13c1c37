"""One measure's row of correlation.csv: the steps of :func:`.table.correlation_study`.

:func:`setup` derives what every measure shares (the gap, the configurations, the primary
statistic, the bootstrap counts drawn once from ``seed``), checking the size of the counts before
drawing them; :func:`measure_row` evaluates one measure over the models where it and the gap are
finite: its row, its bootstrap draws (paired across measures: the same counts), its draws of the
primary statistic, and what the verdicts need of it (:class:`Measure`). The statistics and their
rules are the ``table`` module doc's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..protocol import arch as A
from ..protocol import stats as S
from ..protocol import verdicts as V
from ..protocol.families import choose_family
from ..protocol.registry import REGISTRY, Statistic, ZooFacts
from ..protocol.sample import Sample
from .rules import N_COLUMN, axis_codes, check_size, size_axis, verdict

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Measure:
    """What the verdicts need of one measure beside its draws: its configurations, per
    statistic with strata (``Statistic.strata``) how many have enough configurations, and per
    compared statistic why it cannot see what the statistic measures ("" when it can)."""

    n_configurations: int
    strata: dict[str, int]
    blind: dict[str, str]

    @property
    def n_strata_ok(self) -> int:
        """Strata of n with >= 3 configurations (the tau_fixed_n evidence)."""
        return self.strata.get("tau_fixed_n", 0)


@dataclass
class Setup:
    """What every measure of one study shares (:func:`setup`)."""

    axes: list[str]
    level: float
    bootstrap: int
    missing: list[str]
    g_all: np.ndarray
    codes_all: np.ndarray
    n_all: np.ndarray | None
    n_axis: int | None
    config_all: np.ndarray
    n_conf: int
    pstat: str
    #: the primary contrasts, ``(id, measure, versus)``
    contrasts: tuple[tuple[str, str, str], ...]
    primary_names: list[str]
    p_boot: int
    counts: np.ndarray | None
    #: the primary statistic's counts under each of ``V.SEEDS`` seeds (seed, seed + 1, ...)
    p_counts: list[np.ndarray]
    #: per model its cell id (depth x width x n), None without depth and width columns
    cell_all: np.ndarray | None = None
    #: tau_arch's counts (configurations drawn within cells), None without cells
    arch_counts: np.ndarray | None = None
    #: the family's name (``primary``'s value that chose it)
    family: str = "standard"
    #: groups and strata depend on the models only, not on the measure: one per set of models
    designs: dict[bytes, S.Design] = field(default_factory=dict)


@dataclass
class Evaluated:
    """One measure's row, its bootstrap draws per statistic, its draws of the primary
    statistic (None when it has none) and its :class:`Measure`."""

    row: dict[str, Any]
    boot: dict[str, np.ndarray]
    #: the primary statistic's draws under each seed (empty when it has none)
    p_draw: list[np.ndarray]
    info: Measure


def setup(
    models: pd.DataFrame,
    measures: Sequence[str],
    axes: list[str],
    *,
    gap: str,
    bootstrap: int,
    seed: int,
    level: float,
    missing: list[str],
    primary: str = "auto",
    design: str | None = None,
) -> Setup:
    """What every measure shares; raises (``check_size``) before drawing counts too large.
    ``bootstrap``, ``seed``, ``level`` and ``primary`` (``REGISTRY.primary_choices()``) are already
    checked."""
    import pandas as pd

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
    n_sizes = 0 if n_all is None else int(np.unique(n_all[np.isfinite(n_all)]).size)
    cell_all = cells_of(models)
    cells_ok = 0 if cell_all is None else _cells_ok(cell_all, config_all)
    facts = ZooFacts(n_sizes, cells_ok, cell_all is not None, design)
    family = choose_family(primary, facts)
    pstat = family.statistic(facts)
    contrasts = REGISTRY.contrasts_of(family)
    primary_names = [m for c in contrasts if c[1] in measures and c[2] in measures for m in c[1:]]
    p_boot = max(bootstrap, V.PRIMARY_BOOTSTRAP) if bootstrap > 0 and primary_names else 0
    check_size(len(models), n_conf, max(bootstrap, V.SEEDS * p_boot))
    counts = S.bootstrap_config_counts(n_conf, bootstrap, seed) if bootstrap > 0 else None
    cell_of_config = None
    if cell_all is not None:
        cell_of_config = np.zeros(n_conf, dtype=np.int64)
        cell_of_config[config_all] = cell_all
    arch_counts = (
        A.cell_config_counts(cell_of_config, bootstrap, seed)
        if bootstrap > 0 and cell_of_config is not None
        else None
    )
    p_kind = REGISTRY.statistics[pstat].bootstrap
    p_counts = []
    for s in range(V.SEEDS if p_boot > 0 else 0):
        if p_kind == "cells":
            assert cell_of_config is not None
            p_counts.append(A.cell_config_counts(cell_of_config, p_boot, seed + s))
        else:
            p_counts.append(S.bootstrap_config_counts(n_conf, p_boot, seed + s))
    return Setup(
        axes, level, bootstrap, missing, g_all, codes_all, n_all, n_axis, config_all, n_conf,
        pstat, contrasts, primary_names, p_boot, counts, p_counts, cell_all, arch_counts,
        family.name,
    )  # fmt: skip


def cells_of(models: pd.DataFrame) -> np.ndarray | None:
    """Each model's cell of tau_arch: one id per distinct (depth, width, n) (``A.CELL_AXES``
    and the training-set size, a model without n in a cell of its own kind); None when the
    models table lacks depth or width."""
    if not all(a in models.columns for a in A.CELL_AXES):
        return None
    cols = [*A.CELL_AXES] + ([N_COLUMN] if N_COLUMN in models.columns else [])
    return S.row_ids(axis_codes(models, cols))


def _cells_ok(cell: np.ndarray, config: np.ndarray) -> int:
    """Cells holding >= ``V.MIN_STRATUM_CONFIGURATIONS`` configurations."""
    return sum(
        int(np.unique(config[cell == c]).size >= V.MIN_STRATUM_CONFIGURATIONS)
        for c in np.unique(cell)
    )


def measure_row(models: pd.DataFrame, name: str, su: Setup) -> Evaluated:
    """The measure ``name`` over the models where it and the gap are finite: every statistic
    of the registry (its point cells, and its draws where it has an interval and the study
    draws), the primary statistic's draws under each seed, the row's verdict."""
    import pandas as pd

    mu_all = pd.to_numeric(models[name], errors="coerce").to_numpy(float)
    ok = np.isfinite(mu_all) & np.isfinite(su.g_all)
    key = ok.tobytes()
    if key not in su.designs:
        su.designs[key] = S.make_design(
            su.codes_all[ok], None if su.n_all is None else su.n_all[ok], su.n_axis
        )
    cfg = su.config_all[ok]
    sample = Sample(
        mu_all[ok], su.g_all[ok], su.codes_all[ok], cfg, su.designs[key], su.axes, su.n_conf,
        None if su.cell_all is None else A.arch_cells(su.cell_all[ok]), su.level,
    )  # fmt: skip
    row: dict[str, Any] = {
        "measure": name,
        "n_models": sample.size,
        "n_configurations": int(np.unique(cfg).size),
    }
    boot: dict[str, np.ndarray] = {}
    info = Measure(row["n_configurations"], {}, {})
    for st in REGISTRY.statistics.values():
        row.update(st.point(sample))
        counts = _counts(st, su)
        if counts is not None and sample.size > 0:
            assert st.draws is not None
            boot.update(st.draws(sample, counts))
        for stem in st.interval_stems(su.axes):
            row[f"{stem}_low"], row[f"{stem}_high"] = _interval(boot, stem, su.level, row[stem])
        if st.compared:
            info.blind[st.name] = "" if st.blind is None else st.blind(sample)
        if st.strata is not None:
            info.strata[st.name] = st.strata(sample)
    p_draw: list[np.ndarray] = []
    if sample.size > 0 and name in su.primary_names:
        draws = REGISTRY.statistics[su.pstat].draws
        assert draws is not None
        p_draw = [draws(sample, counts)[su.pstat] for counts in su.p_counts]
    row["verdict"] = verdict(
        row, su.axes, bootstrap=su.bootstrap, n_strata_ok=info.n_strata_ok, missing=su.missing
    )
    return Evaluated(row, boot, p_draw, info)


def _counts(st: Statistic, su: Setup) -> np.ndarray | None:
    """The counts of ``st``'s kind of bootstrap (None: no interval, or no draws)."""
    if st.bootstrap == "configurations":
        return su.counts
    if st.bootstrap == "cells":
        return su.arch_counts
    return None


def _interval(
    boot: dict[str, np.ndarray], key: str, level: float, point: float
) -> tuple[float, float]:
    """The percentile interval of ``boot[key]`` holding ``point``; NaN without draws."""
    return S.percentile_interval(boot[key], level, point) if key in boot else (math.nan,) * 2
