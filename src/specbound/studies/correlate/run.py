"""The correlate driver: manifest -> plan (one job per model) -> ``engine.map`` -> tables.

Output schema (protocol v3; what ``write_tables`` writes and the report and terminal render):

``models.csv``: one row per analyzed model, columns in order
    ``model``, the axes, the other manifest columns, ``gap``, ``converged``, the measures
    (SPEC 9 names in registry order, then ``<m>_per_sqrt_n`` for the bound-type measures and
    ``sample_size_only`` when ``train_size`` is known / varies), then
    with ``data_measures`` SPEC 12's data measures (registry order; ``correlate.data``), then
    ``spectrum_adaptive_share_p0`` and ``spectrum_adaptive_ceiling_gap`` (the rank-ceiling
    diagnosis, SPEC 10; empty when the analysis does not provide them).
``correlation.csv``: one row per measure (``table.correlation_columns(axes)``):
    ``measure, n_models, n_configurations, kendall_tau, kendall_tau_low, kendall_tau_high,
    psi, psi_low, psi_high``, per axis a ``psi_<a>, psi_<a>_groups, psi_<a>_pairs``, then
    ``tau_fixed_n, tau_fixed_n_low, tau_fixed_n_high, psi_fixed_n, psi_fixed_n_low,
    psi_fixed_n_high, cmi, cmi_low, cmi_high, cmi_axes, sign_error``, per axis a ``sign_error_<a>,
    sign_error_<a>_low, sign_error_<a>_high, sign_error_<a>_pairs``, then
    ``sign_error_robust`` (empty when no axis has >= 10 pairs), ``sign_error_robust_axis``
    (the axis, or the words ``too few pairs``), ``verdict`` (SPEC 10's words: "predicts the
    gap (...)", "ranks the gap the wrong way (...)", "fails on axis a (...)" joined by "; ",
    or "undetermined: ..." with the counts; "insufficient evidence: ..." with fewer than 8
    configurations or 1000 draws; the grid's configurations without a usable model named
    after it). ``cmi_axes``: the S attaining the minimum, axes
    joined by "+", ``(none)`` for the empty set. Undefined numbers are empty cells.
``differences.csv``: ``measure, versus, statistic, delta, low, high, family, contrast, B, p,
    p_holm, q_bh, verdict, evidence``. First the primary rows (``family`` primary,
    ``contrast`` P1/P2/P3: spectrum_adaptive - norm_based, spectrum_adaptive -
    num_parameters, norm_based - num_parameters on ``tau_fixed_n`` when n takes >= 2 values,
    else ``kendall_tau``; max(bootstrap, 10000) draws from the same seed), then the
    exploratory ones: ``statistic`` each of ``kendall_tau, psi, tau_fixed_n, psi_fixed_n``;
    ``versus`` each of ``sample_size_only``, ``num_parameters``, ``num_parameters_per_sqrt_n``
    present and the best other measure by that statistic (once). delta = point(measure) -
    point(versus), [low, high] the paired bootstrap interval, ``B`` the draws where the
    difference is defined, ``p`` its bootstrap p-value, ``p_holm`` (primary rows: Holm over
    them) or ``q_bh`` (exploratory rows: Benjamini-Hochberg over them), ``verdict`` one of
    ``verdicts.VERDICTS`` and ``evidence`` the counts beside it (``table.with_verdicts``).
``skipped.csv``: ``model, reason``.
``correlate.json``: ``protocol`` (3), ``manifest, task, gap, axes, measures, n_listed,
    n_models, n_configurations, n_skipped, n_unconverged, include_unconverged, bootstrap,
    bootstrap_unit`` ("configuration"), ``seed, level, min_sign_pairs, baselines,
    interval_statistics``, ``rank_ceiling`` (object: ``threshold, n_models, n_at_ceiling,
    median_ceiling_gap, cells, n_cells, r2_spectrum_adaptive, r2_norm_based, statement``),
    ``primary_statistic, primary_bootstrap, primary_contrasts, alpha, min_configurations,
    min_bootstrap_verdict, missing`` (the number of the grid's configurations without a usable
    model: missing, skipped or unconverged; 0 without a zoo.json grid),
    ``missing_configurations`` (their names, ``axis=value`` joined by spaces) and
    ``notes`` (one line each: defaults taken, statistics left undefined and why).

Labels (axis names and values, measure names) are user text: draw them as plain text (no TeX)
and escape them in HTML.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from ...errors import SpecboundError
from ..gap import GAP_KINDS, default_kind, gap_values, normalize_kind
from . import manifest as M
from . import table as T
from . import verdicts as V
from .ceiling import CEILING_COLUMNS, rank_ceiling
from .jobs import (  # noqa: F401 (re-exported)
    Plan,
    _add_data_measures,
    _grid_key,
    _values_of,
    missing_configurations,
    model_worker,
    plan,
)

if TYPE_CHECKING:
    import pandas as pd

    from ...engines.base import Engine

SKIPPED_COLUMNS = ["model", "reason"]
#: Output columns of models.csv that are not measures (a manifest may not use these names).
OUTPUT_COLUMNS = ("gap", "sample_size_only", *CEILING_COLUMNS)

from .jobs import Analyzer  # noqa: E402


def measure_registry() -> tuple[list[str], dict[str, bool]]:
    """(SPEC 9 measure names in order, {bound-form measure: value already log10})."""
    from ...measures import get_measure, measure_names

    names = measure_names()
    forms = {n: get_measure(n).log10 for n in names if get_measure(n).bound_form}
    return names, forms


def output_columns() -> list[str]:
    """Every column correlate adds to models.csv (what a manifest column may not be named)."""
    names, forms = measure_registry()
    return [*names, *(f"{n}_per_sqrt_n" for n in forms), *OUTPUT_COLUMNS]


def add_bound_forms(
    table: pd.DataFrame, measures: Sequence[str], forms: dict[str, bool]
) -> list[str]:
    """Add ``<name>_per_sqrt_n`` = log10 value - 1/2 log10 n and ``sample_size_only``.

    Only when ``train_size`` is a column with a value for some model; ``sample_size_only``
    (-1/2 log10 n) only when n varies. Returns the names of the added measures.
    """
    import pandas as pd

    if "train_size" not in table.columns:
        return []
    n = pd.to_numeric(table["train_size"], errors="coerce").to_numpy(float)
    n = np.where(n > 0, n, np.nan)
    if not np.isfinite(n).any():
        return []
    half = 0.5 * np.log10(n)
    added = []
    for name in measures:
        if name not in forms or name not in table.columns:
            continue
        v = pd.to_numeric(table[name], errors="coerce").to_numpy(float)
        if not forms[name]:
            with np.errstate(divide="ignore", invalid="ignore"):
                v = np.where(v > 0, np.log10(np.where(v > 0, v, 1.0)), np.nan)
        table[f"{name}_per_sqrt_n"] = v - half
        added.append(f"{name}_per_sqrt_n")
    if np.unique(n[np.isfinite(n)]).size > 1:
        table["sample_size_only"] = -half
        added.append("sample_size_only")
    return added


# --- the result ------------------------------------------------------------------------------


@dataclass
class Correlation:
    """The result of ``correlate``: models.csv, correlation.csv, differences.csv, skipped.csv."""

    models: pd.DataFrame
    correlation: pd.DataFrame
    skipped: pd.DataFrame
    axes: list[str]
    measures: list[str]
    gap: str = "accuracy"
    manifest: str = ""
    task: str | None = None
    n_listed: int = 0
    n_unconverged: int = 0
    include_unconverged: bool = False
    bootstrap: int = 1000
    seed: int = 0
    notes: list[str] = field(default_factory=list)
    differences: pd.DataFrame | None = None
    rank_ceiling: dict[str, Any] = field(default_factory=dict)
    n_configurations: int = 0
    level: float = 0.95
    #: The grid's configurations without a usable model (zoo.json's grid), named.
    missing: list[str] = field(default_factory=list)
    primary_statistic: str = "kendall_tau"
    primary_bootstrap: int = 0
    #: The zoos whose models were pooled (``pool``), in order; [] for one zoo's own run.
    zoos: list[str] = field(default_factory=list)
    #: Models whose data measures failed (in ``skipped``; the CLI exits 1 when any did).
    data_failed: list[str] = field(default_factory=list)

    @property
    def primary(self) -> pd.DataFrame | None:
        """The primary rows of ``differences`` (P1-P3), with p, p_holm and verdict."""
        d = self.differences
        return None if d is None else d[d["family"] == V.PRIMARY].reset_index(drop=True)

    @property
    def exploratory(self) -> pd.DataFrame | None:
        """The exploratory rows of ``differences``, with p, q_bh and verdict."""
        d = self.differences
        return None if d is None else d[d["family"] == V.EXPLORATORY].reset_index(drop=True)

    def summary(self) -> dict[str, Any]:
        """The content of correlate.json (module doc)."""
        return {
            "protocol": 3,
            "manifest": self.manifest,
            "task": self.task,
            "gap": self.gap,
            "axes": list(self.axes),
            "measures": list(self.measures),
            "n_listed": self.n_listed,
            "n_models": len(self.models),
            "n_configurations": self.n_configurations,
            "n_skipped": len(self.skipped),
            "n_unconverged": self.n_unconverged,
            "include_unconverged": self.include_unconverged,
            "bootstrap": self.bootstrap,
            "bootstrap_unit": "configuration",
            "seed": self.seed,
            "level": self.level,
            "min_sign_pairs": T.S.MIN_SIGN_PAIRS,
            "baselines": [b for b in T.BASELINES if b in self.measures],
            "interval_statistics": list(T.INTERVAL_STATS),
            "rank_ceiling": dict(self.rank_ceiling),
            "primary_statistic": self.primary_statistic,
            "primary_bootstrap": self.primary_bootstrap,
            "primary_contrasts": {c: f"{a} - {b}" for c, a, b in V.PRIMARY_CONTRASTS},
            "alpha": V.ALPHA,
            "min_configurations": V.MIN_CONFIGURATIONS,
            "min_bootstrap_verdict": V.MIN_VERDICT_BOOTSTRAP,
            "missing": len(self.missing),
            "missing_configurations": list(self.missing),
            "zoos": list(self.zoos),
            "notes": list(self.notes),
        }


def write_tables(result: Correlation, directory: str | Path) -> list[Path]:
    """Write models.csv, correlation.csv, differences.csv, skipped.csv and correlate.json into
    ``directory`` (an existing folder; the caller makes it atomic). Returns the paths."""
    from ...io.files import dumps_json

    d = Path(directory)
    out = []
    frames = {
        "models.csv": result.models,
        "correlation.csv": result.correlation,
        "differences.csv": (
            result.differences
            if result.differences is not None
            else _empty_frame(T.DIFFERENCE_COLUMNS)
        ),
        "skipped.csv": result.skipped,
    }
    for name, frame in frames.items():
        frame.to_csv(d / name, index=False, float_format="%.17g")
        out.append(d / name)
    (d / "correlate.json").write_text(dumps_json(result.summary(), indent=2) + "\n")
    out.append(d / "correlate.json")
    return out


def _empty_frame(columns: Sequence[str]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(columns=list(columns))


def _engine(engine: Any, options: Any) -> Engine:
    from ...engines import get_engine

    if engine is None:
        engine = "local"
    if isinstance(engine, str):
        return get_engine(engine, options)
    if options is not None:
        raise SpecboundError("engine_options is for an engine given by name; drop it")
    return engine


def correlate(
    zoo: str | Path | M.Zoo,
    *,
    axes: str | Sequence[str] | None = None,
    gap: str | None = None,
    include_unconverged: bool = False,
    bootstrap: int = 1000,
    seed: int = 0,
    cache: bool = True,
    device: str | None = None,
    on_model: Callable[[int, int, str, str | None], None] | None = None,
    analyzer: Analyzer | None = None,
    engine: str | Engine | None = None,
    engine_options: Any = None,
    state_dir: str | Path | None = None,
    on_resume: Callable[[str], None] | None = None,
    level: float = 0.95,
    data_measures: bool = False,
    on_data: Callable[[str], None] | None = None,
    data_workers: int = 1,
) -> Correlation:
    """Analyze every model of a zoo on ``engine`` and compute SPEC 10 for every SPEC 9 measure.

    ``zoo``: a manifest CSV, a ``zoo train`` directory or a ``Zoo``. ``gap``: ``accuracy``
    (train - test accuracy) or ``loss`` (test - train loss); by default accuracy when the
    manifest has both accuracies, else loss. Every input check (manifest values, ``bootstrap``
    in 200..100000 (protocol v3: fewer draws are refused; verdict words need >= 1000),
    ``seed`` >= 0, the engine and its options) runs before the first model is
    analyzed. Models that fail to load or analyze are listed in ``skipped`` with the reason;
    so are unconverged models (unless ``include_unconverged``) and models without the gap's
    metrics. ``on_model(done, n, name, error)`` after each model. ``analyzer(path, init, cache,
    device, name)`` returns a model's measures (default: ``analysis.analyze``). ``engine``: a
    name of ``engines.ENGINES`` (with ``engine_options``) or an ``Engine``; ``state_dir``:
    resume records for a distributed engine (``engines.sweep``). ``data_measures``: add SPEC 12's
    data measures of every analyzed model as measures (columns after the weight measures),
    computed after the analyses and cached (``correlate.data``); only for zoo
    model directories, else a note says why they are absent. ``on_data(line)``: one progress
    line per model of the data measures; ``data_workers``: processes computing them (1: this
    process; more are spawned, so a script needs the ``if __name__ == "__main__":`` guard;
    every model runs on one torch thread, so the values do not depend on it). Output
    schema: module doc.
    """
    import pandas as pd

    from ...engines.sweep import analyze_models

    bootstrap, seed = T.check_bootstrap(bootstrap, seed, allow_none=False)
    from ...validation import check_int

    data_workers = check_int(data_workers, "data_workers", min=1, max=1024)
    level = T.check_level(level)
    z = zoo if isinstance(zoo, M.Zoo) else M.read_zoo(zoo, axes)
    if isinstance(zoo, M.Zoo) and axes is not None:
        z = M.Zoo(z.manifest, z.table, M.parse_axes(axes) or [], z.task, z.grid)
    names, forms = measure_registry()
    data_cols: list[str] = []
    if data_measures:
        from .data import data_names, require

        require()
        data_cols = data_names()
    M.validate_manifest(z, [*output_columns(), *data_cols], models_csv_marks=names)
    table = z.table.copy()
    kind = normalize_kind(gap, "gap")
    if kind == "auto":
        kind = default_kind(table.columns)
    assert kind in GAP_KINDS
    g = gap_values(table, kind)
    converged = (
        M.parse_converged(table["converged"])
        if "converged" in table.columns
        else np.ones(len(table), dtype=bool)
    )
    p = plan(z, g, converged, include_unconverged, kind)
    codes = T.axis_codes(table.iloc[[j[0] for j in p.jobs]], z.axes)
    T.check_size(
        len(p.jobs),
        int(np.unique(T.S.row_ids(codes)).size),
        max(bootstrap, V.PRIMARY_BOOTSTRAP),
    )
    eng = _engine(engine, engine_options)
    total = len(table)
    done = 0
    names_of = [str(m).strip() for m in table["model"]]
    for i in sorted(p.skipped):
        done += 1
        if on_model is not None:
            on_model(done, total, names_of[i], p.skipped[i])
    failed: dict[str, str] = {}
    offset = done

    def seen(k: int, n: int, label: str) -> None:
        if on_model is not None:
            on_model(offset + k, total, label, failed.get(label))

    sweep = analyze_models(
        eng,
        [j[1] for j in p.jobs],
        names=[j[3] for j in p.jobs],
        analyze_kwargs={"cache": cache, "device": device},
        per_model_kwargs=[{"init": j[2]} for j in p.jobs],
        on_model=seen,
        on_skip=lambda label, reason: failed.__setitem__(label, reason),
        on_resume=on_resume,
        state_dir=state_dir,
        worker_fn=functools.partial(model_worker, analyzer),
    )
    records = table.to_dict("records")
    rows, reasons, row_of = [], dict(p.skipped), []
    for (i, _, _, name), out in zip(p.jobs, sweep.results, strict=True):
        if out is None:
            reasons[i] = failed.get(name, "not analyzed")
            continue
        row = dict(records[i])
        row["model"] = name
        row["gap"] = float(g[i])
        row["converged"] = bool(converged[i])
        row.update({k: (math.nan if v is None else float(v)) for k, v in _values_of(out).items()})
        rows.append(row)
        row_of.append(i)
    if not rows:
        _none_usable(z.manifest, names_of, reasons)
    models = pd.DataFrame(rows)
    for c in CEILING_COLUMNS:
        if c not in models.columns:
            models[c] = math.nan
    found = [
        c for c in models.columns if c not in table.columns and c not in ("gap", *CEILING_COLUMNS)
    ]
    measures = [m for m in names if m in models.columns]
    measures += [m for m in found if m not in measures and m != "converged"]
    measures += add_bound_forms(models, measures, forms)
    data_notes: list[str] = []
    data_failed: list[str] = []
    if data_measures:
        added, data_notes, lost = _add_data_measures(
            z, models, row_of, cache, device, on_data, data_workers
        )
        measures += added
        for k, why in lost.items():
            reasons[row_of[k]] = f"data measures failed: {why}"
            data_failed.append(names_of[row_of[k]])
        if lost:
            models = models.drop(index=list(lost)).reset_index(drop=True)
            if models.empty:
                _none_usable(z.manifest, names_of, reasons)
    skipped = [{"model": names_of[i], "reason": reasons[i]} for i in sorted(reasons)]
    front = ["model", *z.axes]
    rest = [
        c
        for c in table.columns
        if c not in front and c not in measures and c not in ("gap", "converged")
    ]
    models = models[front + rest + ["gap", "converged"] + measures + list(CEILING_COLUMNS)]
    missing = missing_configurations(z.grid, models)
    tables = T.correlation_study(
        models, measures, z.axes, bootstrap=bootstrap, seed=seed, level=level, missing=missing
    )
    notes = []
    if axes is None and not isinstance(zoo, M.Zoo):
        notes.append(
            f"axes by default (the varying hyperparameter columns; seed is a replicate, "
            f"not an axis): {', '.join(z.axes) or 'none'}; choose them with --axes"
        )
    if "converged" not in table.columns:
        notes.append("the manifest has no 'converged' column: every model counts as converged")
    notes += data_notes
    if missing:
        notes.append(
            f"{len(missing)} configurations of the grid have no usable model (missing, skipped "
            f"or unconverged); they are named beside every verdict"
        )
    notes += tables.notes
    ceiling = rank_ceiling(models)
    return Correlation(
        models,
        tables.correlation,
        pd.DataFrame(skipped, columns=SKIPPED_COLUMNS),
        list(z.axes),
        measures,
        kind,
        str(z.manifest),
        z.task,
        total,
        p.n_unconverged,
        include_unconverged,
        bootstrap,
        seed,
        notes,
        tables.differences,
        ceiling,
        tables.n_configurations,
        level,
        missing,
        tables.primary_statistic,
        tables.primary_bootstrap,
        data_failed=data_failed,
    )


def _none_usable(manifest: Any, names_of: Any, reasons: dict[int, str]) -> NoReturn:
    """Raise: no model of the manifest could be used (how many skipped, the first reason)."""
    first = min(reasons) if reasons else None
    raise SpecboundError(
        f"no model of {manifest} could be used ({len(reasons)} skipped; first: "
        + (f"{names_of[first]}: {reasons[first]})" if first is not None else ": none listed)")
    )
