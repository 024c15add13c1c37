"""``DIR/track.csv`` (+ ``track.json``): the one place that writes and reads a tracker's rows.

Columns::

    step, wall_s, analysis_s, <metrics the loop reported>, <measures>, <data measures>,
    QK_mean_p_star, QK_share_p0, QK_contribution, ... (OV, M_in, M_out),
    spectrum_adaptive_share_p0, spectrum_adaptive_ceiling_gap, adaptive_headroom_min,
    spectrum_adaptive_fixed_p0.5, spectrum_adaptive_fixed_p1, spectrum_adaptive_fixed_p2, nonfinite

Whole rows only: each row is appended with one ``os.write`` + fsync, and a failed write (a full
disk) is truncated back to the last whole row before :class:`SpecboundError` names the file; a
metric that first appears later rewrites the file through a temp file and a rename. A value that
is not a finite number is written empty and counted in ``nonfinite``. ``track.json`` beside it
marks the file as specbound's: a file specbound did not write is never touched, and a second run
into an existing track file is refused unless ``resume`` or ``overwrite``.

The directory is a growing folder (``io.growing``, :func:`track_folder`): its
``.specbound-manifest.json`` (the one schema, ``kind`` ``track``) records the checksum of
track.json and track.csv, each write holds ``.specbound-track.lock``, a file changed since
specbound wrote it is refused, and a resumed run takes back the row a stopped run was writing.
A track written before track folders had a manifest (track.json alone) is read as it is and
adopted (its manifest written) when a run resumes or replaces it.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._version import __version__
from ..errors import Param, SpecboundError
from ..io.checkpoint import check_regular_file
from ..io.growing import GrowingDir
from ..io.outdir import MANIFEST, read_manifest
from ..io.readback import Column, check_column, fail, read_json_object
from ..linalg.spectra import MATRIX_TYPES
from ..measures.spectrum_adaptive import FIXED_FORMS
from ..studies.gap import ACCURACY_PAIRS

if TYPE_CHECKING:
    import pandas as pd

TRACK_CSV = "track.csv"
TRACK_JSON = "track.json"
TRACK_FORMAT = "specbound-track/1"
#: The first columns of every track.csv.
BASE_COLUMNS = ("step", "wall_s", "analysis_s")
#: Per matrix type: mean p*, share of matrices at p* = 0, summed contribution c*.
TYPE_STATS = ("mean_p_star", "share_p0", "contribution")
TYPE_COLUMNS = tuple(f"{t}_{s}" for t in MATRIX_TYPES for s in TYPE_STATS)
#: Whole-model spectrum-adaptive statistics (Analysis attributes of these names).
ANALYSIS_COLUMNS = (
    "spectrum_adaptive_share_p0",
    "spectrum_adaptive_ceiling_gap",
    "adaptive_headroom_min",
)
#: The fixed-index forms of SPEC 10 v5 (``Analysis.fixed_index_forms``), after those.
FORM_COLUMNS = FIXED_FORMS
#: The count of the row's values that were not finite numbers (written empty).
NOTE_COLUMN = "nonfinite"
#: Every column that is not a metric the loop reports (``trajectory`` plots none of them as
#: a metric).
NOTE_COLUMNS = (NOTE_COLUMN,)

#: The track folder's lock file (``io.growing``): held while a row is written.
TRACK_LOCK = ".specbound-track.lock"
#: How long a write waits for another tracker's write into the same folder (seconds).
LOCK_WAIT = 10.0


def track_folder(out: str | os.PathLike[str]) -> GrowingDir:
    """The track directory as a growing folder (``io.growing``, one manifest schema of kind
    ``track``): track.json and track.csv checksummed, the TensorBoard sink's folder listed."""
    return GrowingDir(
        Path(out),
        kind="track",
        files=(TRACK_JSON, TRACK_CSV),
        dirs=("tensorboard",),
        lock=TRACK_LOCK,
    )


def cell(v: Any) -> tuple[str, bool]:
    """(the CSV text of ``v``, whether it was a non-finite number written empty)."""
    if v is None:
        return "", False
    if isinstance(v, (bool, np.bool_)):
        return str(int(v)), False
    if isinstance(v, (int, np.integer)):
        return str(int(v)), False
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if not math.isfinite(f):
            return "", True
        return repr(f), False  # shortest round-trip form
    return str(v), False


