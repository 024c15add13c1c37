"""A training run read back from its track.csv (SPEC 11): the rows, and when each series moved.

``read_trajectory(track, gap_kind)`` returns a :class:`Trajectory`:

- ``rows``: the validated rows of track.csv (``track.trackfile.read_track``);
- ``milestones()``: per measure, metric and the generalization gap (:mod:`.gap`), the first
  and last finite value and the half-change step (``half_change_step``): the first step by
  which the series had covered half of its net change. A series that does not move has none:
  its net change is below :data:`NET_TOL` of the range it swept (it ends where it started), or
  its range is below :data:`FLAT_TOL` of its size (:func:`movement` says which);
- ``summary()``: what ``specbound trajectory --json`` prints, less the report path;
- ``to_dir(out, extra)``: the validated track.csv through ``io.output_dir``; the page
  (``report.pages.trajectory.write_report``: figures/ and report.html) is the ``extra``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import SpecboundError
from ..io import output_dir
from ..io.files import json_safe
from ..io.outdir import local_inputs
from ..track import (
    ANALYSIS_COLUMNS,
    BASE_COLUMNS,
    FORM_COLUMNS,
    NOTE_COLUMNS,
    TYPE_COLUMNS,
    all_data_measure_names,
    all_measure_names,
    computed_columns,
    half_change_step,
)
from ..track.trackfile import TRACK_CSV, TRACK_JSON, read_track
from ..validation import PathLike, validate_params
from .gap import GAP, resolve_gap

if TYPE_CHECKING:
    import pandas as pd

#: A series "does not move" (half-change step undefined) when its net change, last minus first
#: finite value, is below this share of its range max - min (it ends where it started) ...
NET_TOL = 0.05
#: ... or its range is below this share of its largest magnitude (constant up to rounding).
FLAT_TOL = 1e-9
#: Grokking: train accuracy within this of its maximum ...
PLATEAU = 0.02
#: ... at least this share of the step range before test accuracy's half-change step, and
#: test accuracy rising by at least this much overall.
MIN_DELAY, MIN_RISE = 0.1, 0.2
#: The columns of ``milestones()``.
MILESTONE_COLUMNS = ["series", "kind", "first", "last", "half_change_step", "note"]


def track_gap(df: pd.DataFrame, kind: str) -> Any:
    """The gap of ``kind`` (auto, acc or loss: ``studies.gap.resolve_gap``) in the columns of
    ``df``, or None when the loop reported no such pair. An unknown ``kind`` is refused
    (``resolve_gap``)."""
    return resolve_gap(df.columns, kind, strict=False)


def gap(df: pd.DataFrame, kind: str = "auto") -> tuple[str, np.ndarray] | None:
    """(label, values) of the generalization gap (``studies.gap``), or None without metrics."""
    g = track_gap(df, kind)
    return None if g is None else (g.label, g.values(df))


def measure_columns(df: pd.DataFrame) -> list[str]:
    """The measure columns of ``df`` with at least one finite value, in SPEC 9 order."""
    return [
        m
        for m in [*all_measure_names(), *all_data_measure_names()]
        if m in df.columns and np.isfinite(df[m].to_numpy(dtype=float)).any()
    ]


def metric_columns(df: pd.DataFrame) -> list[str]:
    """The columns the training loop reported (not computed by the tracker)."""
    known = {*BASE_COLUMNS, *TYPE_COLUMNS, *ANALYSIS_COLUMNS, *FORM_COLUMNS, *NOTE_COLUMNS}
    known |= {*all_measure_names(), *all_data_measure_names(), *computed_columns()}
    return [c for c in df.columns if c not in known]


def movement(v: np.ndarray) -> str:
    """ "" when the finite values of ``v`` move; else why there is no half-change step: "no
    values", "does not move" (range below FLAT_TOL of its size) or "ends where it started"
    (net change below NET_TOL of its range)."""
    x = np.asarray(v, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return "no values"
    span = float(x.max() - x.min())
    if span <= FLAT_TOL * float(np.abs(x).max()) or span == 0:
        return "does not move"
    net = abs(float(x[-1] - x[0]))
    if net < NET_TOL * span:
        return f"ends where it started (net change {net:.3g}, {100 * net / span:.2g}% of its range)"
    return ""


def _milestone(name: str, kind: str, steps: np.ndarray, v: np.ndarray) -> dict[str, Any]:
    ok = np.isfinite(v)
    why = movement(v)
    return {
        "series": name,
        "kind": kind,
        "first": float(v[ok][0]) if ok.any() else None,
        "last": float(v[ok][-1]) if ok.any() else None,
        "half_change_step": None if why else half_change_step(steps, v),
        "note": why,
    }


def milestones(df: pd.DataFrame, gap_kind: str = "auto") -> pd.DataFrame:
    """Per measure (and metric): first and last value and the step by which half of the net
    change had happened (``track.half_change_step``; undefined, with the reason in ``note``,
    for a series that does not move: :func:`movement`)."""
    import pandas as pd

    steps = df["step"].to_numpy(dtype=float)
    rows = [
        _milestone(m, "measure", steps, df[m].to_numpy(dtype=float)) for m in measure_columns(df)
    ]
    rows += [
        _milestone(m, "metric", steps, df[m].to_numpy(dtype=float)) for m in metric_columns(df)
    ]
    g = gap(df, gap_kind)
    if g is not None:
        rows.append(_milestone(g[0], "gap", steps, g[1]))
    return pd.DataFrame(rows, columns=MILESTONE_COLUMNS)


@dataclass
class Trajectory:
    """The rows of one track.csv and the gap read from them (module doc)."""

    rows: pd.DataFrame
    gap_kind: str = "auto"
    #: The files read (track.csv, track.json): ``to_dir`` never writes over or around them (a
    #: folder inside the tracker's folder is fine, the tracker's folder is not).
    inputs: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def milestones(self) -> pd.DataFrame:
        """When each series moved (:func:`milestones` of ``rows`` with ``gap_kind``)."""
        return milestones(self.rows, self.gap_kind)

    def summary(self) -> dict[str, Any]:
        """What ``specbound trajectory --json`` prints, less the report path the CLI adds: a
        JSON-ready dict (``json.dumps(..., allow_nan=False)`` holds) with ``rows`` (the number
        of evaluations) and ``milestones`` (as records, an undefined value None)."""
        return {"rows": len(self.rows), "milestones": json_safe(self.milestones())}

    def to_dir(self, path: str | Path, extra: Callable[[Path], object] | None = None) -> Path:
        """Write the validated rows as track.csv into ``path`` through ``io.output_dir`` (one
        atomic write; refuses a folder specbound did not write). ``extra(tmp)`` may add files
        to the same write, e.g. ``lambda tmp: report.pages.trajectory.write_report(t, tmp)``
        for figures/ and report.html (the CLI does this). Refused (SpecboundError): a ``path``
        that is or contains one of ``inputs``."""
        with output_dir(path, inputs=self.inputs) as tmp:
            tmp = Path(tmp)
            self.rows.to_csv(tmp / TRACK_CSV, index=False, float_format="%.17g")
            if extra is not None:
                extra(tmp)
        return Path(path)


@validate_params({"track": (PathLike(),), "gap_kind": GAP})
def read_trajectory(track: str | Path, gap_kind: str = "auto") -> Trajectory:
    """The :class:`Trajectory` of ``track`` (a tracker's out directory or its track.csv:
    ``read_track``). Refused (one-line ``SpecboundError``): an unknown ``gap_kind``, a file
    with no measure value to plot. The arguments are checked first (``@validate_params``)."""
    df = read_track(track)
    if not measure_columns(df):
        raise SpecboundError("track.csv holds no measure values to plot")
    d = Path(track)
    read = [d / TRACK_CSV, d / TRACK_JSON] if d.is_dir() else [d]
    return Trajectory(df, gap_kind, local_inputs(*read))


@dataclass(frozen=True)
class Phase:
    """A detected grokking phase: train accuracy at its plateau from ``start``; test
    accuracy's half-change step ``end``."""

    train: str
    test: str
    start: float
    end: float


