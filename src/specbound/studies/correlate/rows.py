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

from ...errors import SpecboundError
from . import arch as A
from . import stats as S
from . import verdicts as V
from .mutual_info import cmi, cmi_draws
from .rules import (
    EMPTY_SET,
    INTERVAL_STATS,
    N_COLUMN,
    axis_codes,
    check_size,
    size_axis,
    verdict,
)

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Measure:
    """What the verdicts need of one measure beside its draws: its configurations, its strata
    of n with >= 3 configurations, and per statistic why it cannot see what the statistic
    measures ("" when it can)."""

    n_configurations: int
    n_strata_ok: int
    blind: dict[str, str]
    #: cells of depth x width x n with >= 3 configurations (the tau_arch evidence)
    n_cells_ok: int = 0


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
    primary_names: list[str]
    p_boot: int
    counts: np.ndarray | None
    #: the primary statistic's counts under each of ``V.SEEDS`` seeds (seed, seed + 1, ...)
    p_counts: list[np.ndarray]
    #: per model its cell id (depth x width x n), None without depth and width columns
    cell_all: np.ndarray | None = None
    #: tau_arch's counts (configurations drawn within cells), None without cells
    arch_counts: np.ndarray | None = None
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
) -> Setup:
    """What every measure shares; raises (``check_size``) before drawing counts too large.
    ``bootstrap``, ``seed``, ``level`` and ``primary`` (``V.PRIMARY_CHOICES``) are already
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
    pstat = _choose(primary, n_sizes, cells_ok, cell_all is not None)
    primary_names = [
        m
        for c in V.primary_contrasts(pstat)
        if c[1] in measures and c[2] in measures
        for m in c[1:]
    ]
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
    p_counts = []
    for s in range(V.SEEDS if p_boot > 0 else 0):
        if pstat == V.TAU_ARCH:
            assert cell_of_config is not None
            p_counts.append(A.cell_config_counts(cell_of_config, p_boot, seed + s))
        else:
            p_counts.append(S.bootstrap_config_counts(n_conf, p_boot, seed + s))
    return Setup(
        axes, level, bootstrap, missing, g_all, codes_all, n_all, n_axis, config_all, n_conf,
        pstat, primary_names, p_boot, counts, p_counts, cell_all, arch_counts,
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


def _choose(primary: str, n_sizes: int, cells_ok: int, has_cells: bool) -> str:
    """The primary statistic: ``tau_arch`` for ``primary`` "arch" (refused without depth and
    width columns) or, with "auto", for a zoo ``V.designed_for_arch``; else tau_fixed_n or tau
    (``V.primary_statistic``)."""
    if primary == "arch" and not has_cells:
        raise SpecboundError(
            f"primary arch needs {' and '.join(A.CELL_AXES)} columns in the models table "
            "(the cells of tau_arch); use primary standard"
        )
    if primary == "arch" or (
        primary == "auto" and has_cells and V.designed_for_arch(n_sizes, cells_ok)
    ):
        return V.TAU_ARCH
    return V.primary_statistic(n_sizes)


def measure_row(models: pd.DataFrame, name: str, su: Setup) -> Evaluated:
    """The measure ``name`` over the models where it and the gap are finite."""
    import pandas as pd

    mu_all = pd.to_numeric(models[name], errors="coerce").to_numpy(float)
    ok = np.isfinite(mu_all) & np.isfinite(su.g_all)
    mu, g, codes, cfg = mu_all[ok], su.g_all[ok], su.codes_all[ok], su.config_all[ok]
    key = ok.tobytes()
    if key not in su.designs:
        su.designs[key] = S.make_design(
            codes, None if su.n_all is None else su.n_all[ok], su.n_axis
        )
    design = su.designs[key]
    m = int(ok.sum())
    point = S.statistics(mu, g, design, np.ones((1, m)))
    cmi_min, cs = cmi(mu, g, codes) if m > 0 else (math.nan, None)
    boot, cmi_interval = _draws(mu, g, codes, design, cfg, cmi_min, su)
    arch = None if su.cell_all is None else A.arch_cells(su.cell_all[ok])
    p_draw: list[np.ndarray] = []
    if m > 0 and name in su.primary_names:
        for counts in su.p_counts:
            if su.pstat == V.TAU_ARCH:
                assert arch is not None
                p_draw.append(_arch_boot(mu, g, arch, counts, cfg))
            else:
                parts = _boot(mu, g, design, counts, cfg, su.n_conf)
                p_draw.append(np.concatenate([getattr(p, su.pstat) for p in parts]))
    row: dict[str, Any] = {
        "measure": name,
        "n_models": m,
        "n_configurations": int(np.unique(cfg).size),
    }
    info = Measure(row["n_configurations"], _strata_ok(design), _blind(mu, design, su.axes))
    _point_columns(row, point, boot, su)
    _arch_columns(row, info, mu, g, arch, cfg, boot, su)
    row["cmi"] = cmi_min
    row["cmi_low"], row["cmi_high"] = cmi_interval
    axes = su.axes
    row["cmi_axes"] = None if cs is None else "+".join(axes[i] for i in cs) if cs else EMPTY_SET
    row["sign_error"] = float(point.sign_error[0])
    robust, raxis = S.robust_sign_error(
        [float(x[0]) for x in point.sign_axes], [float(x[0]) for x in point.sign_pairs]
    )
    row["sign_error_robust"] = robust
    row["sign_error_robust_axis"] = S.TOO_FEW_PAIRS if raxis is None else axes[raxis]
    row["verdict"] = verdict(
        row, axes, bootstrap=su.bootstrap, n_strata_ok=info.n_strata_ok, missing=su.missing
    )
    return Evaluated(row, boot, p_draw, info)


def _draws(
    mu: np.ndarray,
    g: np.ndarray,
    codes: np.ndarray,
    design: S.Design,
    cfg: np.ndarray,
    cmi_min: float,
    su: Setup,
) -> tuple[dict[str, np.ndarray], tuple[float, float]]:
    """The bootstrap draws of every interval statistic and per-axis sign-error, and the CMI's
    interval: none and NaN without counts or models."""
    boot: dict[str, np.ndarray] = {}
    if su.counts is None or mu.size == 0:
        return boot, (math.nan, math.nan)
    parts = _boot(mu, g, design, su.counts, cfg, su.n_conf)
    for st in INTERVAL_STATS:
        boot[st] = np.concatenate([getattr(p, st) for p in parts])
    for i, a in enumerate(su.axes):
        boot[f"sign_error_{a}"] = np.concatenate([p.sign_axes[i] for p in parts])
    draws = cmi_draws(mu, g, codes, su.counts[:, cfg])
    return boot, S.percentile_interval(draws, su.level, cmi_min)


def _interval(
    boot: dict[str, np.ndarray], key: str, level: float, point: float
) -> tuple[float, float]:
    """The percentile interval of ``boot[key]`` holding ``point``; NaN without draws."""
    return S.percentile_interval(boot[key], level, point) if key in boot else (math.nan,) * 2


def _point_columns(
    row: dict[str, Any], point: S.Stats, boot: dict[str, np.ndarray], su: Setup
) -> None:
    """The interval statistics and the per-axis psi and sign-error columns of ``row``."""
    for st in INTERVAL_STATS:
        row[st] = float(getattr(point, st)[0])
        row[f"{st}_low"], row[f"{st}_high"] = _interval(boot, st, su.level, row[st])
    for i, a in enumerate(su.axes):
        row[f"psi_{a}"] = float(point.psi_axes[i][0])
        row[f"psi_{a}_groups"] = int(point.psi_groups[i][0])
        row[f"psi_{a}_pairs"] = int(point.psi_pairs[i][0])
        key_a = f"sign_error_{a}"
        row[key_a] = float(point.sign_axes[i][0])
        row[f"sign_error_{a}_low"], row[f"sign_error_{a}_high"] = _interval(
            boot, key_a, su.level, row[key_a]
        )
        row[f"sign_error_{a}_pairs"] = int(point.sign_pairs[i][0])


def _arch_boot(
    mu: np.ndarray,
    g: np.ndarray,
    cells: tuple[np.ndarray, ...],
    counts: np.ndarray,
    cfg: np.ndarray,
) -> np.ndarray:
    """tau_arch on every resample of ``counts`` (configurations drawn within cells), in chunks."""
    return np.concatenate(
        [
            A.tau_arch(mu, g, cells, cfg, counts[c][:, cfg], resample=True).tau_arch
            for c in S.draw_chunks(mu.size, counts.shape[0])
        ]
    )


def _arch_columns(
    row: dict[str, Any],
    info: Measure,
    mu: np.ndarray,
    g: np.ndarray,
    cells: tuple[np.ndarray, ...] | None,
    cfg: np.ndarray,
    boot: dict[str, np.ndarray],
    su: Setup,
) -> None:
    """tau_arch, its interval (configurations resampled within cells), the cells used and at the
    ceiling; its draws into ``boot``, its evidence and blindness into ``info``."""
    if cells is None or mu.size == 0:
        row["tau_arch"] = row["tau_arch_low"] = row["tau_arch_high"] = math.nan
        row["tau_arch_cells"] = row["tau_arch_ceiling"] = 0
        info.blind["tau_arch"] = "without depth and width there are no cells of tau_arch"
        return
    pt = A.tau_arch(mu, g, cells, cfg, np.ones((1, mu.size)))
    row["tau_arch"] = float(pt.tau_arch[0])
    row["tau_arch_cells"], row["tau_arch_ceiling"] = pt.cells_used, pt.cells_at_ceiling
    if su.arch_counts is not None:
        boot["tau_arch"] = _arch_boot(mu, g, cells, su.arch_counts, cfg)
    row["tau_arch_low"], row["tau_arch_high"] = _interval(
        boot, "tau_arch", su.level, row["tau_arch"]
    )
    info.n_cells_ok = sum(
        int(np.unique(cfg[idx]).size >= V.MIN_STRATUM_CONFIGURATIONS) for idx in cells
    )
    sized = [idx for idx in cells if idx.size >= 2]
    info.blind["tau_arch"] = (
        "constant within every cell of depth x width x n (at the rank ceiling)"
        if sized and all(np.unique(mu[idx]).size == 1 for idx in sized)
        else ""
    )


def _blind(mu: np.ndarray, design: S.Design, axes: Sequence[str]) -> dict[str, str]:
    """Per statistic of ``INTERVAL_STATS``: why ``mu`` is blind to it, or ""."""

    def constant(groups: Sequence[np.ndarray]) -> bool:
        sized = [grp for grp in groups if grp.size >= 2]
        return bool(sized) and all(np.unique(mu[grp]).size == 1 for grp in sized)

    out = {st: "" for st in INTERVAL_STATS}
    if mu.size >= 2 and np.unique(mu).size == 1:
        out["kendall_tau"] = "constant on every model"
    if design.strata is not None and constant(design.strata):
        out["tau_fixed_n"] = "constant within every value of n"
    for st in ("psi", "psi_fixed_n"):
        for a, groups in enumerate(design.groups):
            if st == "psi_fixed_n" and a == design.n_axis:
                continue
            if constant(groups):
                out[st] = f"constant on every group of axis {axes[a]}"
                break
    return out


def _strata_ok(design: S.Design) -> int:
    if design.strata is None:
        return 0
    return sum(
        int(np.unique(design.config[idx]).size >= V.MIN_STRATUM_CONFIGURATIONS)
        for idx in design.strata
    )


def _boot(
    mu: np.ndarray,
    g: np.ndarray,
    design: S.Design,
    counts: np.ndarray,
    cfg: np.ndarray,
    n_conf: int,
) -> list[S.Stats]:
    """The statistics on every resample of ``counts`` (draws x configurations), in chunks."""
    return [
        S.statistics(mu, g, design, counts[c][:, cfg], within=1.0 - 1.0 / n_conf)
        for c in S.draw_chunks(mu.size, counts.shape[0])
    ]
