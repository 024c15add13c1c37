"""``specbound correlate ZOO``: does a measure predict generalization? (SPEC 10)"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..engines import options_for
from ..naming import printable
from .app import Command, app, fail, flag_of, handle_errors
from .common import print_json
from .options import (
    DEFAULT_ENGINE,
    Device,
    Engine,
    FigureFormats,
    GapChoice,
    Json,
    NoCache,
    PrimaryChoice,
    Quiet,
    RayAddress,
    check_figure_formats,
    out_option,
)


@app.command(cls=Command)
@handle_errors
def correlate(
    zoo: Annotated[
        list[Path] | None,
        typer.Argument(
            help="A zoo directory written by 'specbound zoo train' (reads ZOO/zoo.csv); "
            "several are pooled as one study (each model keeps its source in a 'zoo' column). "
            "A folder written by 'specbound correlate' is re-evaluated from its models.csv "
            "(nothing analyzed again); several such folders are pooled.",
            show_default=False,
        ),
    ] = None,
    manifest: Annotated[
        Path | None,
        typer.Option(
            "--manifest", help="zoo.csv: model, metrics, optional converged/init/train_size."
        ),
    ] = None,
    out: Path = out_option("Write models.csv, correlation.csv, report."),
    axes: Annotated[
        str | None,
        typer.Option(
            "--axes", help="Hyperparameter columns: a,b,...", show_default="from the manifest"
        ),
    ] = None,
    gap: Annotated[
        GapChoice | None,
        typer.Option(
            "--gap",
            case_sensitive=False,
            help="accuracy (train-test) or loss (test-train).",
            show_default="accuracy when present",
        ),
    ] = None,
    include_unconverged: Annotated[
        bool, typer.Option("--include-unconverged", help="Keep models with converged=false.")
    ] = False,
    bootstrap: Annotated[
        int,
        typer.Option(
            "--bootstrap",
            help="Bootstrap draws for intervals and p-values (>= 200; verdicts need >= 1000; "
            "the primary contrasts use at least 10000).",
        ),
    ] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    primary: Annotated[
        PrimaryChoice,
        typer.Option(
            "--primary",
            help="Primary contrasts: auto (A1-A3 on tau_arch for a zoo designed for it: fixed n "
            "and >= 2 cells of depth x width with >= 3 configurations; else P1-P3), arch or "
            "standard (P1-P3).",
        ),
    ] = "auto",
    data_measures: Annotated[
        bool,
        typer.Option(
            "--data-measures",
            help="Add flatness, sharpness and margin measures (SPEC 12) of every zoo model, "
            "on its recorded training data (needs torch).",
        ),
    ] = False,
    data_workers: Annotated[
        int | None,
        typer.Option(
            "--data-workers",
            help="Processes computing the data measures, each model on one torch thread (the "
            "values do not depend on it).",
            show_default="one per CPU core",
        ),
    ] = None,
    grid: Annotated[
        list[Path] | None,
        typer.Option(
            "--grid",
            help="With correlate folders written before protocol v3: the zoo directory (or "
            "zoo.json) of each, in order, so the grid's missing configurations are named.",
        ),
    ] = None,
    device: Device = None,
    no_cache: NoCache = False,
    quiet: Quiet = False,
    as_json: Json = False,
    figure_formats: FigureFormats = "svg",
    engine: Engine = DEFAULT_ENGINE,
    ray_address: RayAddress = None,
) -> None:
    """Does a measure predict generalization? SPEC 10 over a zoo of trained models."""
    from ..report.figures.style import require_matplotlib
    from ..report.pages.correlate import correlation_files
    from ..studies.correlate import driver

    formats = check_figure_formats(figure_formats)
    options = driver.CorrelateOptions(
        zoos=list(zoo or []),
        manifest=manifest,
        grid=grid,
        axes=axes,
        gap=gap,
        include_unconverged=include_unconverged,
        bootstrap=bootstrap,
        seed=seed,
        primary=primary,
        data_measures=data_measures,
        data_workers=data_workers,
        device=device,
        cache=not no_cache,
    )
    run = driver.compute(
        out,
        options,
        engine=engine,
        engine_options=options_for(engine, address=ray_address),
        progress=driver.Progress() if quiet else driver.Progress(_note, _line, _resumed),
        ready=require_matplotlib,  # after the cheap input checks: a bad input is told first
        flag=flag_of,  # skip reasons and notes name the flags
    )
    files = correlation_files(run.result, figure_formats=formats, **run.beside.page_args())
    written = driver.write(run, files)
    if as_json:
        print_json(written.summary())
    elif not quiet:
        from ..report.terminal_correlate import print_correlation

        print_correlation(written.result, out=written.out)
    if written.data_failed:
        lost, where = written.data_failed, written.out
        fail(
            f"data measures failed for {len(lost)} models (listed in {where / 'skipped.csv'} "
            f"with the reason; first: {lost[0]}); the other models are written to {where}; run "
            "the same command again to retry them",
            code=1,
        )


def _note(i: int, n: int, name: str, error: str | None) -> None:
    """One model done (or skipped, with the reason): ``[i/n] name`` on stderr."""
    line = f"{name}" + (f": skipped: {error}" if error else "")
    sys.stderr.write(f"[{i}/{n}] {printable(line)}\n")


def _line(line: str) -> None:
    sys.stderr.write(line + "\n")


def _resumed(name: str) -> None:
    sys.stderr.write(f"resumed {printable(name)} (finished earlier)\n")
