"""``specbound trajectory``: figure and self-contained report.html of a ``track.csv`` (SPEC 11).

Each measure against the step, with the generalization gap (train_acc - test_acc, or
test_loss - train_loss) on a twin axis. report.html embeds the figure as base64 PNG with
inline CSS: no URL of any kind.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import SpecboundError
from .track import BASE_COLUMNS, TRACK_CSV, TYPE_COLUMNS, all_measure_names, half_change_step

if TYPE_CHECKING:
    import pandas as pd

#: (train, test) metric names tried in order; accuracy pairs give train - test.
ACC_PAIRS = (
    ("train_acc", "test_acc"),
    ("train_accuracy", "test_accuracy"),
    ("train_acc", "val_acc"),
    ("train_accuracy", "val_accuracy"),
    ("train_accuracy", "eval_accuracy"),
    ("train_acc", "eval_acc"),
)
#: loss pairs give test - train.
LOSS_PAIRS = (
    ("train_loss", "test_loss"),
    ("train_loss", "val_loss"),
    ("train_loss", "eval_loss"),
    ("loss", "eval_loss"),
)


def load_track(path: str | Path) -> pd.DataFrame:
    """The rows of ``path`` (a tracker's out directory or its track.csv), floats exact."""
    import pandas as pd

    from .checkpoint import check_regular_file

    p = Path(path)
    csv_path = p / TRACK_CSV if p.is_dir() else p
    if not csv_path.exists():
        raise SpecboundError(
            f"{csv_path} does not exist; pass the out directory of a specbound "
            "Tracker/callback (it holds track.csv)"
        )
    check_regular_file(csv_path, "track.csv", "pass the out directory of a specbound Tracker")
    try:
        with csv_path.open(newline="") as fh:
            rows = list(csv.reader(fh))
        df = pd.read_csv(csv_path)
    except (OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SpecboundError(f"{csv_path} cannot be read as a track.csv ({first})") from None
    header = rows[0] if rows else []
    if tuple(header[:3]) != BASE_COLUMNS:
        raise SpecboundError(
            f"{csv_path} is not a specbound track.csv (it must start with {','.join(BASE_COLUMNS)})"
        )
    if df.empty:
        raise SpecboundError(f"{csv_path} has no rows yet; train for at least one evaluation")
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise SpecboundError(
                f"{csv_path} line {i} has {len(row)} fields but the header has "
                f"{len(header)}; the file is damaged"
            )
    for col in df.columns:  # every value a finite number or empty (undefined)
        values = pd.to_numeric(df[col], errors="coerce")
        bad = (values.isna() & df[col].notna()) | np.isinf(values)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise SpecboundError(
                f"{csv_path} line {i + 2}, column '{col}': {df[col].iloc[i]!r} "
                "is not a finite number; the file is damaged"
            )
        df[col] = values
    dup = df["step"].duplicated()
    if df["step"].isna().any() or dup.any():
        which = f"step {df['step'][dup].iloc[0]:g} twice" if dup.any() else "an empty step"
        raise SpecboundError(f"{csv_path} has {which}; one row per evaluation step")
    return df.sort_values("step", kind="stable").reset_index(drop=True)


def gap(df: pd.DataFrame, kind: str = "auto") -> tuple[str, np.ndarray] | None:
    """(label, values) of the generalization gap, or None when the metrics are not there.

    ``kind``: "acc" (train - test accuracy), "loss" (test - train loss) or "auto" (acc first).
    """
    if kind not in ("auto", "acc", "loss"):
        raise SpecboundError(f"--gap must be auto, acc or loss, got '{kind}'")
    tries: list[tuple[str, str, bool]] = []
    if kind in ("auto", "acc"):
        tries += [(a, b, True) for a, b in ACC_PAIRS]
    if kind in ("auto", "loss"):
        tries += [(a, b, False) for a, b in LOSS_PAIRS]
    for train, test, is_acc in tries:
        if train in df.columns and test in df.columns:
            tr = df[train].to_numpy(dtype=float)
            te = df[test].to_numpy(dtype=float)
            if is_acc:
                return f"gap = {train} - {test}", tr - te
            return f"gap = {test} - {train}", te - tr
    return None


def measure_columns(df: pd.DataFrame) -> list[str]:
    """The measure columns of ``df`` with at least one finite value, in SPEC 9 order."""
    out = []
    for m in all_measure_names():
        if m in df.columns and np.isfinite(df[m].to_numpy(dtype=float)).any():
            out.append(m)
    return out


def metric_columns(df: pd.DataFrame) -> list[str]:
    known = set(BASE_COLUMNS) | set(TYPE_COLUMNS) | set(all_measure_names())
    return [c for c in df.columns if c not in known]


def trajectory_figure(df: pd.DataFrame, out_dir: Path, gap_kind: str = "auto") -> Any:
    """One panel per measure against step; the gap (if known) on a twin axis."""
    from .plots import require_matplotlib, save

    plt = require_matplotlib()
    names = measure_columns(df)
    if not names:
        raise SpecboundError("track.csv holds no measure values to plot")
    g = gap(df, gap_kind)
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.0 * rows), squeeze=False)
    steps = df["step"].to_numpy(dtype=float)
    for ax, name in zip(axes.flat, names, strict=False):
        ax.plot(steps, df[name].to_numpy(dtype=float), color="#3b6fb6", marker=".", ms=3)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("step")
        ax.tick_params(labelsize=8)
        if g is not None:
            tw = ax.twinx()
            tw.plot(steps, g[1], color="#c0504d", lw=1, alpha=0.8)
            tw.tick_params(labelsize=8, colors="#c0504d")
            tw.set_ylabel("gap", color="#c0504d", fontsize=8)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    caption = "Blue: the measure (left axis). "
    caption += (
        f"Red: {g[0]} (right axis)."
        if g is not None
        else "No gap: the loop reported no train/test accuracy or loss pair."
    )
    fig.tight_layout()
    return save(fig, out_dir, "trajectory", "Measures during training", caption)


