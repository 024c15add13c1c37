"""Reading and validating a zoo manifest (SPEC 10), before any model is analyzed.

A manifest is a CSV with a ``model`` column (a checkpoint directory beside the manifest, an
absolute path or a hub id), optional ``init``, ``converged``, ``train_size`` and metric columns
(``train_acc``, ``test_acc``, ``train_loss``, ``test_loss``), and hyperparameter columns. A
``specbound zoo train`` directory holds one as ``zoo.csv`` beside ``zoo.json``.

Axes: the ones named (``axes``), else those of zoo.json's ``axes`` (or, for a bare manifest, of
its columns) that vary, leaving out the model/init/converged/metric columns, bookkeeping
(name, path, status, error, test_size, steps, wall_s) and ``seed``: seeds are replicates, never
axes, unless ``axes`` names ``seed``.

``validate_manifest`` refuses, with one line each (``ManifestError``, CLI exit 2): accuracies
outside [0, 1], losses that are negative or not finite, a ``train_size`` that is not a positive
integer, a column named like an output column, a column twice (up to whitespace), correlate's
own models.csv, and ``$`` (TeX) in axis names or values.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import Param, SpecboundError
from ...io.files import check_regular_file
from ...io.readback import read_zoo_json

if TYPE_CHECKING:
    import pandas as pd

METRIC_COLUMNS = ("train_acc", "test_acc", "train_loss", "test_loss")
#: Manifest columns that are never hyperparameter axes.
RESERVED_COLUMNS = frozenset({"model", "init", "converged", *METRIC_COLUMNS})
#: Columns that are not axes unless named in ``axes``: bookkeeping, and ``seed`` (replicates).
NOT_DEFAULT_AXES = frozenset(
    {"name", "path", "status", "error", "test_size", "steps", "wall_s", "seed"}
)


class ManifestError(SpecboundError):
    """A manifest that cannot be used; the message names the file, the column and the row."""


@dataclass
class Zoo:
    """A parsed manifest: the table as read, its path, the axes and an optional task."""

    manifest: Path
    table: pd.DataFrame
    axes: list[str]
    task: str | None = None
    #: zoo.json's grid (axis -> values, seed included), None for a bare manifest.
    grid: dict[str, list[Any]] | None = None
    #: zoo.json's ``design`` (``io.readback.ZOO_DESIGNS``: ``adaptivity``), None when it has none.
    design: str | None = None
    #: zoo.json's ``cells`` ([depth, width] pairs a non-factorial grid keeps), None: all.
    cells: list[list[int]] | None = None


def parse_axes(axes: str | Sequence[str] | None) -> list[str] | None:
    """``"a, b"`` or ``["a", "b"]`` -> ``["a", "b"]``; None or empty -> None."""
    if axes is None:
        return None
    if isinstance(axes, str):
        axes = axes.split(",")
    out = [str(a).strip() for a in axes if str(a).strip()]
    return out or None


def _header(manifest: Path) -> list[str]:
    """The raw column names of the first non-comment line (duplicates kept)."""
    import csv

    try:
        with open(manifest, newline="", encoding="utf-8") as fh:
            for line in fh:
                if line.strip() and not line.lstrip().startswith("#"):
                    return next(csv.reader([line], skipinitialspace=True))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ManifestError(f"cannot read manifest {manifest}: {exc}") from None
    return []


def read_zoo(path: str | Path, axes: str | Sequence[str] | None = None) -> Zoo:
    """Read a manifest CSV, or a ``specbound zoo train`` directory (DIR/zoo.csv + DIR/zoo.json).

    Axes as in the module doc. Errors are one line (``SpecboundError``).
    """
    manifest, meta = _locate(Path(path))
    _check_file(manifest)
    table = _read_table(manifest)
    _check_models(table, manifest)
    chosen = _choose_axes(table, manifest, meta, parse_axes(axes))
    task = meta.get("task")
    design = meta.get("design")
    return Zoo(
        manifest,
        table,
        chosen,
        None if task is None else str(task),
        _grid(meta),
        design,
        cells=meta.get("cells") or None,
    )


def _locate(p: Path) -> tuple[Path, dict[str, Any]]:
    """The manifest path and zoo.json's content (``{}`` when there is none) for ``p``: a
    manifest file, or a zoo directory holding zoo.csv (and maybe zoo.json)."""
    if not p.is_dir():
        return p, {}
    manifest = p / "zoo.csv"
    if not manifest.is_file():
        raise ManifestError(
            f"{p} is a directory without zoo.csv; pass the zoo directory "
            "written by 'specbound zoo train' or ",
            Param("manifest", "FILE.csv"),
        )
    meta_file = p / "zoo.json"
    if not meta_file.is_file():
        return manifest, {}

    return manifest, read_zoo_json(meta_file)


def _check_file(manifest: Path) -> None:
    """Refuse a manifest that is missing or not a regular file (a FIFO would block forever)."""
    if manifest.exists():
        check_regular_file(
            manifest,
            "manifest",
            advice="pass a zoo.csv file or a zoo directory",
            error=ManifestError,
        )
    if not manifest.is_file():
        raise ManifestError(
            f"manifest {manifest} does not exist; pass a zoo.csv file or a zoo directory"
        )


def _read_table(manifest: Path) -> pd.DataFrame:
    """The manifest as a table, column names stripped; a column twice is refused first."""
    import pandas as pd

    header = [str(c).strip() for c in _header(manifest)]
    seen: set[str] = set()
    for c in header:
        if c in seen:
            raise ManifestError(
                f"manifest {manifest} has the column '{c}' twice (up to whitespace); "
                "rename one of them"
            )
        seen.add(c)
    try:
        table = pd.read_csv(manifest, skipinitialspace=True, comment="#")
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ManifestError(
            f"cannot read manifest {manifest} as CSV: {' '.join(str(exc).split())}"
        ) from None
    table.columns = [str(c).strip() for c in table.columns]
    return table


def _check_models(table: pd.DataFrame, manifest: Path) -> None:
    """The ``model`` column exists, lists at least one model, none empty and none twice (as
    written, or as one directory spelled two ways: m0, ./m0/)."""
    if "model" not in table.columns:
        raise ManifestError(
            f"manifest {manifest} has no 'model' column (columns: {', '.join(table.columns)})"
        )
    if len(table) == 0:
        raise ManifestError(f"manifest {manifest} lists no models")
    if table["model"].isna().any():
        raise ManifestError(
            f"manifest {manifest}: row {int(table['model'].isna().argmax()) + 2} "
            "has an empty 'model'"
        )
    if table["model"].astype(str).duplicated().any():
        dup = table["model"][table["model"].astype(str).duplicated()].iloc[0]
        raise ManifestError(f"manifest {manifest} lists model '{dup}' twice")
    where: dict[str, str] = {}
    for m in table["model"].astype(str).str.strip():
        entry = resolve_entry(m, manifest.parent)
        key = os.path.realpath(entry) if os.path.exists(entry) else entry
        if key in where:
            raise ManifestError(
                f"manifest {manifest} lists model '{m}' twice (as '{where[key]}' and '{m}')"
            )
        where[key] = m


def _choose_axes(
    table: pd.DataFrame, manifest: Path, meta: dict[str, Any], chosen: list[str] | None
) -> list[str]:
    """The axes named (``chosen``), else the default ones (module doc); each must be a
    hyperparameter column, named once."""
    if chosen is None:
        chosen = _default_axes(table, manifest, meta)
    bad = [a for a in chosen if a not in table.columns or a in RESERVED_COLUMNS]
    if bad:
        raise ManifestError(
            f"axis '{bad[0]}' is not a hyperparameter column of {manifest} "
            f"(columns: {', '.join(table.columns)})"
        )
    if len(set(chosen)) != len(chosen):
        raise ManifestError(Param("axes"), f" names an axis twice: {','.join(chosen)}")
    return chosen


def _default_axes(table: pd.DataFrame, manifest: Path, meta: dict[str, Any]) -> list[str]:
    """zoo.json's ``axes`` (else the columns) that vary, reserved columns, bookkeeping and
    seeds left out."""
    listed = meta.get("axes")
    if listed is not None and not (
        isinstance(listed, list) and all(isinstance(a, str) for a in listed)
    ):
        raise ManifestError(
            f"zoo.json beside {manifest}: 'axes' must be a list of column "
            f"names, got {listed!r}; fix it or pass ",
            Param("axes"),
        )
    candidates = [str(a) for a in listed] if isinstance(listed, list) else list(table.columns)
    skip = {"seed"} if isinstance(listed, list) else NOT_DEFAULT_AXES  # seeds: replicates
    return [
        c
        for c in candidates
        if c in table.columns
        and c not in RESERVED_COLUMNS
        and c not in skip
        and table[c].nunique(dropna=False) > 1
    ]


def _grid(meta: dict[str, Any]) -> dict[str, list[Any]] | None:
    """zoo.json's ``grid`` when every axis lists at least one value, else None."""
    grid = meta.get("grid")
    if not (isinstance(grid, dict) and all(isinstance(v, list) and v for v in grid.values())):
        return None
    return grid


