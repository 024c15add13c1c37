"""``specbound trajectory TRACK``: the measures a tracker recorded during training."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import Command, app, handle_errors
from .common import print_json
from .options import FigureFormats, GapChoice, Json, check_figure_formats, out_option


@app.command("trajectory", cls=Command)
@handle_errors
def trajectory_command(
    track: Annotated[
        Path,
        typer.Argument(help="A tracker's out directory (holds track.csv).", show_default=False),
    ],
    out: Path = out_option("Write report.html, figures/, track.csv."),
    gap: Annotated[
        GapChoice,
        typer.Option(
            "--gap",
            case_sensitive=False,
            help="auto, acc (train-test) or loss (test-train).",
        ),
    ] = "auto",
    as_json: Json = False,
    figure_formats: FigureFormats = "svg",
) -> None:
    """Measures recorded during training against step, with the generalization gap."""
    from ..io import check_output_dir, write_report_page
    from ..report.figures.style import require_matplotlib
    from ..report.pages.trajectory import trajectory_page
    from ..studies.trajectory import read_trajectory

    formats = check_figure_formats(figure_formats)
    # the files it reads (a report folder inside the tracker's folder is fine; the folder is not)
    check_output_dir(out, inputs=[track / "track.csv", track / "track.json"])
    result = read_trajectory(track, gap)  # the input checked (cheap) before the extra
    require_matplotlib()
    result.to_dir(
        out,
        extra=lambda tmp: write_report_page(
            tmp, trajectory_page(result, tmp, figure_formats=formats)
        ),
    )
    if as_json:
        print_json({"report": str(out / "report.html"), **result.summary()})
        return
    typer.echo(f"wrote {out / 'report.html'}")
