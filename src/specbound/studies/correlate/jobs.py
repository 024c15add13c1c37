"""The jobs of a correlate run: one per usable model of the manifest (``plan``), the worker
that analyzes one model (``model_worker``), SPEC 12's data measures added to the models table,
and the grid's configurations without a usable model (``missing_configurations``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...analysis.sweep import run_model
from ...errors import Param, SpecboundError, Spelling, one_line_reason, spelled
from . import data as D
from . import manifest as M
from .ceiling import diagnostics_of

if TYPE_CHECKING:
    import pandas as pd

Analyzer = Callable[[str, "str | None", bool, "str | None", str], dict[str, "float | None"]]


# --- the jobs --------------------------------------------------------------------------------


def model_worker(analyzer: Analyzer | None, model: Any, name: str | None, kwargs: Any) -> Any:
    """One job: ``analyze`` (or ``analyzer(path, init, cache, device, name)``) of one model.

    Any failure becomes a ``SpecboundError`` with a one-line reason: a broken model is skipped,
    never the end of the study. Top-level (with ``functools.partial``) so engines can ship it.
    """
    try:
        if analyzer is None:
            return run_model(model, name, kwargs)
        return analyzer(model, kwargs.get("init"), kwargs["cache"], kwargs.get("device"), str(name))
    except (KeyboardInterrupt, MemoryError):
        raise
    except SpecboundError:
        raise
    except Exception as exc:
        raise SpecboundError(one_line_reason(exc)) from None


def values_of(out: Any) -> dict[str, float | None]:
    """Measures and rank-ceiling diagnostics of one job's result (an Analysis or a dict)."""
    if isinstance(out, dict):
        return dict(out)
    values = dict(out.measures)
    values.update(diagnostics_of(out))
    return values


@dataclass(frozen=True)
class Plan:
    """The models to analyze (``index`` into the manifest, entry, init, name) and the skips
    decided before any analysis (index -> reason)."""

    jobs: list[tuple[int, str, str | None, str]]
    skipped: dict[int, str]
    n_unconverged: int


def plan(
    zoo: M.Zoo,
    g: np.ndarray,
    converged: np.ndarray,
    include_unconverged: bool,
    gap: str,
    flag: Spelling | None = None,
) -> Plan:
    """Which models to analyze: those with a finite gap and (unless ``include_unconverged``)
    converged. A skip reason names the parameter that changes it, spelled by ``flag``
    (``errors.spelled``: the CLI's flags; default the Python names)."""
    base = zoo.manifest.parent
    jobs, skipped, n_unconv = [], {}, 0
    for i, rec in enumerate(zoo.table.to_dict("records")):
        name = str(rec["model"]).strip()
        if not np.isfinite(g[i]):
            why = (f"no {gap} gap: a metric of ", Param("gap", gap), " is missing or not a number")
            skipped[i] = spelled(why, flag)
        elif not converged[i] and not include_unconverged:
            n_unconv += 1
            why = ("unconverged (excluded; ", Param("include_unconverged"), " keeps it)")
            skipped[i] = spelled(why, flag)
        else:
            init = rec.get("init")
            blank = init is None or (isinstance(init, float) and math.isnan(init))
            init_path = None if blank or not str(init).strip() else M.resolve_entry(str(init), base)
            jobs.append((i, M.resolve_entry(name, base), init_path, name))
    return Plan(jobs, skipped, n_unconv)


def add_data_measures(
    zoo: M.Zoo,
    models: pd.DataFrame,
    row_of: Sequence[int],
    cache: bool,
    device: str | None,
    on_data: Callable[[str], None] | None,
    workers: int = 1,
) -> tuple[list[str], list[str], dict[int, str]]:
    """Add the data-measure columns to ``models`` (row k is manifest row ``row_of[k]``):
    (the measures added, the notes, {row k: why its data measures failed}). None added, and
    one note, when the manifest's models are not all zoo model directories."""
    dirs, why = D.eligible(zoo)
    if why is not None:
        if on_data is not None:
            on_data(why)
        return [], [why], {}
    rows = models.to_dict("records")
    jobs = [(k, dirs[i], rows[k]) for k, i in enumerate(row_of)]
    cols = D.compute_columns(jobs, cache=cache, device=device, on_line=on_data, workers=workers)
    for m in cols.names:
        models[m] = [
            math.nan if (v := cols.values.get(k, {}).get(m)) is None else float(v)
            for k in range(len(models))
        ]
    return list(cols.names), cols.notes, dict(cols.failed)


def _grid_key(v: Any) -> Any:
    """An axis value as grid and table both spell it (numbers as floats, else stripped text)."""
    if isinstance(v, bool):
        return str(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v).strip()
    return f if math.isfinite(f) else str(v).strip()


def missing_configurations(
    grid: dict[str, list[Any]] | None,
    models: pd.DataFrame,
    cells: list[list[int]] | None = None,
) -> list[str]:
    """The configurations of a zoo's factorial grid (zoo.json's ``grid``, seed left out: seeds
    are replicates) that no model of ``models`` (the usable ones) has, each named
    ``axis=value ...`` over the grid's axes with >= 2 values; [] without a grid or when one of
    those axes is not a column. ``cells`` (zoo.json's [depth, width] pairs, issue 52): only the
    configurations of those cells belong to the grid."""
    import itertools

    if not grid:
        return []
    keep = None if not cells else {(int(d), int(w)) for d, w in cells}
    axes = [a for a, vals in grid.items() if a != "seed" and len(vals) >= 2]
    if not axes or any(a not in models.columns for a in axes):
        return []
    present = {
        tuple(_grid_key(v) for v in row) for row in models[axes].itertuples(index=False, name=None)
    }
    out = []
    for combo in itertools.product(*(grid[a] for a in axes)):
        if keep is not None:
            point = {a: vals[0] for a, vals in grid.items()} | dict(zip(axes, combo, strict=True))
            if (point.get("depth"), point.get("width")) not in keep:
                continue
        if tuple(_grid_key(v) for v in combo) not in present:
            out.append(" ".join(f"{a}={v}" for a, v in zip(axes, combo, strict=True)))
    return out
