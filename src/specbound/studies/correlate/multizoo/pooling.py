"""Several zoos pooled into one correlate result, and correlate folders re-evaluated without
analyzing again.

A *part* is one zoo's analyzed models: either a ``Correlation`` just computed
(``correlate(zoo)``; :func:`part_of`) or a folder ``correlate`` wrote (its ``models.csv``,
``skipped.csv`` and ``correlate.json``, read by :mod:`.folders`; nothing is loaded or analyzed
again: the measures are read from the file). :func:`pool` joins parts that share their task,
axes and gap into one models table, each model keeping its source in a ``zoo`` column (a model
name that occurs in two parts is prefixed ``<zoo>/``), and evaluates SPEC 10 (protocol v3) on
it: configurations are pooled by their axis values, so a configuration's models are the seeds
of every part.

A configuration of the grid counts as missing from the pool only when no part has a usable
model of it (the intersection of the parts' missing configurations).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ....errors import Param, SpecboundError
from ....io.outdir import local_inputs
from ....validation import validate_params
from ... import readback as R
from .. import rules as RU
from .. import table as T
from ..ceiling import CEILING_COLUMNS, FORM_COLUMNS, rank_ceiling
from ..jobs import missing_configurations
from ..modal import pooled_pstar, switch_shares
from ..result import SKIPPED_COLUMNS, Correlation
from .folders import RESULT_FILES, Folder, check_distinct, is_result_folder, read_folder, zoo_dir

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Part:
    """One zoo's analyzed models, as :func:`pool` needs them."""

    name: str
    models: pd.DataFrame
    skipped: pd.DataFrame
    axes: list[str]
    measures: list[str]
    gap: str
    task: str | None
    source: str
    n_listed: int
    n_unconverged: int
    include_unconverged: bool = False
    missing: list[str] | None = None
    notes: list[str] = field(default_factory=list)
    #: The manifest the zoo was read from (a correlate folder's: the one it records).
    manifest: str = ""
    #: What ``Correlation.inputs`` of the pool holds for this part (that field's doc).
    inputs: tuple[str, ...] = ()
    #: Protocol v5's per-matrix table (pstar.csv, ``modal.PSTAR_COLUMNS``); None: none.
    pstar: pd.DataFrame | None = None
    #: SPEC 10 v5's design (correlate.json ``design``), None for none.
    design: str | None = None


def part_of(result: Correlation, name: str | None = None) -> Part:
    """A just-computed ``Correlation`` as a part (named after its zoo directory)."""
    manifest = Path(result.manifest)
    label = name or (manifest.parent.name if manifest.name == "zoo.csv" else manifest.stem)
    return Part(
        label,
        result.models,
        result.skipped,
        list(result.axes),
        list(result.measures),
        result.gap,
        result.task,
        str(result.manifest),
        result.n_listed,
        result.n_unconverged,
        result.include_unconverged,
        list(result.missing),
        manifest=str(result.manifest),
        inputs=tuple(result.inputs),
        pstar=result.pstar,
        design=result.design,
    )


def read_part(folder: str | Path, grid: str | Path | None = None) -> Part:
    """A correlate folder as a part. Its grid (for the missing configurations) is the one its
    correlate.json records (protocol 3), else the zoo.json of ``grid`` (a zoo directory or
    zoo.json), else the zoo.json beside the manifest it names, when that exists
    (``folders.zoo_dir``)."""
    f = read_folder(folder, RESULT_FILES, "pass a correlate output folder or a zoo directory")
    p, meta = f.path, f.meta
    models, skipped, pstar = f.models, f.skipped, f.pstar
    missing, notes = _missing_of(f, models, grid)
    manifest = str(meta.get("manifest", ""))
    if grid is not None:  # the zoo named on the command line is where the models came from
        g = Path(grid)
        manifest = str(g / "zoo.csv" if g.is_dir() else g.with_name("zoo.csv"))
    zoos = meta.get("zoos")
    if grid is None and isinstance(zoos, list) and len(zoos) == 1:
        name = str(zoos[0])
    else:
        name = _zoo_name(manifest, p)
    return Part(
        name,
        models,
        skipped,
        [str(a) for a in meta["axes"]],
        list(meta["measures"]),
        str(meta.get("gap", "accuracy")),
        None if meta.get("task") is None else str(meta["task"]),
        str(p),
        int(meta.get("n_listed", len(models) + len(skipped))),
        int(meta.get("n_unconverged", 0)),
        bool(meta.get("include_unconverged", False)),
        missing,
        notes,
        manifest,
        local_inputs(grid) if grid is not None else (),
        pstar,
        None if meta.get("design") is None else str(meta["design"]),
    )


