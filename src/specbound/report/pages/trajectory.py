"""``specbound trajectory``: the report page of a ``track.csv`` (SPEC 11).

The page opens with the answer, in the words of ``studies.trajectory_answer`` (which decides
them from the milestones table: grokking phase, measures that moved at the test metric's step,
instability and swings after the plateau, the rank-ceiling caveat); report/ only renders them.
Then the metrics and mean p* panels, one panel per measure, the milestones and every
row (paged). The rows and milestones are a ``studies.trajectory.Trajectory``, whose ``to_dir``
writes the folder with :func:`write_report` (figures/, report.html) as ``extra``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...studies.trajectory import (  # noqa: F401 (Phase, Plateau, plateau re-exported)
    FLAT_TOL,
    MIN_DELAY,
    MIN_RISE,
    NET_TOL,
    PLATEAU,
    Phase,
    Plateau,
    Trajectory,
    analysis_share,
    grokking_phase,
    measure_columns,
    plateau,
    read_trajectory,
    track_gap,
)
from ...studies.trajectory_answer import answer_sentences, test_metric_step
from ...track import TRACK_CSV, read_track
from ..figures import trajectory as F
from ..figures.style import figure_formats as check_formats
from ..figures.style import require_matplotlib, writing_formats
from ..html import figure_html, file_link, page, sig3, table

if TYPE_CHECKING:
    import pandas as pd


def load_track(path: str | Path) -> pd.DataFrame:
    """The rows of a track.csv (``track.read_track``: the one reader)."""
    return read_track(path)


def write_trajectory_report(
    track: str | Path,
    out: str | Path,
    gap_kind: str = "auto",
    *,
    figure_formats: str | Sequence[str] | None = None,
) -> Path:
    """Write ``out``/report.html, figures/ (metrics, trajectory; SVG, or the formats
    ``figure_formats`` names, e.g. ``"png,pdf"``) and a copy of the validated track.csv,
    through ``io.output_dir`` (all or nothing): what the CLI does, ``read_trajectory`` then
    ``Trajectory.to_dir`` with :func:`write_report` as ``extra``."""
    formats = check_formats(figure_formats)
    require_matplotlib()
    t = read_trajectory(track, gap_kind)
    return t.to_dir(out, extra=lambda tmp: write_report(t, tmp, figure_formats=formats))


def write_report(
    trajectory: Trajectory,
    out_dir: str | Path,
    *,
    figure_formats: str | Sequence[str] | None = None,
) -> Path:
    """Write figures/ (metrics, trajectory; SVG or ``figure_formats``) and report.html for
    ``trajectory`` into ``out_dir``, the folder its track.csv is written to (call it inside
    ``io.output_dir``, e.g. ``trajectory.to_dir(out, extra=lambda tmp: write_report(trajectory,
    tmp))``)."""
    formats = check_formats(figure_formats)
    require_matplotlib()
    tmp = Path(out_dir)
    df, gap_kind = trajectory.rows, trajectory.gap_kind
    g = track_gap(df, gap_kind)
    names = measure_columns(df)
    phase = grokking_phase(df)
    ph = None if phase is None else (phase.start, phase.end)
    test = test_metric_step(df)
    with writing_formats(formats):
        figs = [
            F.metrics_figure(df, tmp / "figures", g, ph),
            F.trajectory_figure(df, tmp / "figures", names, ph, None if test is None else test[1]),
        ]
    ms = trajectory.milestones()
    spent, share = analysis_share(df)
    share_text = "an unknown share" if share is None else f"{100 * share:.2g}%"
    said = answer_sentences(df, ms)
    summary = (
        f"{len(df):,} evaluations from step {int(df['step'].min()):,} to "
        f"{int(df['step'].max()):,}; analysis took {spent:.3g} s in all, {share_text} of "
        "the wall time up to the last evaluation."
        + (
            f" Gap: {g.label}."
            if g is not None
            else " No gap: the loop reported no train/test accuracy or loss pair."
        )
    )
    half_change = (
        "Half-change step: the first step at which a series had covered half of "
        "its net change from the first to the last evaluation; undefined when the series "
        f"does not move (net change below {100 * NET_TOL:g}% of its range, or a range "
        f"below {FLAT_TOL:g} of its size)."
    )
    path = tmp / "report.html"
    path.write_text(
        page(
            "specbound trajectory",
            docs=("trajectory", "measures"),
            template="trajectory.html",
            said=said,
            summary=summary,
            half_change=half_change,
            track_link=file_link(tmp, TRACK_CSV),
            figures=[figure_html(f) for f in figs if f is not None],
            milestones=table(ms, formats={"first": sig3, "last": sig3}),
            n_rows=len(df),
            rows=table(df, page_size=50),
        ),
        encoding="utf-8",
    )
    return path
