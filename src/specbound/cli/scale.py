"""``specbound scale MODEL...``: the scaling study over many checkpoints (and what reproduce
shares with it: the model loop with its progress lines, printing the study).

Flags are checked here; ``studies.scale.scale`` runs the study; ``Study.to_dir`` writes the
folder with the report page as ``extra``; ``Study.summary()`` is the JSON printed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..naming import printable, short_path
from .app import Command, app, fail, handle_errors
from .common import (
    clear_sweep_state,
    make_engine,
    print_json,
    progress_bar,
    resolve_model,
    sweep_state,
)
from .options import (
    DEFAULT_ENGINE,
    Device,
    Engine,
    FigureFormats,
    GridM,
    Json,
    LPhi,
    Models,
    NoCache,
    Prefix,
    Quiet,
    RayAddress,
    check_figure_formats,
    out_option,
)


def expand_revisions(models: list[str], spec: str) -> list[str]:
    """Each hub id in ``models`` -> its existing revisions in ``spec`` (missing ones listed)."""
    from ..io.checkpoint import looks_like_hub_id
    from ..io.hub import expand_revisions as expand

    out: list[str] = []
    for m in models:
        if Path(m).exists() or not looks_like_hub_id(m) or "@" in m:
            fail(f"--revisions expands hub ids without @revision; got '{m}'")
        present, missing = expand(m, spec)
        if missing:
            shown = ", ".join(missing[:10]) + (
                f" (+{len(missing) - 10} more)" if len(missing) > 10 else ""
            )
            sys.stderr.write(
                f"warning: {len(missing)} revisions of {m} do not exist "
                f"(not in the cache / refs): {shown}\n"
            )
        out += present
    if not out:
        fail(f"--revisions {spec}: no revision exists for {', '.join(models)}")
    return out


def run_study(
    models: list[str], names: list[str], eng: Any, out: Path, quiet: bool, **kw: Any
) -> Any:
    """``scale(models, ...)`` on engine ``eng`` with a line per model on stderr (a bar for a
    distributed engine, whose models finish out of order; resume records beside ``out``)."""
    from ..report.figures.style import require_matplotlib
    from ..studies.scale import scale as run_scale

    require_matplotlib()

    # other engines report models as they finish: a bar on a terminal, else one line each
    bar, update = progress_bar(quiet, "models") if eng.distributed else (None, None)

    def note(i: int, n: int, name: str) -> None:
        if update is not None:
            update(i, n)
        elif not quiet:
            sys.stderr.write(f"[{i}/{n}] {printable(short_path(name, 70))}\n")

    def skip(name: str, reason: str) -> None:
        sys.stderr.write(f"warning: skipped {printable(name + ': ' + ' '.join(reason.split()))}\n")

    if bar is not None:
        bar.update(bar.task_ids[0], description="models")
        bar.start()
    try:
        return run_scale(
            models,
            names=names,
            on_model=note,
            on_skip=skip,
            engine=eng,
            **sweep_state(eng, out, quiet),
            **kw,
        )
    finally:
        if bar is not None:
            bar.stop()


def finish_study(study: Any, out: Path, quiet: bool, as_json: bool) -> None:
    """Print the study: ``study.summary()`` with the output folder as ``out`` after its
    ``title``, or the terminal tables unless quiet."""
    if as_json:
        summary = study.summary()
        print_json({"title": summary.pop("title"), "out": str(out), **summary})
    elif not quiet:
        from ..report.terminal import print_study

        print_study(study, out)


@app.command(cls=Command)
@handle_errors
def scale(
    models: Models = None,
    out: Path = out_option("Write models.csv, growth.csv, figures, report."),
    manifest: Annotated[
        Path | None,
        typer.Option("--manifest", help="Text file listing models, one per line (# comments)."),
    ] = None,
    grid_m: GridM = None,
    l_phi: LPhi = None,
    device: Device = None,
    no_cache: NoCache = False,
    quiet: Quiet = False,
    as_json: Json = False,
    prefix: Prefix = None,
    engine: Engine = DEFAULT_ENGINE,
    ray_address: RayAddress = None,
    figure_formats: FigureFormats = "svg",
    revisions: Annotated[
        str | None,
        typer.Option(
            "--revisions",
            help="Expand each hub id MODEL into revisions: SCHEME:START:STOP[:STEP] or "
            "SCHEME:N1,N2 (SCHEME pythia = step{N}, olmo = step{N}-tokens{M}B, or a template "
            "with {N}).",
        ),
    ] = None,
) -> None:
    """Scaling study: analyze every model, fit the growth of both proxies with N and L."""
    formats = check_figure_formats(figure_formats)
    names = list(models or [])
    if revisions is not None:
        names = expand_revisions(names, revisions)
    if manifest is not None:
        from ..studies.scale import read_manifest

        names += read_manifest(manifest)
    if not names:
        fail("scale needs models: pass MODEL... or --manifest FILE")
    from ..io import check_output_dir

    eng = make_engine(engine, ray_address)
    check_output_dir(out, inputs=[*names, *([manifest] if manifest is not None else [])])
    study = run_study(
        [resolve_model(m) for m in names],
        names,
        eng,
        out,
        quiet,
        l_phi=l_phi,
        grid_m=grid_m,
        device=device,
        cache=not no_cache,
        **({"prefix": prefix} if prefix is not None else {}),
    )
    from ..io import write_report_page
    from ..report.pages.scale import scale_page

    study.to_dir(
        out,
        extra=lambda tmp: write_report_page(tmp, scale_page(study, tmp, figure_formats=formats)),
    )
    clear_sweep_state(eng, out, not study.skipped)
    finish_study(study, out, quiet, as_json)