def _missing_of(
    f: Folder, models: pd.DataFrame, grid: str | Path | None
) -> tuple[list[str] | None, list[str]]:
    """The configurations of a folder's grid without a usable model (None: not known) and the
    note saying why they are not named."""
    meta = f.meta
    if meta.get("protocol", 0) >= 3 and isinstance(meta.get("missing_configurations"), list):
        return [str(m) for m in meta["missing_configurations"]], []
    zoo_json = _zoo_json(grid, meta.get("manifest"), f.path)
    if zoo_json is None:
        return None, [
            f"{f.path.name}: the zoo's grid (zoo.json) was not found, so its missing "
            "configurations are not named; pass --grid ZOO"
        ]
    zj = R.read_zoo_json(zoo_json)
    g = zj.get("grid")
    return missing_configurations(g if isinstance(g, dict) else None, models, zj.get("cells")), []


def _zoo_name(manifest: Any, folder: Path) -> str:
    m = Path(str(manifest or ""))
    return m.parent.name if m.name == "zoo.csv" and m.parent.name else folder.name


def _zoo_json(grid: str | Path | None, manifest: Any, folder: Path) -> Path | None:
    """The zoo.json of ``grid`` (a zoo directory or zoo.json; an error when there is none), else
    the one beside the folder's manifest (``folders.zoo_dir``), else None."""
    if grid is not None:
        g = Path(grid)
        g = g / "zoo.json" if g.is_dir() else g
        if not g.is_file():
            raise SpecboundError(
                Param("grid", str(grid)), ": no zoo.json there; pass a zoo directory"
            )
        return g
    zoo = zoo_dir(folder, manifest)
    return None if zoo is None else zoo / "zoo.json"


def _check_no_model_twice(parts: Sequence[Part]) -> None:
    """Refuse two parts holding the same model: the same source (resolved), or a row whose
    gap and measure values (the model's identity: its analysis) are those of a row of an
    earlier part, as in a copied zoo or folder. A row without a finite measure is not
    compared."""
    check_distinct([q.source for q in parts])
    measures = [m for m in parts[0].measures if all(m in q.measures for q in parts)]
    seen: dict[tuple[str, ...], tuple[str, str]] = {}
    for q in parts:
        cols = ["gap", *measures]
        if any(c not in q.models.columns for c in cols) or not measures:
            continue
        values = q.models[cols].to_numpy(dtype=float)
        mine: dict[tuple[str, ...], str] = {}
        for name, row in zip(q.models["model"].astype(str), values, strict=True):
            if not np.isfinite(row[1:]).any():
                continue
            key = tuple(repr(float(x)) for x in row)
            if key in seen:
                other, src = seen[key]
                raise SpecboundError(
                    f"cannot pool {src} and {q.source}: model {name} of {q.source} is model "
                    f"{other} of {src} (the same gap and measure values); pass each zoo once"
                )
            mine[key] = name
        seen.update({k: (n, q.source) for k, n in mine.items()})


@validate_params(
    {"bootstrap": RU.BOOTSTRAP_OR_ZERO, "seed": RU.SEED, "level": RU.LEVEL, "primary": RU.PRIMARY}
)
def pool(
    parts: Sequence[Part],
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    primary: str = "auto",
) -> Correlation:
    """SPEC 10 over the models of every part (module doc). Parts must agree on task, axes and
    gap, and hold no model twice (``_check_no_model_twice``); measures are those every part has
    (the others are dropped with a note). ``bootstrap``, ``seed``, ``level``, ``primary``: as
    ``table.correlation_study``'s (checked first, ``@validate_params``)."""
    if not parts:
        raise SpecboundError("pool needs at least one zoo")
    first = parts[0]
    _check_alike(parts)
    _check_no_model_twice(parts)
    names = _names(parts)
    measures = [m for m in first.measures if all(m in q.measures for q in parts)]
    dropped = sorted({m for q in parts for m in q.measures} - set(measures))
    models, skipped = _joined(parts, names)
    models = _ordered(models, first.axes, measures, dropped)
    missing = _missing(parts)
    design = first.design if all(q.design == first.design for q in parts) else None
    tables = T.correlation_study(
        models, measures, first.axes, bootstrap=bootstrap, seed=seed, level=level,
        missing=missing, primary=primary, design=design,
    )  # fmt: skip
    notes = _notes(parts, names, dropped, missing) + tables.notes
    counts = _name_counts(parts)
    renamed = [
        None if q.pstar is None else q.pstar.assign(model=_prefixed(q.pstar["model"], n, counts))
        for q, n in zip(parts, names, strict=True)
    ]
    pstar = pooled_pstar(renamed, names)
    return Correlation(
        models=models,
        correlation=tables.correlation,
        skipped=_skipped(skipped),
        axes=list(first.axes),
        measures=measures,
        gap=first.gap,
        manifest=first.manifest if len(parts) == 1 else " + ".join(q.source for q in parts),
        task=first.task,
        n_listed=sum(q.n_listed for q in parts),
        n_unconverged=sum(q.n_unconverged for q in parts),
        include_unconverged=any(q.include_unconverged for q in parts),
        bootstrap=bootstrap,
        seed=seed,
        notes=notes,
        differences=tables.differences,
        rank_ceiling=rank_ceiling(models),
        n_configurations=tables.n_configurations,
        level=level,
        missing=missing,
        primary_statistic=tables.primary_statistic,
        primary_bootstrap=tables.primary_bootstrap,
        zoos=names,
        inputs=tuple(dict.fromkeys(i for q in parts for i in q.inputs)),
        design=design,
        primary_family=tables.primary_family,
        p_switch_share=None if pstar is None else switch_shares(pstar),
        pstar=pstar,
    )


