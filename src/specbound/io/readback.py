"""Reading back files specbound wrote: the same checks as a first read, one-line errors.

A file specbound wrote and reads again (a correlate folder's tables, a zoo's zoo.json, ...) may
have been edited, truncated or replaced since. Every reader of such a file states the file's
schema as :class:`Column` s and calls :func:`read_table` (CSV) or :func:`read_json_object`
(JSON), which refuse, with one :class:`ReadbackError` line naming the file, the row and the
column:

- a file that is missing, not a regular file, not UTF-8, or not CSV / JSON (duplicate JSON keys
  included);
- a header naming a column twice, a required column absent, a row with more or fewer fields
  than the header, a file without its final newline (``whole``: a truncated write), fewer rows
  than ``min_rows``;
- a cell of the wrong type (``abc`` or ``True`` where a number belongs), an empty cell where
  one is required, a number that is not finite or outside ``[low, high]``, an integer column
  holding a fraction, a word not among the column's ``choices``;
- two rows with the same ``key``.

Columns not named in the schema are kept as read (other versions add columns). Numbers are
parsed exactly as ``pandas.read_csv`` parses them (the values are those a plain read gives), so
re-reading a valid file changes no number. The kind-specific readers live beside their writers
(``studies.readback`` for correlate, study and zoo files, ``track.trackfile`` for track files).
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import SpecboundError
from .files import check_regular_file, parse_json, read_small_file

if TYPE_CHECKING:
    import pandas as pd

#: What a cell of a column holds.
KINDS = ("real", "int", "text", "bool", "value")
#: The words a bool column accepts (case-insensitive), and their value.
BOOL_WORDS = {"true": True, "1": True, "1.0": True, "false": False, "0": False, "0.0": False}


class ReadbackError(SpecboundError):
    """A file specbound wrote that cannot be read back as written (tampered or truncated)."""


@dataclass(frozen=True)
class Column:
    """One column of a table's schema.

    ``kind``: real, int (a real that is a whole number), text, bool, or value (a number or a
    word, kept as read: an axis; a number must be finite); ``required``: the
    column must be there; ``empty``: an empty cell (undefined) is allowed; ``finite``: a number
    must be finite; ``low`` / ``high``: inclusive bounds of a number; ``choices``: the words a
    text cell may hold.
    """

    name: str
    kind: str = "real"
    required: bool = True
    empty: bool = False
    finite: bool = True
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] | None = None


def fail(path: Path | str, row: int | None, column: str | None, what: str) -> ReadbackError:
    """The error for a bad cell: ``<file>: row R, column 'C': <what>``; ``row`` is the line
    of the file (the header is line 1)."""
    where = ", ".join(
        [*([f"row {row}"] if row is not None else []), *([f"column '{column}'"] if column else [])]
    )
    return ReadbackError(
        f"{path}" + (f": {where}" if where else "") + f": {what}; the file was changed or cut "
        "short since specbound wrote it: restore it or write it again"
    )


def read_table(
    path: str | Path,
    columns: Sequence[Column],
    *,
    key: Sequence[str] = (),
    min_rows: int = 1,
    whole: bool = True,
    what: str = "table",
) -> pd.DataFrame:
    """``path`` (CSV) as a DataFrame, every column of ``columns`` checked (module doc); an
    empty file is a table without rows. ``key``: columns whose values together are unique per
    row. ``whole``: the file must end with a newline (specbound's writers always do)."""
    import pandas as pd

    p = Path(path)
    check_regular_file(p, what, f"pass the {what} specbound wrote", error=ReadbackError)
    try:
        text = p.read_bytes().decode("utf-8")
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise fail(p, None, None, f"cannot be read as CSV ({_first_line(exc)})") from None
    if whole and text and not text.endswith("\n"):
        raise fail(p, len(rows), None, "the last row has no line end")
    header = rows[0] if rows else []
    seen: set[str] = set()
    for c in header:
        if c in seen:
            raise fail(p, 1, c, "the header names this column twice")
        seen.add(c)
    for i, r in enumerate(rows[1:], start=2):
        if r and len(r) != len(header):
            raise fail(p, i, None, f"{len(r)} fields, but the header has {len(header)}")
    if not header:
        frame = pd.DataFrame()
    else:
        try:
            frame = pd.read_csv(io.StringIO(text))
        except (ValueError, pd.errors.ParserError) as exc:
            raise fail(p, None, None, f"cannot be read as CSV ({_first_line(exc)})") from None
    if len(frame) < min_rows:
        raise fail(p, None, None, f"{len(frame)} rows; it must hold at least {min_rows}")
    for col in columns:
        if col.name not in frame.columns:
            if col.required:
                raise fail(p, 1, col.name, "the column is missing")
            continue
        if col.kind in ("real", "int"):
            _check_number_words(rows, header.index(col.name), col.name, p)
        frame[col.name] = check_column(frame[col.name], col, p)
    _check_key(frame, list(key), p)
    return frame


def _check_number_words(rows: list[list[str]], j: int, name: str, path: Path) -> None:
    """Refuse a cell of number column ``j`` that is neither empty nor a number, the words
    ``pandas.read_csv`` reads as undefined (``nan``, ``NA``, ``null``, ...) included: specbound
    writes an undefined value as an empty cell (``rows``: the raw rows, header first)."""
    for i, r in enumerate(rows[1:], start=2):
        cell = r[j].strip() if j < len(r) else ""
        if not cell:
            continue
        try:
            number = not math.isnan(float(cell))
        except ValueError:
            number = False
        if not number:
            raise fail(path, i, name, f"{cell!r} is not a number (specbound writes an "
                       "undefined value as an empty cell)")  # fmt: skip


def check_column(values: pd.Series, col: Column, path: Path | str) -> pd.Series:
    """``values`` checked against ``col`` (module doc); numbers come back as read, other kinds
    normalised (text: str or None; bool: bool or None)."""
    from pandas.api.types import is_bool_dtype

    if col.kind not in KINDS:
        raise ValueError(f"unknown column kind {col.kind!r}")
    if col.kind in ("real", "int"):
        return _numbers(values, col, path)
    if col.kind == "value" or (col.kind == "bool" and is_bool_dtype(values.dtype)):
        for i, v in enumerate(values.tolist()):
            if _is_empty(v) and not col.empty:
                raise fail(path, i + 2, col.name, "the cell is empty")
            if isinstance(v, float) and math.isinf(v):
                raise fail(path, i + 2, col.name, f"{_shown(v)} is not a finite number")
        return values
    out: list[bool | str | None] = []
    for i, v in enumerate(values.tolist()):
        if _is_empty(v):
            if not col.empty:
                raise fail(path, i + 2, col.name, "the cell is empty")
            out.append(None)
            continue
        if col.kind == "bool":
            word = BOOL_WORDS.get(str(v).strip().lower())
            if word is None:
                raise fail(path, i + 2, col.name, f"{v!r} is not true or false")
            out.append(word)
            continue
        s = str(v)
        if col.choices is not None and s not in col.choices:
            raise fail(path, i + 2, col.name, f"{s!r} is not one of {', '.join(col.choices)}")
        out.append(s)
    import pandas as pd

    dtype = bool if col.kind == "bool" and None not in out else object
    return pd.Series(out, index=values.index, dtype=dtype, name=values.name)


def _numbers(values: pd.Series, col: Column, path: Path | str) -> pd.Series:
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    if is_bool_dtype(values.dtype) or not is_numeric_dtype(values.dtype):
        values = _parsed_numbers(values, col, path)
    for i, x in enumerate(values.to_numpy(dtype=float)):
        _check_number(x, values.iloc[i], i + 2, col, path)
    return values


def _parsed_numbers(values: pd.Series, col: Column, path: Path | str) -> pd.Series:
    """A text (or bool) column as floats: empty cells NaN, anything else not a number refused."""
    import pandas as pd

    parsed = []
    for i, v in enumerate(values.tolist()):
        if _is_empty(v):
            parsed.append(math.nan)
            continue
        if isinstance(v, (bool, np.bool_)) or not _is_number_text(v):
            raise fail(path, i + 2, col.name, f"{v!r} is not a number")
        parsed.append(float(v))
    return pd.Series(parsed, index=values.index, name=values.name, dtype=float)


def _check_number(x: float, shown: Any, row: int, col: Column, path: Path | str) -> None:
    """The number ``x`` (shown as ``shown``) of ``col`` on ``row`` against the column's rules:
    empty only where allowed, finite, whole, within [low, high]."""
    if math.isnan(x):
        if not col.empty:
            raise fail(path, row, col.name, "the cell is empty, a number belongs there")
        return
    if col.finite and not math.isfinite(x):
        raise fail(path, row, col.name, f"{_shown(x)} is not a finite number")
    if col.kind == "int" and math.isfinite(x) and x != math.floor(x):
        raise fail(path, row, col.name, f"{_shown(shown)} is not a whole number")
    if (col.low is not None and x < col.low) or (col.high is not None and x > col.high):
        lo = "-inf" if col.low is None else f"{col.low:g}"
        hi = "inf" if col.high is None else f"{col.high:g}"
        raise fail(path, row, col.name, f"{_shown(shown)} is outside [{lo}, {hi}]")


def _shown(v: Any) -> str:
    """``v`` as the message shows it: a number plainly (``-0.5``, not ``np.float64(-0.5)``)."""
    if isinstance(v, (bool, np.bool_)):
        return repr(bool(v))
    if isinstance(v, (np.integer, int)):
        return repr(int(v))
    if isinstance(v, (np.floating, float)):
        return repr(float(v))
    return repr(v)


def _is_number_text(v: Any) -> bool:
    if isinstance(v, (int, float, np.integer, np.floating)):
        return True
    try:
        float(str(v))
    except ValueError:
        return False
    return True


def _is_empty(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or str(v).strip() == ""


def _check_key(frame: pd.DataFrame, key: list[str], path: Path) -> None:
    if not key or not len(frame):
        return
    seen: dict[tuple[str, ...], int] = {}
    for i, row in enumerate(frame[key].astype(str).itertuples(index=False, name=None)):
        if row in seen:
            shown = ", ".join(f"{k}={v}" for k, v in zip(key, row, strict=True))
            raise fail(path, i + 2, key[0], f"{shown} repeats row {seen[row]}")
        seen[row] = i + 2


def read_json_object(path: str | Path, what: str = "JSON file") -> dict[str, Any]:
    """``path`` as a JSON object (duplicate keys refused), else one-line :class:`ReadbackError`."""
    p = Path(path)
    raw = read_small_file(p, what, ReadbackError, advice=f"pass the {what} specbound wrote")
    data = parse_json(raw, str(p), error=ReadbackError)
    if not isinstance(data, dict):
        raise fail(p, None, None, f"it holds a JSON {type(data).__name__}, not an object")
    return data


def json_field(
    data: dict[str, Any],
    name: str,
    kinds: type | tuple[type, ...],
    path: Path | str,
    *,
    required: bool = True,
    default: Any = None,
    low: float | None = None,
) -> Any:
    """``data[name]`` checked to be one of ``kinds`` (bool is no int or float here) and, for a
    number, >= ``low``; ``default`` when absent and not ``required``."""
    if name not in data:
        if required:
            raise fail(path, None, None, f"the key '{name}' is missing")
        return default
    v = data[name]
    kinds_t = kinds if isinstance(kinds, tuple) else (kinds,)
    bad_bool = isinstance(v, bool) and bool not in kinds_t
    if bad_bool or not isinstance(v, kinds_t):
        names = " or ".join("null" if k is type(None) else k.__name__ for k in kinds_t)
        raise fail(path, None, None, f"'{name}' is {v!r}, not {names}")
    if (
        low is not None
        and isinstance(v, (int, float))
        and not isinstance(v, bool)
        and (not math.isfinite(v) or v < low)
    ):
        raise fail(path, None, None, f"'{name}' is {v!r}; it must be a number >= {low:g}")
    return v


def text_list(data: dict[str, Any], name: str, path: Path | str, *, required: bool = True) -> Any:
    """``data[name]`` as a list of distinct strings (None when absent and not ``required``)."""
    v = json_field(data, name, list, path, required=required)
    if v is None:
        return None
    if not all(isinstance(x, str) for x in v):
        raise fail(path, None, None, f"'{name}' must list strings, got {v!r}")
    if len(set(v)) != len(v):
        raise fail(path, None, None, f"'{name}' names an entry twice: {v!r}")
    return list(v)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def present(path: str | Path) -> bool:
    """Whether ``path`` is there in any form: a regular file, but also a directory, a FIFO, a
    link to a device, a dangling link or a symlink loop. Folder detection asks this, not
    ``is_file()``, so that a folder whose models.csv is a directory (or a loop, or /dev/zero)
    reaches the reader, which names what is wrong (:func:`~specbound.io.files.
    check_regular_file`), instead of passing for some other kind of folder."""
    return os.path.lexists(path)


def folder_file(path: str | Path, name: str) -> Path:
    """``path / name`` when ``path`` is a folder, else ``path`` itself (the file was named)."""
    p = Path(path)
    return p / name if p.is_dir() else p


#: The designs a zoo.json may declare (SPEC 10 v5: ``adaptivity``, the zoos that test the
#: adaptive choice of p; their primary contrasts are D0, A1 and A3 on tau_arch).
ADAPTIVITY_DESIGN = "adaptivity"
ZOO_DESIGNS = (ADAPTIVITY_DESIGN,)


def read_zoo_json(path: str | Path) -> dict[str, Any]:
    """zoo.json of a zoo directory (or the file itself), checked: an object whose ``task`` and
    ``preset`` are strings (or null), whose ``design`` is one of ``ZOO_DESIGNS`` (or null or
    absent), whose ``cells`` (or null or absent) lists [depth, width] pairs of positive integers
    (the cells a non-factorial grid keeps) and whose ``grid`` lists at least one finite value
    per axis.
    Here, below ``studies``, so that the manifest reader can use it without a cycle."""
    p = folder_file(path, "zoo.json")
    meta = read_json_object(p, "zoo.json")
    json_field(meta, "task", (str, type(None)), p, required=False)
    json_field(meta, "preset", (str, type(None)), p, required=False)
    json_field(meta, "max_steps", int, p, required=False, low=1)
    json_field(meta, "target_loss", (int, float), p, required=False, low=0.0)
    json_field(meta, "num_models", int, p, required=False, low=0)
    for name in ("description", "size_axis", "grid_file"):
        json_field(meta, name, (str, type(None)), p, required=False)
    cells = json_field(meta, "cells", (list, type(None)), p, required=False)
    for c in cells or []:
        if not (
            isinstance(c, list)
            and len(c) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in c)
        ):
            raise fail(p, None, None, f"'cells' must list [depth, width] pairs, got {c!r}")
    design = json_field(meta, "design", (str, type(None)), p, required=False)
    if design is not None and design not in ZOO_DESIGNS:
        raise fail(p, None, None, f"'design' is {design!r}, not one of {', '.join(ZOO_DESIGNS)}")
    text_list(meta, "axes", p, required=False)
    grid = json_field(meta, "grid", (dict, type(None)), p, required=False)
    for axis, values in (grid or {}).items():
        if not isinstance(values, list) or not values:
            raise fail(p, None, None, f"grid axis '{axis}' must list its values, got {values!r}")
        for v in values:
            if isinstance(v, float) and not math.isfinite(v):
                raise fail(p, None, None, f"grid axis '{axis}' holds {v!r}")
    return meta
