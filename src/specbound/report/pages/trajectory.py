"""``specbound trajectory``: the report page of a ``track.csv`` (SPEC 11).

The page opens with the answer, in the words of ``studies.trajectory_answer`` (which decides
them from the milestones table: grokking phase, measures that moved at the test metric's step,
instability and swings after the plateau, the rank-ceiling caveat); report/ only renders them.
Then the metrics and mean p* panels, one panel per measure, the milestones and every
row (paged). The rows and milestones are a ``studies.trajectory.Trajectory``, whose ``to_dir``
writes the folder; :func:`trajectory_page` draws the figures into it and returns the page,
which ``io.files.write_report_page`` writes (:func:`write_report` does both, as ``extra``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...io.files import write_report_page
from ...studies.trajectory import (
    Trajectory,
    analysis_share,
    grokking_phase,
    measure_columns,
    read_trajectory,
    track_gap,
)
from ...studies.trajectory_answer import answer_sentences, half_change_rule, test_metric_step
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


def trajectory_page(
    trajectory: Trajectory,
    out_dir: str | Path,
    *,
    figure_formats: str | Sequence[str] | None = None,
) -> str:
    """The page of ``trajectory`` (templates/trajectory.html), its figures (metrics,
    trajectory; SVG or ``figure_formats``) drawn into ``out_dir``/figures, the folder its
    track.csv is written to (the ``tmp`` of ``trajectory.to_dir(out, extra=...)``): the text
    for ``out_dir``/report.html, which ``io.files.write_report_page`` writes."""
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
    return page(
        "specbound trajectory",
        docs=("trajectory", "measures"),
        template="trajectory.html",
        said=said,
        summary=summary,
        half_change=half_change_rule(),
        track_link=file_link(tmp, TRACK_CSV),
        figures=[figure_html(f) for f in figs if f is not None],
        milestones=table(ms, formats={"first": sig3, "last": sig3}),
        n_rows=len(df),
        rows=table(df, page_size=50),
    )


def write_report(
    trajectory: Trajectory,
    out_dir: str | Path,
    *,
    figure_formats: str | Sequence[str] | None = None,
) -> Path:
    """Figures/ and report.html for ``trajectory`` in ``out_dir``: :func:`trajectory_page`'s
    text written by ``io.files.write_report_page`` (call it inside ``io.output_dir``, e.g.
    ``trajectory.to_dir(out, extra=lambda tmp: write_report(trajectory, tmp))``)."""
    text = trajectory_page(trajectory, out_dir, figure_formats=figure_formats)
    return write_report_page(out_dir, text)