def milestones(df: pd.DataFrame, gap_kind: str = "auto") -> pd.DataFrame:
    """Per measure (and metric): first and last value and the step by which half of the net
    change had happened (``half_change_step``)."""
    import pandas as pd

    steps = df["step"].to_numpy(dtype=float)
    rows = []
    series = [(m, "measure") for m in measure_columns(df)]
    series += [(m, "metric") for m in metric_columns(df)]
    g = gap(df, gap_kind)
    for name, kind in series:
        v = df[name].to_numpy(dtype=float)
        rows.append(_milestone(name, kind, steps, v))
    if g is not None:
        rows.append(_milestone(g[0], "gap", steps, g[1]))
    return pd.DataFrame(rows, columns=["series", "kind", "first", "last", "half_change_step"])


def _milestone(name: str, kind: str, steps: np.ndarray, v: np.ndarray) -> dict[str, Any]:
    ok = np.isfinite(v)
    first = float(v[ok][0]) if ok.any() else None
    last = float(v[ok][-1]) if ok.any() else None
    return {
        "series": name,
        "kind": kind,
        "first": first,
        "last": last,
        "half_change_step": half_change_step(steps, v),
    }


def write_trajectory_report(track: str | Path, out: str | Path, gap_kind: str = "auto") -> Path:
    """Write ``out``/report.html, figures/trajectory.{png,svg} and a copy of track.csv."""
    from .io import output_dir
    from .plots import require_matplotlib
    from .report import _esc, figure_html, page, table_html

    require_matplotlib()
    if gap_kind not in ("auto", "acc", "loss"):
        raise SpecboundError(f"--gap must be auto, acc or loss, got '{gap_kind}'")
    df = load_track(track)
    with output_dir(out) as tmp:
        fig = trajectory_figure(df, tmp / "figures", gap_kind)
        df.to_csv(tmp / TRACK_CSV, index=False, float_format="%.17g")  # validated rows
        ms = milestones(df, gap_kind)
        wall = float(df["wall_s"].max())
        spent = float(df["analysis_s"].sum())
        total = wall + float(df["analysis_s"].iloc[-1])
        share_text = f"{100 * spent / total:.2g}%" if total > 0 else "an unknown share"
        answer = (
            f'<div class="answer"><p>{len(df)} evaluations from step {int(df["step"].min())} '
            f"to {int(df['step'].max())}; analysis took {spent:.3g} s in all, "
            f"{share_text} of the wall time up to the last evaluation.</p>"
            "<p>Half-change step: the first step at which a series had covered half of its net "
            "change from the first to the last evaluation; a measure whose half-change step "
            "comes before the test metric's moved first.</p></div>"
        )
        sections = [
            answer,
            "<h2>Trajectory</h2>" + figure_html(fig),
            "<h2>When each series moved</h2>" + table_html(ms),
            f"<h2>Rows ({_esc(TRACK_CSV)})</h2>" + table_html(df, max_rows=200),
        ]
        (tmp / "report.html").write_text(page("specbound trajectory", sections))
    return Path(out)
