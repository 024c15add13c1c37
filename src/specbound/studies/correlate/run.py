"""One zoo's correlate study: manifest -> plan (one job per model) -> ``engine.map`` -> tables.

``correlate`` runs three private stages: ``_prepare`` (every input check, the zoo, the gap, the
plan, the engine), ``_sweep`` (``analysis.sweep.analyze_models``, one models-table row per
analyzed model) and ``_assemble`` (measures, bound forms, data measures, the SPEC 10 tables,
the notes). The result and its output schema (models.csv, correlation.csv, differences.csv,
skipped.csv, correlate.json): :mod:`.result`. A study into a folder (several zoos pooled,
correlate folders re-evaluated, resume records, the data workers' default): :mod:`.driver`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from ...analysis.sweep import analyze_models
from ...engines import resolve
from ...errors import Param, SpecboundError, SpecboundTypeError, Spelling, spelled
from ...io.outdir import local_inputs
from ...io.records import RecordStore
from ...linalg.model import DEVICE
from ...validation import (
    WORKERS,
    Boolean,
    IsCallable,
    Names,
    PathLike,
    Satisfies,
    validate_params,
)
from ..gap import GAP, GAP_KINDS, default_kind, gap_values
from ..protocol import verdicts as V
from ..protocol.stats import row_ids
from . import manifest as M
from . import rules as RU
from . import table as T
from .ceiling import CEILING_COLUMNS, rank_ceiling
from .columns import measure_columns, measure_registry, output_columns
from .data import data_names, require
from .jobs import (
    Analyzer,
    Plan,
    add_data_measures,
    missing_configurations,
    model_worker,
    plan,
    values_of,
)
from .modal import DESIGN, Choices, choices_of, v5_stage
from .result import SKIPPED_COLUMNS, Correlation

if TYPE_CHECKING:
    import pandas as pd

    from ...engines.base import Engine

__all__ = [
    "SKIPPED_COLUMNS",
    "Analyzer",
    "Correlation",
    "correlate",
    "missing_configurations",
    "model_worker",
]

# --- the driver ------------------------------------------------------------------------------


def _zoo_object(zoo: Any, name: str) -> Any:
    """``zoo`` when it is a ``manifest.Zoo`` (a path is the other accepted form)."""
    if not isinstance(zoo, M.Zoo):
        raise SpecboundTypeError(
            Param(name), f" must be a path or a Zoo, got {zoo!r} ({type(zoo).__name__})"
        )
    return zoo


_CALLBACK = (None, IsCallable())


@validate_params(
    {
        "zoo": (PathLike(), Satisfies(_zoo_object, "a Zoo", named=True)),
        "axes": (None, Names(what="axis name")),
        "gap": GAP,
        "include_unconverged": (Boolean(),),
        "bootstrap": RU.BOOTSTRAP,
        "seed": RU.SEED,
        "cache": (Boolean(),),
        "device": DEVICE,
        "on_model": _CALLBACK,
        "analyzer": _CALLBACK,
        "state_dir": (None, PathLike()),
        "on_resume": _CALLBACK,
        "level": RU.LEVEL,
        "data_measures": (Boolean(),),
        "on_data": _CALLBACK,
        "data_workers": WORKERS,
        "primary": RU.PRIMARY,
        "design": DESIGN,
        "flag": _CALLBACK,
    }
)
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
    primary: str = "auto",
    design: str | None = None,
    flag: Spelling | None = None,
) -> Correlation:
    """Analyze every model of a zoo on ``engine`` and compute SPEC 10 for every SPEC 9 measure.

    ``zoo``: a manifest CSV, a ``zoo train`` directory or a ``Zoo``. ``gap``: ``accuracy``
    (train - test accuracy) or ``loss`` (test - train loss); by default accuracy when the
    manifest has both accuracies, else loss. Every input check (manifest values, ``bootstrap``
    in 200..100000 (protocol v3: fewer draws are refused; verdict words need >= 1000), ``seed``
    >= 0, the engine and its options) runs before the first model is analyzed. Models that fail
    to load or analyze are listed in ``skipped`` with the reason; so are unconverged models
    (unless ``include_unconverged``) and models without the gap's metrics. ``on_model(done, n,
    name, error)`` after each model. ``analyzer(path, init, cache, device, name)`` returns a
    model's measures (default: ``analysis.analyze``). ``engine``: a name of ``engines.ENGINES``
    (with ``engine_options``) or an ``Engine``; ``state_dir``: resume records for a distributed
    engine (``io.records``, ``analysis.sweep``). ``data_measures``: add SPEC 12's data measures
    of every analyzed model as measures (columns after the weight measures), computed after the
    analyses and cached (``correlate.data``); only for zoo model directories, else a note says
    why they are absent. ``on_data(line)``: one progress line per model of the data measures;
    ``data_workers``: processes computing them (``validation.WORKERS``: 1..4 x the CPUs; 1: this
    process; more are spawned, so a script needs the ``if __name__ == "__main__":`` guard; every
    model runs on one torch thread, so the values do not depend on it). ``primary``: the primary
    family (``auto``, A1-A3 on tau_arch for a zoo designed for it, else P1-P3; ``arch``;
    ``standard``). The arguments are checked first (``@validate_params``: ``rules.BOOTSTRAP``,
    ``SEED``, ``LEVEL``, ``PRIMARY``, ``gap.GAP``, ...). ``design``: ``adaptivity`` or None
    (zoo.json's ``design``): SPEC 10 v5, :func:`.modal.adaptivity_measures`. ``flag(name)``: how
    a skip reason or a note names a parameter (``errors.spelled``; the CLI gives its flags;
    default: the Python name). Output schema: :mod:`.result`.
    """
    prep = _prepare(
        zoo,
        axes,
        gap,
        include_unconverged,
        bootstrap,
        seed,
        level,
        data_measures,
        data_workers,
        flag,
    )
    prep.primary = primary
    prep.design = design if design is not None else prep.zoo.design
    eng = resolve(engine, engine_options)  # after every other check, before any work
    swept = _sweep(
        prep, eng, cache, device, on_model, analyzer, state_dir=state_dir, on_resume=on_resume
    )
    if data_measures:
        _data_stage(prep, swept, cache, device, on_data)
    default_axes = axes is None and not isinstance(zoo, M.Zoo)
    inputs = local_inputs(zoo, prep.zoo.manifest)  # the zoo as given (folder or manifest)
    return _assemble(prep, swept, include_unconverged, default_axes, inputs)


# --- the stages --------------------------------------------------------------------------------


@dataclass
class _Prepared:
    """What ``_prepare`` checked and decided before any model is analyzed."""

    zoo: M.Zoo
    table: pd.DataFrame
    kind: str
    gap: np.ndarray
    converged: np.ndarray
    plan: Plan
    registry: list[str]
    forms: dict[str, bool]
    bootstrap: int
    seed: int
    level: float
    data_workers: int
    primary: str = "auto"
    #: SPEC 10 v5's design (``adaptivity``) or None.
    design: str | None = None
    #: How a skip reason or a note names a parameter (``errors.spelled``).
    flag: Spelling | None = None


@dataclass
class _Swept:
    """The analyzed models: one row each (``row_of[k]``: its manifest row), and every manifest
    row left out (manifest row -> reason)."""

    names_of: list[str]
    models: pd.DataFrame
    row_of: list[int]
    reasons: dict[int, str]
    measures: list[str] = field(default_factory=list)
    data_notes: list[str] = field(default_factory=list)
    data_failed: list[str] = field(default_factory=list)
    #: Each row's per-matrix choices (``modal.choices_of``; None for a custom analyzer's).
    choices: list[Choices | None] = field(default_factory=list)


def _prepare(
    zoo: str | Path | M.Zoo,
    axes: str | Sequence[str] | None,
    gap: str | None,
    include_unconverged: bool,
    bootstrap: int,
    seed: int,
    level: float,
    data_measures: bool,
    data_workers: int,
    flag: Spelling | None = None,
) -> _Prepared:
    """The zoo (its manifest checked), the gap, which models to analyze (``plan``); the
    arguments were checked by ``correlate``'s ``@validate_params``."""
    z = zoo if isinstance(zoo, M.Zoo) else M.read_zoo(zoo, axes)
    if isinstance(zoo, M.Zoo) and axes is not None:
        z = replace(z, axes=M.parse_axes(axes) or [])  # design, cells kept
    names, forms = measure_registry()
    data_cols: list[str] = []
    if data_measures:
        require()
        data_cols = data_names()
    M.validate_manifest(z, [*output_columns(), *data_cols], models_csv_marks=names)
    table = z.table.copy()
    kind = gap or "auto"
    if kind == "auto":
        kind = default_kind(table.columns)
    assert kind in GAP_KINDS
    g = gap_values(table, kind)
    converged = (
        M.parse_converged(table["converged"])
        if "converged" in table.columns
        else np.ones(len(table), dtype=bool)
    )
    p = plan(z, g, converged, include_unconverged, kind, flag)
    codes = RU.axis_codes(table.iloc[[j[0] for j in p.jobs]], z.axes)
    RU.check_size(
        len(p.jobs),
        int(np.unique(row_ids(codes)).size),
        max(bootstrap, V.PRIMARY_BOOTSTRAP),
    )
    return _Prepared(
        zoo=z,
        table=table,
        kind=kind,
        gap=g,
        converged=converged,
        plan=p,
        registry=names,
        forms=forms,
        bootstrap=bootstrap,
        seed=seed,
        level=level,
        data_workers=data_workers,
        flag=flag,
    )


def _sweep(
    prep: _Prepared,
    eng: Engine,
    cache: bool,
    device: str | None,
    on_model: Callable[[int, int, str, str | None], None] | None,
    analyzer: Analyzer | None,
    *,
    state_dir: str | Path | None,
    on_resume: Callable[[str], None] | None,
) -> _Swept:
    """Analyze the planned models on ``eng`` (``on_model`` for the skipped ones first), then
    one row per analyzed model: manifest columns, gap, converged, its measures."""
    import pandas as pd

    p = prep.plan
    names_of = [str(m).strip() for m in prep.table["model"]]
    failed: dict[str, str] = {}
    sweep = analyze_models(
        eng,
        [j[1] for j in p.jobs],
        names=[j[3] for j in p.jobs],
        analyze_kwargs={"cache": cache, "device": device},
        per_model_kwargs=[{"init": j[2]} for j in p.jobs],
        on_model=_told(on_model, p, names_of, failed),
        on_skip=lambda label, reason: failed.__setitem__(label, reason),
        on_resume=on_resume,
        records=None if state_dir is None else RecordStore(state_dir),
        worker_fn=functools.partial(model_worker, analyzer),
    )
    rows, row_of, choices, reasons = _rows(prep, sweep.results, failed)
    if not rows:
        _none_usable(prep.zoo.manifest, names_of, reasons)
    models = pd.DataFrame(rows)
    for c in CEILING_COLUMNS:
        if c not in models.columns:
            models[c] = math.nan
    measures = measure_columns(models, prep.table.columns, prep.registry, prep.forms)
    return _Swept(names_of, models, row_of, reasons, measures, choices=choices)


def _told(
    on_model: Callable[[int, int, str, str | None], None] | None,
    p: Plan,
    names_of: list[str],
    failed: dict[str, str],
) -> Callable[[int, int, str], None] | None:
    """Tell ``on_model`` of the planned skips now; the sweep's ``on_model`` for the rest,
    counted after them (with the reason of a model that ``failed``)."""
    if on_model is None:
        return None
    total = len(names_of)
    for done, i in enumerate(sorted(p.skipped), start=1):
        on_model(done, total, names_of[i], p.skipped[i])
    offset = len(p.skipped)

    def seen(k: int, n: int, label: str) -> None:
        on_model(offset + k, total, label, failed.get(label))

    return seen


def _rows(
    prep: _Prepared, results: Sequence[Any], failed: dict[str, str]
) -> tuple[list[dict[str, Any]], list[int], list[Choices | None], dict[int, str]]:
    """(one row per analyzed model: manifest columns, gap, converged, its measures; each row's
    manifest row; each row's per-matrix choices; every manifest row left out -> reason)."""
    records = prep.table.to_dict("records")
    rows, reasons, row_of, choices = [], dict(prep.plan.skipped), [], []
    for (i, _, _, name), out in zip(prep.plan.jobs, results, strict=True):
        if out is None:
            reasons[i] = failed.get(name, "not analyzed")
            continue
        row = dict(records[i])
        row["model"] = name
        row["gap"] = float(prep.gap[i])
        row["converged"] = bool(prep.converged[i])
        row.update({k: (math.nan if v is None else float(v)) for k, v in values_of(out).items()})
        rows.append(row)
        row_of.append(i)
        choices.append(choices_of(out))
    return rows, row_of, choices, reasons


def _data_stage(
    prep: _Prepared,
    swept: _Swept,
    cache: bool,
    device: str | None,
    on_data: Callable[[str], None] | None,
) -> None:
    """Add SPEC 12's data measures to ``swept``; a model whose data measures failed leaves the
    models table for ``skipped`` (and ``data_failed``)."""
    s = swept
    added, s.data_notes, lost = add_data_measures(
        prep.zoo, s.models, s.row_of, cache, device, on_data, prep.data_workers
    )
    s.measures += added
    for k, why in lost.items():
        s.reasons[s.row_of[k]] = f"data measures failed: {why}"
        s.data_failed.append(s.names_of[s.row_of[k]])
    if lost:
        s.choices = [c for k, c in enumerate(s.choices) if k not in lost]
        s.models = s.models.drop(index=list(lost)).reset_index(drop=True)
        if s.models.empty:
            _none_usable(prep.zoo.manifest, s.names_of, s.reasons)


def _assemble(
    prep: _Prepared,
    swept: _Swept,
    include_unconverged: bool,
    default_axes: bool,
    inputs: tuple[str, ...] = (),
) -> Correlation:
    """The models table in its column order, the SPEC 10 tables, the notes, the Correlation."""
    import pandas as pd

    z, table, measures, reasons = prep.zoo, prep.table, swept.measures, swept.reasons
    skipped = [{"model": swept.names_of[i], "reason": reasons[i]} for i in sorted(reasons)]
    front = ["model", *z.axes]
    rest = [
        c
        for c in table.columns
        if c not in front and c not in measures and c not in ("gap", "converged")
    ]
    modal, measures, forms = v5_stage(swept.models, swept.choices, prep.design, z.axes, measures)
    models = swept.models[
        front + rest + ["gap", "converged"] + measures + list(CEILING_COLUMNS) + forms
    ]
    missing = missing_configurations(z.grid, models, z.cells)
    tables = T.correlation_study(
        models,
        measures,
        z.axes,
        bootstrap=prep.bootstrap,
        seed=prep.seed,
        level=prep.level,
        missing=missing,
        primary=prep.primary,
        design=prep.design,
    )
    notes = []
    if default_axes:
        axes = ", ".join(z.axes) or "none"
        why = (
            "axes by default (the varying hyperparameter columns; seed is a replicate, not an "
            f"axis): {axes}; choose them with ",
            Param("axes"),
        )
        notes.append(spelled(why, prep.flag))
    if "converged" not in table.columns:
        notes.append("the manifest has no 'converged' column: every model counts as converged")
    notes += swept.data_notes
    if missing:
        notes.append(
            f"{len(missing)} configurations of the grid have no usable model (missing, skipped "
            f"or unconverged); they are named beside every verdict"
        )
    notes += tables.notes
    return Correlation(
        models=models,
        correlation=tables.correlation,
        skipped=pd.DataFrame(skipped, columns=SKIPPED_COLUMNS),
        axes=list(z.axes),
        measures=measures,
        gap=prep.kind,
        manifest=str(z.manifest),
        task=z.task,
        n_listed=len(table),
        n_unconverged=prep.plan.n_unconverged,
        include_unconverged=include_unconverged,
        bootstrap=prep.bootstrap,
        seed=prep.seed,
        notes=notes,
        differences=tables.differences,
        rank_ceiling=rank_ceiling(models),
        n_configurations=tables.n_configurations,
        level=prep.level,
        missing=missing,
        primary_statistic=tables.primary_statistic,
        primary_bootstrap=tables.primary_bootstrap,
        inputs=inputs,
        data_failed=swept.data_failed,
        design=prep.design,
        primary_family=tables.primary_family,
        p_switch_share=None if modal is None else modal.shares,
        pstar=None if modal is None else modal.pstar,
    )


def _none_usable(manifest: Any, names_of: Any, reasons: dict[int, str]) -> NoReturn:
    """Raise: no model of the manifest could be used (how many skipped, the first reason)."""
    first = min(reasons) if reasons else None
    raise SpecboundError(
        f"no model of {manifest} could be used ({len(reasons)} skipped; first: "
        + (f"{names_of[first]}: {reasons[first]})" if first is not None else ": none listed)")
    )
