"""``specbound correlate ZOO``: does a measure predict generalization? (SPEC 10)"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..naming import printable
from ..validation import check_params
from .app import Command, app, fail, handle_errors
from .common import clear_sweep_state, make_engine, print_json, sweep_state
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
    from ..io import check_output_dir, write_report_page
    from ..report.figures.style import require_matplotlib
    from ..report.pages.correlate import correlation_page
    from ..studies.correlate import correlate as run_correlate
    from ..studies.correlate import multizoo as P

    formats = check_figure_formats(figure_formats)
    zoos = list(zoo or [])
    if (not zoos and manifest is None) or (zoos and manifest is not None):
        fail("correlate needs a zoo: ZOO directories (or correlate folders) or --manifest FILE.csv")
    folders = [z for z in zoos if P.is_result_folder(z)]
    if folders and len(folders) != len(zoos):
        fail("pass either zoo directories or correlate folders, not both")
    if grid and (not folders or len(grid) != len(folders)):
        fail("--grid goes with correlate folders, one zoo directory per folder, in order")
    if folders and (data_measures or data_workers is not None):
        fail(
            "--data-measures: a correlate folder's measures are read from its models.csv; "
            "run correlate on the zoo directory to compute them"
        )
    P.check_distinct(zoos)
    source = manifest if manifest is not None else zoos[0]
    # correlate()'s own constraints, before the engine starts and before a folder is read
    # (pool(), the folders' path, accepts bootstrap 0 too: the command does not)
    # (and before the plot extra is required: a bad value is told first, everywhere)
    scalars = {"bootstrap": bootstrap, "seed": seed}
    if data_workers is not None:
        scalars["data_workers"] = data_workers
    check_params(scalars, run_correlate.parameter_constraints)  # type: ignore[attr-defined]
    if data_workers is not None and not data_measures:
        fail("--data-workers goes with --data-measures (it sets the processes computing them)")
    eng = make_engine(engine, ray_address)
    if data_workers is None:
        from ..studies.correlate.data import default_workers

        data_workers = default_workers(device) if data_measures else 1
    # every input: zoos or correlate folders, --manifest, --grid; a single correlate folder may
    # be re-evaluated in place (--out equal to it): it is read whole before the write
    check_output_dir(
        out,
        inputs=[*zoos, *([manifest] if manifest is not None else []), *(grid or [])],
        replaces=folders[0] if len(folders) == 1 else None,
    )
    parts = None
    if folders:  # read (and checked) now: cheap, and a bad input is told before the extra
        given: list[Path | None] = list(grid) if grid else [None] * len(folders)
        parts = [P.read_part(f, g) for f, g in zip(folders, given, strict=True)]
    require_matplotlib()  # after the cheap input checks; a zoo's manifest is read by the run

    def note(i: int, n: int, name: str, error: str | None) -> None:
        if not quiet:
            line = f"{name}" + (f": skipped: {error}" if error else "")
            sys.stderr.write(f"[{i}/{n}] {printable(line)}\n")

    def progress_line(line: str) -> None:
        sys.stderr.write(line + "\n")

    run_one = functools.partial(
        run_correlate,
        axes=axes,
        gap=gap,
        include_unconverged=include_unconverged,
        cache=not no_cache,
        device=device,
        on_model=note,
        engine=eng,
        data_measures=data_measures,
        data_workers=data_workers,
        on_data=None if quiet else progress_line,
        primary=primary,
    )
    if parts is not None:
        result = P.pool(parts, bootstrap=bootstrap, seed=seed, primary=primary)
        lost: list[str] = []
    elif len(zoos) > 1:  # each zoo's models, then the statistics over all of them
        # (correlate refuses bootstrap 0, so each zoo's own tables are computed and dropped)
        each = [run_one(z, bootstrap=bootstrap, seed=seed) for z in zoos]
        lost = [m for r in each for m in r.data_failed]
        result = P.pool(
            [P.part_of(r) for r in each], bootstrap=bootstrap, seed=seed, primary=primary
        )
    else:
        result = run_one(source, bootstrap=bootstrap, seed=seed, **sweep_state(eng, out, quiet))
        lost = list(result.data_failed)
    page = correlation_page(result, out, figure_formats=formats)
    result.to_dir(out, extra=lambda tmp: write_report_page(tmp, page(tmp)))
    clear_sweep_state(eng, out, result.skipped.empty)
    if as_json:
        print_json(result.cli_summary(out))
    elif not quiet:
        from ..report.terminal_correlate import print_correlation

        print_correlation(result, out=out)
    if lost:
        fail(
            f"data measures failed for {len(lost)} models (listed in {out / 'skipped.csv'} with "
            f"the reason; first: {lost[0]}); the other models are written to {out}; run the same "
            "command again to retry them",
            code=1,
        )