def resolve_entry(entry: str, base: Path) -> str:
    """A manifest path relative to ``base`` when it exists there, else the entry (hub id/path)."""
    entry = str(entry).strip()
    p = Path(entry).expanduser()
    if p.is_absolute():
        return str(p)
    local = base / p
    # org/name is a hub id unless its first part is a directory beside the manifest
    looks_hub = (
        entry.count("/") == 1 and not entry.startswith(".") and not (base / p.parts[0]).is_dir()
    )
    return entry if looks_hub and not local.exists() else str(local)


def parse_converged(values: Any) -> np.ndarray:
    """True/False from bools, 0/1 or words (true/false, yes/no); missing counts as converged."""
    out = []
    for v in list(values):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append(True)
        elif isinstance(v, (bool, np.bool_)):
            out.append(bool(v))
        elif isinstance(v, (int, float, np.integer, np.floating)):
            out.append(float(v) != 0)
        else:
            s = str(v).strip().lower()
            if s in ("true", "t", "yes", "y", "1", "1.0", ""):
                out.append(True)
            elif s in ("false", "f", "no", "n", "0", "0.0"):
                out.append(False)
            else:
                raise ManifestError(f"'converged' must be true/false, got '{v}'")
    return np.array(out, dtype=bool)


# --- validation ------------------------------------------------------------------------------


