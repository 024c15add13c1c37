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
    p_counts: np.ndarray | None
    #: groups and strata depend on the models only, not on the measure: one per set of models
    designs: dict[bytes, S.Design] = field(default_factory=dict)


@dataclass
class Evaluated:
    """One measure's row, its bootstrap draws per statistic, its draws of the primary
    statistic (None when it has none) and its :class:`Measure`."""

    row: dict[str, Any]
    boot: dict[str, np.ndarray]
    p_draw: np.ndarray | None
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
) -> Setup:
    """What every measure shares; raises (``check_size``) before drawing counts too large.
    ``bootstrap``, ``seed`` and ``level`` are already checked."""
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
    pstat = V.primary_statistic(n_sizes)
    primary_names = [
        m for c in V.PRIMARY_CONTRASTS if c[1] in measures and c[2] in measures for m in c[1:]
    ]
    p_boot = max(bootstrap, V.PRIMARY_BOOTSTRAP) if bootstrap > 0 and primary_names else 0
    check_size(len(models), n_conf, max(bootstrap, p_boot))
    counts = S.bootstrap_config_counts(n_conf, bootstrap, seed) if bootstrap > 0 else None
    p_counts = S.bootstrap_config_counts(n_conf, p_boot, seed) if p_boot > 0 else None
    return Setup(
        axes, level, bootstrap, missing, g_all, codes_all, n_all, n_axis, config_all, n_conf,
        pstat, primary_names, p_boot, counts, p_counts,
    )  # fmt: skip


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
    p_draw = None
    if su.p_counts is not None and m > 0 and name in su.primary_names:
        parts = _boot(mu, g, design, su.p_counts, cfg, su.n_conf)
        p_draw = np.concatenate([getattr(p, su.pstat) for p in parts])
    row: dict[str, Any] = {
        "measure": name,
        "n_models": m,
        "n_configurations": int(np.unique(cfg).size),
    }
    info = Measure(row["n_configurations"], _strata_ok(design), _blind(mu, design, su.axes))
    _point_columns(row, point, boot, su)
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
