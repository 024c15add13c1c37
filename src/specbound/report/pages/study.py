"""The page of a multi-zoo study (``specbound study``), SPEC 10 protocol v4.

First screen: the answer in plain words (the text of ``--answer FILE`` when given, the README's
summary generated from the claims; else one sentence generated from the family's tally), the
sign convention of delta and the count of independent zoos; then the forest plot of the primary
deltas (figures/study.py: family rows, secondary rows in their own panel), then the family table
(with ``verdict_stable``), the secondary folders (the folder each overlaps, shared models), the
replicate groups and the exploratory rows. The folder's tables and study.json are written by
``studies.multizoo.Study.to_dir``; every number goes through :mod:`..numbers`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..figures.study import forest_figure
from ..figures.style import writing_formats
from ..html import figure_html, file_link, page, table
from ..numbers import interval, sig3, sig_small

if TYPE_CHECKING:
    import pandas as pd

    from ...studies.multizoo import Study

FILES = ("primary.csv", "exploratory.csv", "study.json")
#: The verdict words the generated answer counts, in its order.
TALLY = ("better", "worse", "borderline", "undetermined")
SIGN_CONVENTION = (
    "Sign convention: delta = statistic of the first measure − statistic of the second (e.g. "
    "P1: τ_n(spectrum_adaptive) − τ_n(norm_based)); positive = the first measure ranks the "
    "generalization gap better."
)


def _count(n: int, noun: str) -> str:
    """``1 zoo``, ``2 zoos``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def answer_paragraphs(text: str) -> list[str]:
    """A Markdown or plain-text answer as paragraphs: blocks separated by blank lines, lines
    of a block joined by a space; a list item (``- ``, ``1. ``) starts its own paragraph; a
    heading's leading ``#`` marks, HTML comments and the emphasis and code marks ``**``, ``*``,
    ``` ` ``` are dropped (the text is rendered escaped; no other markup is interpreted)."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    blocks: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line and current and re.match(r"^(?:[-*]|\d+\.)\s", line):
            blocks.append(" ".join(current))
            current = []
        if line:
            line = re.sub(r"^#{1,6}\s+", "", line)
            current.append(re.sub(r"\*\*|`|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])", "", line))
        elif current:
            blocks.append(" ".join(current))
            current = []
    if current:
        blocks.append(" ".join(current))
    return blocks


def tally_sentence(summary: dict[str, Any]) -> str:
    """The generated plain-words answer from ``Study.summary()``: the family's verdict counts,
    the independent zoos they rest on, the secondary folders shown apart."""
    counts = {str(k): int(v) for k, v in summary.get("verdicts", {}).items()}
    n_family = int(summary.get("n_family", sum(counts.values())))
    words = [f"{counts.get(w, 0)} {w}" for w in TALLY]
    words += [f"{n} {w}" for w, n in sorted(counts.items()) if w not in TALLY and n]
    n_zoos = int(summary.get("independent_zoos", 0))
    n_sec = len(summary.get("secondary", []) or [])
    return (
        f"Across {_count(n_zoos, 'independent zoo')}, of the {n_family} "
        f"primary contrasts: {', '.join(words)}; secondary folders ({n_sec}) are shown apart "
        "and not counted."
    )


def _primary_show(prim: pd.DataFrame) -> pd.DataFrame:
    """The primary rows as the page shows them (text cells through :mod:`..numbers`)."""
    import pandas as pd

    def col(name: str, default: Any = "") -> Any:
        return prim[name] if name in prim.columns else pd.Series([default] * len(prim))

    return pd.DataFrame(
        {
            "folder": [Path(str(f)).name for f in prim["folder"]],
            "contrast": list(col("contrast")),
            "role": list(col("role")),
            "statistic": list(col("statistic")),
            "delta [95% interval]": [
                f"{sig_small(d)} {interval(lo, hi, 3)}"
                for d, lo, hi in zip(col("delta"), col("low"), col("high"), strict=True)
            ],
            "p_holm": [sig3(v) for v in col("p_holm")],
            "verdict": list(col("verdict")),
            "verdict_stable": [
                str(v) if str(v) not in ("nan", "") else "" for v in col("verdict_stable")
            ],
            "replicated": [str(v) if str(v) != "nan" else "" for v in col("replicated")],
            "p": [sig3(v) for v in col("p")],
            "evidence": list(col("evidence")),
        }
    )


def report_html(
    result: Study,
    out_dir: str | Path | None = None,
    answer: str | None = None,
    figures: Sequence[Any] = (),
) -> str:
    """The study page (templates/study.html): the answer (``answer``, the text of ``--answer``,
    else :func:`tally_sentence`), the sign convention and the independent zoos, ``figures``
    (the forest plot), the family table, the secondary folders, the replicate groups, then the
    exploratory rows, labelled as such."""
    import pandas as pd

    prim = result.primary
    summary = result.summary()
    indep = (
        prim["independence"].astype(str) != "secondary"
        if len(prim) and "independence" in prim.columns
        else pd.Series([True] * len(prim), dtype=bool)
    )
    fam, sec = prim[indep.to_numpy()], prim[~indep.to_numpy()]
    n_zoos = int(summary.get("independent_zoos", 0))
    n_sec = len(result.secondary)
    zoos_line = (
        f"This answer rests on {_count(n_zoos, 'independent zoo')} "
        f"(folders that share no trained model): {len(fam)} primary rows, Holm over all of "
        f"them; {_count(n_sec, 'secondary folder')} "
        + ("shares trained models with them and is" if n_sec == 1 else "share trained models "
           "with them and are")
        + " shown apart, never counted or adjusted with them."
    )  # fmt: skip
    rule = (
        "Primary contrasts P1 spectrum_adaptive − norm_based, P2 spectrum_adaptive − "
        "num_parameters, P3 norm_based − num_parameters (or A1-A3 on τ_arch for a zoo designed "
        "for it). A row is better or worse only when its p_holm is below 0.05, its 95% interval "
        "excludes 0, p_holm is not within 2 Monte Carlo errors of 0.05 and the verdict is the "
        "same under 5 bootstrap seeds (verdict_stable)."
    )
    folder_pages: list[tuple[str, str | None]] = []
    for f in dict.fromkeys(prim["folder"]) if len(prim) else ():
        name = Path(str(f)).name
        if out_dir is not None and (Path(out_dir).parent / name / "report.html").is_file():
            folder_pages.append((name, f"../{name}/report.html"))
        else:
            folder_pages.append((name, None))
    secondary = [
        {
            "folder": Path(str(s.get("folder", ""))).name,
            "overlaps": Path(str(s.get("overlaps", ""))).name,
            "shared": sig3(s.get("shared_models")),
        }
        for s in result.secondary
    ]
    groups = []
    for g in result.groups:
        rep = g.get("replicated", {})
        line = ", ".join(f"{c}: {v}" for c, v in sorted(rep.items())) or "no primary rows"
        seeds = "; ".join(f"{Path(k).name}: {', '.join(v)}" for k, v in g["seeds"].items())
        text = (
            f"replicated ({line}); a contrast is replicated only when each replicate alone "
            f"is better (or each worse). Seeds: {seeds}."
            + (f" Pooled folder: {Path(g['pooled']).name}." if g.get("pooled") else "")
        )
        groups.append({"name": g["group"], "text": text})
    ex = result.exploratory
    exploratory = None
    if isinstance(ex, pd.DataFrame) and len(ex):
        exploratory = table(ex, first=["measure"], page_size=50)
    return page(
        "Multi-zoo study (protocol v4): the answer and the primary contrasts",
        docs=("correlate",),
        template="study.html",
        answer=answer_paragraphs(answer) if answer else [tally_sentence(summary)],
        answer_given=bool(answer),
        tally=tally_sentence(summary),
        sign=SIGN_CONVENTION,
        zoos=zoos_line,
        rule=rule,
        files=[file_link(out_dir, f) for f in FILES],
        figures=[figure_html(f) for f in figures],
        family=table(_primary_show(fam), page_size=60) if len(fam) else None,
        secondary=secondary,
        secondary_rows=table(_primary_show(sec), page_size=60) if len(sec) else None,
        folder_pages=folder_pages,
        groups=groups,
        exploratory=exploratory,
        notes=list(result.notes),
    )


def write_report(
    result: Study,
    out_dir: str | Path,
    answer: str | None = None,
    *,
    figure_formats: str | Sequence[str] | None = None,
) -> Path:
    """Write figures/forest.svg and report.html for ``result`` into ``out_dir``, the folder its
    tables are written to (call it inside ``io.output_dir``, e.g. ``result.to_dir(out,
    extra=lambda tmp: write_report(result, tmp, answer))``, so the page links the files
    written there). ``answer``: the plain-words answer (``--answer FILE``'s text) or None."""
    out_dir = Path(out_dir)
    with writing_formats(figure_formats):
        fig = forest_figure(result.primary, out_dir / "figures") if len(result.primary) else None
    path = out_dir / "report.html"
    html = report_html(result, out_dir, answer, [fig] if fig is not None else [])
    path.write_text(html, encoding="utf-8")
    return path