def _numeric(table: pd.DataFrame, col: str, manifest: Path) -> np.ndarray:
    """The column as floats (empty cells: NaN); a cell that is not a number is an error."""
    import pandas as pd

    raw = table[col]
    vals = pd.to_numeric(raw, errors="coerce").to_numpy(float)
    bad = np.isnan(vals) & raw.notna().to_numpy() & (raw.astype(str).str.strip() != "").to_numpy()
    if bad.any():
        i = int(np.argmax(bad))
        raise ManifestError(
            f"manifest {manifest}: '{col}' of model '{table['model'].iloc[i]}' (row {i + 2}) "
            f"is '{raw.iloc[i]}', not a number"
        )
    return vals


def _row_error(table: pd.DataFrame, manifest: Path, col: str, mask: np.ndarray, want: str) -> None:
    if mask.any():
        i = int(np.argmax(mask))
        raise ManifestError(
            f"manifest {manifest}: '{col}' of model '{table['model'].iloc[i]}' (row {i + 2}) "
            f"is {table[col].iloc[i]}; it must be {want}"
        )


def _has_tex(s: str) -> bool:
    return "$" in s


def validate_manifest(
    zoo: Zoo, output_columns: Iterable[str], models_csv_marks: Iterable[str] = ()
) -> None:
    """Refuse a manifest that would give wrong numbers or fail late (module doc).

    ``output_columns``: the columns correlate adds to models.csv (measures, their bound forms,
    ``gap``, ...); ``models_csv_marks``: columns whose presence together with ``gap`` says the
    file is correlate's own models.csv.
    """
    table, manifest = zoo.table, zoo.manifest
    cols = set(table.columns)
    marks = [c for c in models_csv_marks if c in cols]
    if "gap" in cols and marks:
        raise ManifestError(
            f"{manifest} is correlate's own models.csv (it has 'gap' and '{marks[0]}'), not a "
            "manifest; pass the zoo's zoo.csv"
        )
    clash = [c for c in table.columns if c in set(output_columns)]
    if clash:
        raise ManifestError(
            f"manifest {manifest}: column '{clash[0]}' collides with an output column of "
            "correlate; rename it"
        )
    for col, (ok, want) in METRIC_RULES.items():
        if col in cols:
            v = _numeric(table, col, manifest)
            _row_error(table, manifest, col, ~ok(v), want)
    _check_axes(zoo)


def _unit_interval(v: np.ndarray) -> np.ndarray:
    return np.isnan(v) | ((v >= 0) & (v <= 1))


def _finite_non_negative(v: np.ndarray) -> np.ndarray:
    return np.isnan(v) | (np.isfinite(v) & (v >= 0))


def _positive_integer(v: np.ndarray) -> np.ndarray:
    return np.isnan(v) | (np.isfinite(v) & (v >= 1) & (v == np.floor(v)) & (v < 2.0**53))


#: The metric columns a manifest may hold, checked in this order: column -> (which values are
#: fine, an empty cell too, what the value must be).
METRIC_RULES: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "train_acc": (_unit_interval, "in [0, 1]"),
    "test_acc": (_unit_interval, "in [0, 1]"),
    "train_loss": (_finite_non_negative, "a finite >= 0"),
    "test_loss": (_finite_non_negative, "a finite >= 0"),
    "train_size": (_positive_integer, "a positive integer"),
}


def _check_axes(zoo: Zoo) -> None:
    """Refuse an axis whose name or value holds '$' (TeX), or a row without a finite value."""
    table, manifest = zoo.table, zoo.manifest
    for a in zoo.axes:
        if _has_tex(a):
            raise ManifestError(
                f"manifest {manifest}: axis name '{a}' holds '$' (TeX); rename the column"
            )
        for i, val in enumerate(table[a].tolist()):
            if val is None or (isinstance(val, float) and not math.isfinite(val)):
                raise ManifestError(
                    f"manifest {manifest}: row {i + 2} (model '{table['model'].iloc[i]}') has "
                    f"no finite value in the axis column '{a}' ({val!r}); fill it in or drop "
                    "the row"
                )
            if isinstance(val, str) and _has_tex(val):
                raise ManifestError(
                    f"manifest {manifest}: axis '{a}' of model '{table['model'].iloc[i]}' "
                    f"(row {i + 2}) is {val!r}, which holds '$' (TeX); write it without '$'"
                )


def read_zoo_csv(path: str | Path) -> pd.DataFrame:
    """zoo.csv of a zoo directory (or a manifest), read back: the manifest reader's table, with
    the value checks of the first read (:func:`read_zoo`, :func:`validate_manifest`)."""
    zoo = read_zoo(path)
    validate_manifest(zoo, ())
    return zoo.table