def _encode(values: Sequence[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    return buf.getvalue()


def _disk_error(path: Path, exc: OSError) -> SpecboundError:
    return SpecboundError(
        f"cannot write {path}: {exc.strerror or exc}; the rows written before are kept whole "
        "(free disk space, or choose another ",
        Param("out"),
        " directory)",
    )


class TrackFile:
    """``DIR/track.csv`` (+ ``track.json``) in the track folder (:func:`track_folder`: locked
    while a row is written, each file checksummed in the folder's manifest). ``resume``:
    continue a file an earlier run wrote (its rows are kept; a row its run was writing when it
    stopped is taken back or kept whole, ``GrowingDir.recover``); ``overwrite``: replace it;
    neither: an existing file with rows is refused. A file changed since specbound wrote it is
    refused either way, and so is a write after another tracker wrote into the folder."""

    def __init__(
        self,
        out: str | os.PathLike[str],
        meta: Mapping[str, Any],
        *,
        resume: bool = False,
        overwrite: bool = False,
    ) -> None:
        if resume and overwrite:
            raise SpecboundError("pass resume=True or overwrite=True, not both")
        self.dir = Path(out)
        self.csv = self.dir / TRACK_CSV
        self.json = self.dir / TRACK_JSON
        self.folder = track_folder(self.dir)
        self.columns: list[str] = []
        self.rows: list[dict[str, str]] = []
        self.meta = dict(meta)
        self._marked = False
        self._sha: str | None = None  # track.csv's checksum as this writer last recorded it
        self._check_and_load(resume, overwrite)

    @property
    def steps(self) -> set[int]:
        """The steps already recorded."""
        out = set()
        for r in self.rows:
            try:
                out.add(int(float(r.get("step", ""))))
            except ValueError:
                continue
        return out

    def _busy(self) -> SpecboundError:
        return SpecboundError(
            f"another specbound Tracker is writing to {self.dir}; stop it or choose another ",
            Param("out"),
            " directory",
        )

    def _mark(self) -> None:
        """Write track.json (before the first row): the file is specbound's."""
        text = json.dumps(
            {"written_by": f"specbound {__version__}", "format": TRACK_FORMAT, **self.meta},
            indent=1,
            default=str,
        )
        try:
            with self._locked():
                self.folder.replace(TRACK_JSON, (text + "\n").encode("utf-8"))
        except OSError as exc:
            raise SpecboundError(
                f"cannot write {self.json}: {exc.strerror or exc}; choose another ",
                Param("out"),
                " directory",
            ) from None
        self._marked = True

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the folder's lock; refuse when another tracker wrote track.csv since this one
        last did (its checksum moved)."""
        with self.folder.locked(self._busy, wait=LOCK_WAIT):
            if self.folder.recorded(TRACK_CSV) != self._sha:
                raise SpecboundError(
                    f"{self.csv} was written by another specbound Tracker after this one opened "
                    "it; one tracker per directory: stop the other or choose another ",
                    Param("out"),
                    " directory",
                )
            yield

    def _ours(self) -> bool:
        if not self.json.is_file():
            return False
        try:
            read_track_json(self.json)
        except SpecboundError:  # unreadable, not JSON, not ours
            return False
        return True

    def _check_folder(self) -> None:
        """Refuse a directory that is no place for a track: a file, files of ours that are not
        regular files or were changed since specbound wrote them, another specbound output."""
        if self.dir.exists() and not self.dir.is_dir():
            raise SpecboundError(f"out {self.dir} is a file; pass a directory for track.csv")
        for p in (self.csv, self.json):
            if p.exists() and not p.is_file():
                raise SpecboundError(
                    f"{p} exists and is not a regular file; move it away or choose another ",
                    Param("out"),
                    " directory",
                )
        if self.json.exists() and not self._ours():
            raise SpecboundError(
                f"{self.json} was not written by specbound; move it away or choose another ",
                Param("out"),
                " directory",
            )
        manifest = read_manifest(self.dir)
        if manifest is None:
            return  # a new folder, or a track written before track folders had a manifest
        if manifest.get("kind") != "track":
            raise SpecboundError(
                f"{self.dir} holds a specbound {manifest.get('kind') or 'results'} folder "
                f"({MANIFEST}), not a track; choose another ",
                Param("out"),
                " directory",
            )
        changed = self.folder.changed(appended=(TRACK_CSV,))
        if changed:
            raise SpecboundError(
                f"{self.dir / changed[0]} was changed since specbound wrote it; move it away "
                "(specbound never overwrites files it did not write) or choose another ",
                Param("out"),
                " directory",
            )

    def _check_and_load(self, resume: bool, overwrite: bool) -> None:
        self._check_folder()
        if not self.csv.exists():
            return
        if not self._ours():
            raise SpecboundError(
                f"{self.csv} exists and was not written by specbound (no "
                f"{TRACK_JSON}); move it away or choose another ",
                Param("out"),
                " directory",
            )
        header, rows = _read_rows(self.csv)
        if tuple(header[:3]) != BASE_COLUMNS:
            raise SpecboundError(
                f"{self.csv} does not start with {','.join(BASE_COLUMNS)}; it "
                "was not written by specbound: move it away"
            )
        if rows and not (resume or overwrite):
            raise SpecboundError(
                f"{self.csv} already holds {len(rows)} rows of an earlier run; pass "
                "resume=True to continue it or overwrite=True to replace it"
            )
        self._adopt()
        if overwrite:
            return  # replaced by the first row (temp file + rename)
        self.columns = header
        self.rows = [dict(zip(header, r, strict=False)) for r in rows]

    def _adopt(self) -> None:
        """Make the track folder's manifest say what is there before writing into it: a track
        written before track folders had a manifest is recorded as it is, a row an interrupted
        run was writing is taken back (cut) or recorded (whole)."""
        legacy = self.folder.manifest() is None
        try:
            with self.folder.locked(self._busy, wait=LOCK_WAIT):
                if legacy:
                    self.folder.record(TRACK_JSON, TRACK_CSV)
                else:
                    self.folder.recover(TRACK_CSV)
                self._sha = self.folder.recorded(TRACK_CSV)
        except OSError as exc:
            raise _disk_error(self.csv, exc) from None

    def append(self, row: Mapping[str, Any], tail: Sequence[str]) -> dict[str, str]:
        """Append ``row`` (a whole row, or nothing on a write error); keys not yet in the
        header widen it (file rewritten through a temp file). Returns the cells written.

        Column order: the base columns, metrics in order of appearance, then ``tail``
        (measures and the other computed columns) in its order, ``nonfinite`` last.
        """
        if not self._marked:
            self._mark()
        cells: dict[str, str] = {}
        bad = 0
        for k, v in row.items():
            if k == NOTE_COLUMN:
                continue
            cells[k], nonfinite = cell(v)
            bad += nonfinite
        cells[NOTE_COLUMN] = str(bad)
        new = [k for k in cells if k not in self.columns]
        if new or not self.csv.exists() or not self.columns:
            cols = list(self.columns) + new
            tail_set = set(tail) | {NOTE_COLUMN}
            columns = (
                list(BASE_COLUMNS)
                + [c for c in cols if c not in BASE_COLUMNS and c not in tail_set]
                + [c for c in tail if c in cols and c != NOTE_COLUMN]
                + [NOTE_COLUMN]
            )
            self._rewrite(columns, [*self.rows, cells])
            self.columns = columns
        else:
            self._write_csv(_encode([cells.get(c, "") for c in self.columns]), append=True)
        self.rows.append(cells)
        return cells

    def _rewrite(self, columns: list[str], rows: list[dict[str, str]]) -> None:
        text = _encode(columns) + "".join(_encode([r.get(c, "") for c in columns]) for r in rows)
        self._write_csv(text, append=False)

    def _write_csv(self, text: str, *, append: bool) -> None:
        """Append ``text`` (whole rows) to track.csv, or replace the file by it (atomic), under
        the folder's lock, checksummed (``io.growing``); an OSError (a full disk) leaves the
        rows written before whole and is one line naming the file."""
        data = text.encode("utf-8")
        try:
            with self._locked():
                if append:
                    self.folder.append(TRACK_CSV, data)
                else:
                    self.folder.replace(TRACK_CSV, data)
                self._sha = self.folder.recorded(TRACK_CSV)
        except OSError as exc:
            raise _disk_error(self.csv, exc) from None


# --- reading ---------------------------------------------------------------------------------


def _read_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of ``path``; an interrupted last line (no newline at the end of the file
    and too few fields) is left out with a warning."""
    check_regular_file(path, "track.csv", "pass the out directory of a specbound Tracker")
    try:
        text = path.read_bytes().decode("utf-8")
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SpecboundError(f"{path} cannot be read as a track.csv ({first})") from None
    header = rows[0] if rows else []
    body = rows[1:]
    if body and text and not text.endswith("\n") and len(body[-1]) < len(header):
        warnings.warn(
            f"specbound: {path} ends in an interrupted row (line {len(rows)}); it is left out",
            stacklevel=3,
        )
        body = body[:-1]
    return header, body


def _track_schema(header: Sequence[str]) -> list[Any]:
    """The checked columns of a track.csv with ``header``: ``step`` an integer >= 0, the
    times >= 0, accuracies (``studies.gap``'s metric names) in [0, 1], ``nonfinite`` an integer
    >= 0; every cell may be empty (undefined) but ``step``. Losses are the loop's own (any
    finite value)."""
    accuracies = {c for pair in ACCURACY_PAIRS for c in pair}
    out = [Column("step", "int", low=0.0)]
    for c in header:
        if c in ("wall_s", "analysis_s"):
            out.append(Column(c, empty=True, low=0.0))
        elif c in accuracies:
            out.append(Column(c, empty=True, low=0.0, high=1.0))
        elif c == NOTE_COLUMN:
            out.append(Column(c, "int", empty=True, low=0.0))
    return out


def read_track_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """track.json (``path``: the file or its directory) as written: a JSON object whose
    ``format`` is :data:`TRACK_FORMAT`; else one-line ``io.readback.ReadbackError``."""
    p = Path(path)
    p = p / TRACK_JSON if p.is_dir() else p
    info = read_json_object(p, TRACK_JSON)
    if info.get("format") != TRACK_FORMAT:
        raise fail(p, None, None, f"'format' is {info.get('format')!r}, not {TRACK_FORMAT!r}")
    return info


def read_track(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The rows of ``path`` (a tracker's out directory or its track.csv) as a DataFrame sorted
    by step, floats exact; every cell a finite number or empty (NaN: undefined), the ranges of
    ``_track_schema`` (step an integer >= 0, accuracies in [0, 1], ...). One-line
    :class:`SpecboundError` for a file specbound did not write or a damaged one."""
    import pandas as pd

    p = Path(path)
    csv_path = p / TRACK_CSV if p.is_dir() else p
    if not csv_path.exists():
        raise SpecboundError(
            f"{csv_path} does not exist; pass the out directory of a specbound "
            "Tracker/callback (it holds track.csv)"
        )
    header, rows = _read_rows(csv_path)
    if tuple(header[:3]) != BASE_COLUMNS:
        raise SpecboundError(
            f"{csv_path} is not a specbound track.csv (it must start with {','.join(BASE_COLUMNS)})"
        )
    if len(set(header)) != len(header):
        dup = next(c for c in header if header.count(c) > 1)
        raise SpecboundError(f"{csv_path} names column '{dup}' twice; the file is damaged")
    if not rows:
        raise SpecboundError(f"{csv_path} has no rows yet; train for at least one evaluation")
    for i, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise SpecboundError(
                f"{csv_path} line {i} has {len(row)} fields but the header has "
                f"{len(header)}; the file is damaged"
            )
    columns: dict[str, np.ndarray] = {}
    for j, col in enumerate(header):  # every value a finite number or empty (undefined)
        values = np.full(len(rows), np.nan)
        for i, row in enumerate(rows):
            text = row[j].strip()
            if text == "" or text.lower() == "nan":  # empty (or an older tracker's nan): undefined
                continue
            try:
                v = float(text)
            except ValueError:
                v = math.nan
            if not math.isfinite(v):
                raise SpecboundError(
                    f"{csv_path} line {i + 2}, column '{col}': {row[j]!r} "
                    "is not a finite number; the file is damaged"
                )
            values[i] = v
        columns[col] = values
    df = pd.DataFrame(columns, columns=header)

    for col in _track_schema(header):  # the ranges of the first read (accuracies, steps, ...)
        df[col.name] = check_column(df[col.name], col, csv_path)
    dup = df["step"].duplicated()
    if df["step"].isna().any() or dup.any():
        which = f"step {df['step'][dup].iloc[0]:g} twice" if dup.any() else "an empty step"
        raise SpecboundError(f"{csv_path} has {which}; one row per evaluation step")
    return df.sort_values("step", kind="stable").reset_index(drop=True)
