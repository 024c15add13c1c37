"""Every option shared by several commands, declared once (``Annotated`` types for Typer).

A command writes ``quiet: Quiet = False``; the flag, its short form, its help and the default
shown in ``--help`` come from here. Options used by one command only stay in its module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from ..engines import engine_names

#: ``--primary``'s and ``--gap``'s click choices: ``studies.protocol.PRIMARY_CHOICES``
#: and ``studies.gap.GAP_CHOICES``, spelled here so that ``--help`` imports no numpy
#: (tests/test_validation_apis.py holds them equal).
PrimaryChoice = Literal["auto", "arch", "standard"]
GapChoice = Literal["auto", "accuracy", "acc", "loss"]

#: ``--engine`` default: the first registered engine (the in-process one).
DEFAULT_ENGINE = engine_names()[0]

#: MODEL argument of analyze and inspect.
Model = Annotated[
    str,
    typer.Argument(
        help="Checkpoint directory, hub id (org/name or name), or demo:minilm (bundled MiniLM).",
        show_default=False,
    ),
]
#: MODEL... of scale.
Models = Annotated[
    list[str] | None,
    typer.Argument(help="Checkpoint directories or hub ids (as for analyze).", show_default=False),
]

GridM = Annotated[
    int | None,
    typer.Option(
        "--grid-m",
        help="p grid {0,1/m,...,2} of the spectrum-adaptive bound.",
        show_default="ceil(L + ln max(N, 2))",
    ),
]
LPhi = Annotated[
    float | None,
    typer.Option(
        "--l-phi",
        help="Activation Lipschitz constant L_phi.",
        show_default="from config.json's activation",
    ),
]
Device = Annotated[
    str | None,
    typer.Option(
        "--device", help="numpy (LAPACK) or a torch device: cpu, cuda.", show_default="numpy"
    ),
]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Recompute spectra; skip the cache.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no table.")]
Json = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print the result as strict JSON on stdout (no NaN/Infinity: values beyond "
        "float64 are null).",
    ),
]
Mapping = Annotated[
    Path | None,
    typer.Option(
        "--mapping", help="YAML/JSON file mapping tensor names to roles (unknown models)."
    ),
]
Prefix = Annotated[
    str | None,
    typer.Option(
        "--prefix",
        help="Tensor-name prefix of the model to use when a checkpoint holds several (bert.).",
    ),
]
Engine = Annotated[
    str,
    typer.Option(
        "--engine",
        help=f"Where the work runs: {', '.join(engine_names())} (ray needs the ray extra).",
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="Ray cluster to join (--engine ray only).",
        show_default="$RAY_ADDRESS, else a local Ray runtime",
    ),
]


def out_path(value: str | Path) -> Path:
    """``--out``'s value as a Path; an empty one is refused (``Path("")`` is the current
    folder, which the user did not name)."""
    if str(value) == "":
        raise typer.BadParameter("is empty; name a folder or file to write", param_hint="--out")
    return Path(value)


def out_option(help: str) -> Any:
    """``--out DIR`` (required): the output folder, ``help`` says what it holds."""
    return typer.Option(..., "--out", help=help, show_default=False, parser=out_path)


#: ``--out`` of analyze (optional there).
OptionalOut = Annotated[
    Path | None,
    typer.Option(
        "--out", help="Write summary.json, CSVs, spectra into this folder.", parser=out_path
    ),
]
#: ``--figure-formats`` of every command that writes figures (checked before the work starts).
FigureFormats = Annotated[
    str,
    typer.Option(
        "--figure-formats",
        help="The files written for each figure: a comma list of svg, png, pdf (the first svg "
        "or png is embedded in report.html).",
    ),
]


def check_figure_formats(value: str) -> tuple[str, ...]:
    """``--figure-formats`` as a tuple of formats; a bad value is a one-line error naming the
    flag and the allowed values (before any work)."""
    from ..report.figures.style import figure_formats

    return figure_formats(value)
