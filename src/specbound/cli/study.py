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
            help="Folders written by 'specbound correlate' (protocol v4): the standard, fixed-n, "
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
    answer: Annotated[
        Path | None,
        typer.Option(
            "--answer",
            help="A Markdown or plain-text file with the answer in plain words (e.g. the "
            "README's summary generated from the claims): shown after the page's one-sentence "
            "answer, its bold, lists and code rendered, everything else escaped. Without it "
            "the verdict counts per comparison follow the sentence.",
            show_default=False,
        ),
    ] = None,
    claims: Annotated[
        Path | None,
        typer.Option(
            "--claims",
            help="The claims.csv that the answer's [Cn] citations name: copied next to the "
            "page, each claim listed there with the citations linked to its row.",
            show_default=False,
        ),
    ] = None,
    quiet: Quiet = False,
    as_json: Json = False,
) -> None:
    """Protocol v4 over several correlate folders: every primary contrast of every zoo, Holm
    over those of the independent zoos (folders sharing trained models are secondary),
    replicated only where each replicate alone shows it (SPEC 10)."""
    from ..io import check_output_dir, write_report_page
    from ..io.files import copy_file
    from ..report.pages.study import study_page
    from ..studies.correlate.multizoo import study as run_study

    groups = [parse_group(g) for g in replicates or []]
    if not folders and not groups:
        fail("study needs correlate folders (or --replicates groups)")
    inputs = [*(folders or [])]
    for _, reps, pooled in groups:
        inputs += [*reps, *([pooled] if pooled is not None else [])]
    extra_inputs = [p for p in (answer, claims) if p is not None]
    check_output_dir(out, inputs=[*inputs, *extra_inputs])
    text = None
    if answer is not None:
        try:
            text = answer.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"--answer {answer}: cannot read it as UTF-8 text ({type(exc).__name__})")
    result = run_study(folders or [], groups)
    rows = None
    if claims is not None:
        from ..studies.readback import read_claims_csv

        rows = read_claims_csv(claims)  # refused before anything is written

    def extra(tmp: Path) -> None:  # the claims and the page join the same atomic write
        if claims is not None:
            copy_file(claims, tmp / "claims.csv")
        write_report_page(tmp, study_page(result, tmp, text, claims=rows))

    result.to_dir(out, extra=extra)
    if as_json:
        print_json({"out": str(out), **result.summary()})
    elif not quiet:
        from rich.console import Console

        from ..report.terminal_correlate import study_table

        t = study_table(result.primary, result.summary()["independent_zoos"])
        Console(stderr=False).print(t)
        for n in result.notes[1:]:
            print(n)
        print(f"wrote {out}/: primary.csv, exploratory.csv, study.json, report.html")