def _check_alike(parts: Sequence[Part]) -> None:
    """Raise unless every part has the first one's task, axes and gap (checked in that order)."""
    first = parts[0]
    for q in parts[1:]:
        for what, a, b in (
            ("task", first.task, q.task),
            ("axes", first.axes, q.axes),
            ("gap", first.gap, q.gap),
        ):
            if a != b:
                raise SpecboundError(
                    f"cannot pool {first.source} and {q.source}: their {what} differ "
                    f"({a} vs {b}); pool zoos of one grid only"
                )


def _names(parts: Sequence[Part]) -> list[str]:
    """The parts' names; numbered (``name#i``) when two parts share one."""
    names = [q.name for q in parts]
    if len(set(names)) != len(names):
        names = [f"{q.name}#{i + 1}" for i, q in enumerate(parts)]
    return names


def _missing(parts: Sequence[Part]) -> list[str]:
    """The configurations no part has a usable model of (of the parts that name theirs)."""
    known = [q.missing for q in parts if q.missing is not None]
    return sorted(set.intersection(*map(set, known))) if known else []


def _joined(parts: Sequence[Part], names: list[str]) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """Every part's models in one table (a 'zoo' column added where absent), and every part's
    skipped models; a model name is prefixed with its zoo only where two parts share it."""
    import pandas as pd

    counts = _name_counts(parts)
    frames, skipped = [], []
    for name, q in zip(names, parts, strict=True):
        m = q.models.copy()
        m["model"] = _prefixed(m["model"], name, counts)
        if "zoo" not in m.columns:
            m.insert(1, "zoo", name)
        frames.append(m)
        s = q.skipped.copy()
        if len(s):
            s["model"] = _prefixed(s["model"], name, counts)
        skipped.append(s)
    return pd.concat(frames, ignore_index=True, sort=False), skipped


def _name_counts(parts: Sequence[Part]) -> dict[str, int]:
    """{model name: the number of parts that hold it (analyzed or skipped)}."""
    counts: dict[str, int] = {}
    for q in parts:
        gone = q.skipped["model"].astype(str) if "model" in q.skipped.columns else []
        for m in {*q.models["model"].astype(str), *gone}:
            counts[m] = counts.get(m, 0) + 1
    return counts


def _prefixed(column: pd.Series, name: str, counts: dict[str, int]) -> list[str]:
    return [f"{name}/{x}" if counts[str(x)] > 1 else str(x) for x in column.astype(str)]


def _ordered(
    models: pd.DataFrame, axes: list[str], measures: list[str], dropped: list[str]
) -> pd.DataFrame:
    """The pooled columns in order: model, zoo, the axes, the others (less the dropped
    measures), gap, converged, the measures, the ceiling columns (added as NaN where absent)."""
    for c in CEILING_COLUMNS:
        if c not in models.columns:
            models[c] = math.nan
    front = ["model", "zoo", *axes]
    rest = [
        c
        for c in models.columns
        if c not in front
        and c not in measures
        and c not in ("gap", "converged", *CEILING_COLUMNS, *FORM_COLUMNS)
        and c not in dropped
    ]
    tail = ["gap", *(["converged"] if "converged" in models.columns else [])]
    forms = [c for c in FORM_COLUMNS if c in models.columns and c not in measures]
    return models[front + rest + tail + measures + list(CEILING_COLUMNS) + forms]


def _notes(
    parts: Sequence[Part], names: list[str], dropped: list[str], missing: list[str]
) -> list[str]:
    """The parts' notes, then what pooling did (before the study's own notes)."""
    notes = [n for q in parts for n in q.notes]
    if len(parts) > 1:
        notes.append(
            f"{len(parts)} zoos pooled ({', '.join(names)}): configurations pooled by axis "
            "values, each model's source in the 'zoo' column"
        )
    if any(is_result_folder(q.source) for q in parts):
        notes.append(
            "re-evaluated from the models.csv of "
            + ", ".join(q.source for q in parts if is_result_folder(q.source))
            + " (no model analyzed again)"
        )
    if dropped:
        notes.append(f"measures not in every zoo, left out: {', '.join(dropped)}")
    if missing:
        notes.append(
            f"{len(missing)} configurations of the grid have no usable model in any zoo; "
            "they are named beside every verdict"
        )
    return notes


def _skipped(skipped: list[pd.DataFrame]) -> pd.DataFrame:
    """The parts' skipped models in one table of ``SKIPPED_COLUMNS``."""
    import pandas as pd

    skip = pd.concat(skipped, ignore_index=True) if skipped else pd.DataFrame()
    return skip.reindex(columns=list(SKIPPED_COLUMNS))
