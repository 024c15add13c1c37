"""``specbound study FOLDER...``: one primary table over the correlate folders of a study."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import Command, app, fail, handle_errors
from .common import print_json
from .options import Json, Quiet, out_option


def parse_group(text: str) -> tuple[str, list[Path], Path | None]:
    """``NAME=A,B[:POOLED]`` -> (NAME, [A, B], POOLED or None)."""
    name, sep, rest = text.partition("=")
    if not sep or not name.strip() or not rest.strip():
        fail(f"--replicates {text!r}: expected NAME=A,B[:POOLED] (correlate folders)")
    reps, _, pooled = rest.partition(":")
    folders = [Path(r.strip()) for r in reps.split(",") if r.strip()]
    if len(folders) < 2:
        fail(f"--replicates {text!r}: a replicate group needs >= 2 folders")
    return name.strip(), folders, Path(pooled.strip()) if pooled.strip() else None


@app.command(cls=Command)
@handle_errors
def study(
    folders: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Folders written by 'specbound correlate' (protocol v3): the standard, fixed-n, "
            "replicate and pooled zoos of the study.",
            show_default=False,
        ),
    ] = None,
    out: Path = out_option("Write primary.csv, exploratory.csv, study.json, report.html."),
    replicates: Annotated[
        list[str] | None,
        typer.Option(
            "--replicates",
            help="A replicate group NAME=A,B[:POOLED]: correlate folders of zoos with disjoint "
            "seeds, and the folder of their pooled run; repeat for each group.",
        ),
    ] = None,
    quiet: Quiet = False,
    as_json: Json = False,
) -> None:
    """Protocol v4 over several correlate folders: every primary contrast of every zoo, Holm
    over those of the independent zoos (folders sharing trained models are secondary),
    replicated only where each replicate alone shows it (SPEC 10)."""
    from ..io import check_output_dir
    from ..report.pages.study import write_report
    from ..studies.multizoo import study as run_study

    groups = [parse_group(g) for g in replicates or []]
    if not folders and not groups:
        fail("study needs correlate folders (or --replicates groups)")
    check_output_dir(out)
    result = run_study(folders or [], groups)
    result.to_dir(out, extra=lambda tmp: write_report(result, tmp))
    if as_json:
        print_json({"out": str(out), **result.summary()})
    elif not quiet:
        from rich.console import Console
        from rich.table import Table

        n_ind = result.summary()["independent_zoos"]
        t = Table(
            title=f"primary contrasts ({len(result.primary)} rows; Holm over the family of "
            f"{n_ind} independent zoos, secondary folders beside it)"
        )
        for c in ("contrast", "folder", "role", "delta", "95% interval", "p_holm", "verdict"):
            t.add_column(c)
        for r in result.primary.to_dict("records"):
            t.add_row(
                str(r["contrast"]),
                Path(str(r["folder"])).name,
                str(r["role"]) + (" (secondary)" if r["independence"] == "secondary" else ""),
                f"{r['delta']:+.3g}",
                f"[{r['low']:+.3g}, {r['high']:+.3g}]",
                f"{r['p_holm']:.3g}",
                str(r["verdict"])
                + (f" (replicated: {r['replicated']})" if r["replicated"] else "")
                + (" (unstable over seeds)" if r["verdict_stable"] == "no" else ""),
            )
        Console(stderr=False).print(t)
        for n in result.notes[1:]:
            print(n)
        print(f"wrote {out}/: primary.csv, exploratory.csv, study.json, report.html")
