"""``specbound analyze MODEL``: one checkpoint's spectra, both bound proxies and the measures."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from ..naming import short_path
from .app import Command, app, fail, given_on_command_line, handle_errors
from .common import StageLines, make_engine, print_json, progress_bar, resolve_model
from .options import (
    DEFAULT_ENGINE,
    Device,
    Engine,
    FigureFormats,
    GridM,
    Json,
    LPhi,
    Mapping,
    Model,
    NoCache,
    OptionalOut,
    Prefix,
    Quiet,
    RayAddress,
    check_figure_formats,
)

#: The columns of the terminal tables, explained in ``analyze --help`` (SPEC names).
GLOSSARY = """\b
Columns of the tables:
  QK, OV        per layer l and head h, the N x N products W_Q^h W_K^h^T and W_V^h W_O^h
  M_in, M_out   per layer, the MLP's input (gate and up stacked) and output weights
  p*            the first grid point p that minimises a matrix's contribution c(A, p)
                (p* = 0: charged by rank only, sqrt(rank x N); p* = 2: by its Frobenius
                norm and scale)
  grid m        p runs over {0, 1/m, ..., 2} (default m = ceil(L + ln max(N, 2)))
  L_phi         the activation's Lipschitz constant
  depth_factor  alpha(l): a product over the layers after l of their spectral-norm factors
                (log10 in the tables; 1, i.e. log10 = 0, in the last layer)
  gamma x L     gamma: a matrix's within-block factor (products of the spectral norms of the
                matrices after it in its block); its scale is s = gamma x depth_factor x L
  contribution  c(A, p*), a matrix's term of the spectrum-adaptive proxy (summed per layer
                and type in the per-layer table)
  headroom      adaptive headroom: log10 of the scale minus log10 of the largest scale at
                which some p > 0 beats p = 0, in decades; > 0 means p* = 0 and the scale would
                have to shrink that many decades before the matrix used its trained spectrum
  ceiling       the value when every matrix picks p* = 0: sum of sqrt(rank x N) plus sqrt(L),
                the same for any full-rank checkpoint of that shape; ceiling gap: log10 of
                the ceiling minus log10 of the proxy (0: the proxy is the ceiling)
  xi            xi(l), the norm-based bound's term of layer l (log10_xi in layers.csv)
Both bounds are proxies: leading factors with constants dropped, not bounds on the test error.
The formulas: docs/spec.md, sections 2 to 5 and 10.
"""


@app.command(cls=Command, epilog=GLOSSARY)
@handle_errors
def analyze(
    model: Model,
    out: OptionalOut = None,
    grid_m: GridM = None,
    l_phi: LPhi = None,
    device: Device = None,
    no_cache: NoCache = False,
    mapping: Mapping = None,
    report: Annotated[
        bool, typer.Option("--report", help="Also write report.html into --out.")
    ] = False,
    esd: Annotated[
        Literal["all", "worst", "none"],
        typer.Option(
            "--esd",
            help="With --report: the raw weight matrices whose ESD (eigenvalues of W^T W, "
            "log-log histogram with the fitted power law and x_min) is drawn: all, worst (the "
            "few matrices whose htsr_alpha lies farthest outside WeightWatcher's 2..6 range), "
            "or none.",
        ),
    ] = "worst",
    figure_formats: FigureFormats = "svg",
    as_json: Json = False,
    quiet: Quiet = False,
    measures: Annotated[
        str | None,
        typer.Option(
            "--measures",
            help="Comma-separated measures (see `specbound measures`).",
            show_default="all",
        ),
    ] = None,
    init: Annotated[
        str | None,
        typer.Option(
            "--init",
            help="Initialization checkpoint (same architecture): distance_from_init.",
        ),
    ] = None,
    prefix: Prefix = None,
    engine: Engine = DEFAULT_ENGINE,
    ray_address: RayAddress = None,
) -> None:
    """Spectra of every QK, OV, M_in, M_out matrix, both bound proxies and every measure."""
    from ..analysis.sweep import analyze_on_engine

    eng = make_engine(engine, ray_address)

    if not report:  # options of report.html alone were silently ignored without it
        for name, flag in (("figure_formats", "--figure-formats"), ("esd", "--esd")):
            if given_on_command_line(name):
                fail(f"{flag} sets report.html's figures: add --report (and --out DIR) or drop it")
    if report and out is None:
        fail("--report needs --out DIR to write report.html into")
    formats = check_figure_formats(figure_formats)
    if out is not None:
        from ..io import check_output_dir

        # refuse a foreign --out, or one overlapping the model, before the work, not after
        check_output_dir(out, inputs=[model])
    if report:
        from ..report.figures.style import require_matplotlib

        require_matplotlib()
    stages = StageLines(quiet)  # a line per stage on stderr, with or without a terminal
    stages.say(f"reading {short_path(model, 70)}")
    bar, update = progress_bar(quiet, "spectra")
    if bar is not None:
        bar.start()
    else:
        update = None if quiet else stages.counter("spectra", "blocks")
    try:
        result = analyze_on_engine(
            eng,
            resolve_model(model),
            l_phi=l_phi,
            grid_m=grid_m,
            device=device,
            cache=not no_cache,
            mapping=mapping,
            progress=update,
            name=model,
            prefix=prefix,
            measures=measures,
            init=resolve_model(init) if init is not None else None,
        )
    finally:
        if bar is not None:
            bar.stop()
    if result.from_cache:
        stages.say("spectra: from the cache")
    if out is not None:
        stages.say(f"writing {short_path(out, 70)}")
        extra = None
        if report:
            from ..io import write_report_page
            from ..report.pages.analysis import analysis_page

            def extra(tmp: Path) -> None:  # the report joins the same atomic write
                write_report_page(tmp, analysis_page(result, tmp, esd, figure_formats=formats))

        result.to_dir(out, extra=extra)
    if as_json:
        print_json(result.summary())
    elif not quiet:
        from ..report.terminal import print_summary

        print_summary(result, out=out, report=report)
