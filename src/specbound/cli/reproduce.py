"""``specbound reproduce bert-miniatures``: the paper's scaling study on the 24 BERT Miniatures."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from .app import Command, app, fail, handle_errors
from .common import clear_sweep_state, make_engine
from .options import (
    DEFAULT_ENGINE,
    Device,
    Engine,
    FigureFormats,
    Json,
    NoCache,
    Quiet,
    RayAddress,
    check_figure_formats,
    out_path,
)
from .scale import finish_study, run_study


@app.command(cls=Command)
@handle_errors
def reproduce(
    study_name: Annotated[
        Literal["bert-miniatures"], typer.Argument(metavar="STUDY", help="bert-miniatures")
    ],
    out: Annotated[Path, typer.Option("--out", help="Output directory.", parser=out_path)] = Path(
        "bert-miniatures"
    ),
    local_dir: Annotated[
        Path | None,
        typer.Option(
            "--local-dir",
            help="Read checkpoints from DIR/<name>/ or DIR/google/<name>/ instead of the hub.",
        ),
    ] = None,
    device: Device = None,
    no_cache: NoCache = False,
    quiet: Quiet = False,
    as_json: Json = False,
    engine: Engine = DEFAULT_ENGINE,
    ray_address: RayAddress = None,
    figure_formats: FigureFormats = "svg",
) -> None:
    """The paper's scaling study on the 24 BERT Miniatures (google/bert_uncased_L-*_H-*)."""
    from ..report.figures.style import require_matplotlib
    from ..studies.scale import locate_miniatures

    formats = check_figure_formats(figure_formats)
    if local_dir is not None and not local_dir.is_dir():
        fail(f"--local-dir {local_dir} is not a directory")
    from ..io import check_output_dir

    eng = make_engine(engine, ray_address)
    check_output_dir(out, inputs=[local_dir] if local_dir is not None else [])
    require_matplotlib()
    present, missing, reasons = locate_miniatures(local_dir)
    if missing:
        sys.stderr.write(
            f"warning: {len(missing)} of 24 checkpoints missing: "
            f"{', '.join(m.split('/', 1)[1] for m in missing)}\n"
        )
        if not quiet and local_dir is None:
            for r in reasons[:3]:
                sys.stderr.write(f"  {r}\n")
    if not present:
        fail(
            "none of the 24 BERT Miniatures is available (first: "
            f"{reasons[0] if reasons else 'none found'}); pass --local-dir DIR or go online"
        )
    study = run_study(
        [p for _, p in present],
        [h for h, _ in present],
        eng,
        out,
        quiet,
        device=device,
        cache=not no_cache,
        title=f"BERT Miniatures scaling study ({len(present)} of 24 checkpoints)",
        missing=missing,
    )

    from ..io import write_report_page
    from ..report.pages.scale import detail_model, scale_page

    big = detail_model(study)  # the paper's L=12, N=768; with a partial grid, the largest present
    if big is not None and (big.spec.num_layers, big.spec.hidden_size) != (12, 768) and not quiet:
        sys.stderr.write(
            f"note: L=12, N=768 is missing; decay figures use "
            f"L={big.spec.num_layers}, N={big.spec.hidden_size}\n"
        )
    study.to_dir(
        out,
        extra=lambda tmp: write_report_page(
            tmp, scale_page(study, tmp, norm_scaling_layers=2, figure_formats=formats)
        ),
    )
    clear_sweep_state(eng, out, not study.skipped)
    finish_study(study, out, quiet, as_json)