@dataclass(frozen=True)
class Plateau:
    """Train accuracy ``train`` first within PLATEAU of its maximum ``top`` at step ``start``."""

    train: str
    start: float
    top: float


def plateau(df: pd.DataFrame) -> Plateau | None:
    """The step at which train accuracy first came within PLATEAU of its maximum (None without
    an accuracy pair or with fewer than 3 finite train accuracies)."""
    g = resolve_gap(df.columns, "accuracy", strict=False)
    if g is None:
        return None
    steps = df["step"].to_numpy(dtype=float)
    tr = df[g.train].to_numpy(dtype=float)
    ok = np.isfinite(tr)
    if ok.sum() < 3:
        return None
    top = float(np.max(tr[ok]))
    t0 = float(steps[ok][np.argmax(tr[ok] >= top - PLATEAU)])
    return Plateau(g.train, t0, top)


def grokking_phase(df: pd.DataFrame) -> Phase | None:
    """The grokking phase, or None: train accuracy within PLATEAU of its maximum at step t0,
    test accuracy rising by >= MIN_RISE with its half-change step t1 >= t0 + MIN_DELAY x range."""
    g = resolve_gap(df.columns, "accuracy", strict=False)
    pl = plateau(df)
    if g is None or pl is None:
        return None
    steps = df["step"].to_numpy(dtype=float)
    te = df[g.test].to_numpy(dtype=float)
    ok_te = np.isfinite(te)
    if ok_te.sum() < 3:
        return None
    span = float(steps.max() - steps.min()) or 1.0
    t0 = pl.start
    t1 = half_change_step(steps, te)
    rise = float(te[ok_te][-1] - te[ok_te][0])
    if t1 is None or rise < MIN_RISE or t1 - t0 < MIN_DELAY * span:
        return None
    return Phase(g.train, g.test, t0, float(t1))


def analysis_share(df: pd.DataFrame) -> tuple[float, float | None]:
    """(seconds the evaluations took, their share of the wall time): sum of analysis_s over
    (max wall_s + the last evaluation's analysis_s), the wall time up to the end of the last
    evaluation; the share is None when that wall time is not positive."""
    spent = float(df["analysis_s"].sum())
    total = float(df["wall_s"].max()) + float(df["analysis_s"].iloc[-1])
    return spent, (spent / total if total > 0 else None)
