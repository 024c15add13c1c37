"""The page of a multi-zoo study (``specbound study``), SPEC 10 protocol v5.

First screen: the answer in plain words (the text of ``--answer FILE`` when given, the README's
summary generated from the claims; else one sentence generated from the family's tally), the
sign convention of delta and the count of independent zoos; then the forest plot of the primary
deltas (figures/study.py: family rows, secondary rows in their own panel), then the family table
(with ``verdict_stable``), the secondary folders (the folder each overlaps, shared models), the
replicate groups and the exploratory rows. The folder's tables and study.json are written by
``studies.correlate.multizoo.Study.to_dir``; every number goes through :mod:`..numbers`."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import SpecboundError
from ...studies.answer import (
    comparison_tally,
    plain_answer,
    proxy_statistics,
    secondary_lines,
)
from ...studies.protocol.registry import PROTOCOL
from ...studies.readback import read_claims_csv
from ..figures.study import forest_figure
from ..figures.style import writing_formats
from ..html import figure_html, file_link, page, table
from ..html_markdown import claim_id, render_markdown
from ..numbers import interval, is_undefined, sig3, sig_small
from .links import STUDY, sibling_pages

if TYPE_CHECKING:
    import pandas as pd

    from ...studies.correlate.multizoo import Study

FILES = ("primary.csv", "exploratory.csv", "study.json")
SIGN_CONVENTION = (
    "Sign convention: delta = statistic of the first measure − statistic of the second (e.g. "
    "P1: τ_n(spectrum_adaptive) − τ_n(norm_based)); positive = the first measure ranks the "
    "generalization gap better."
)


def _count(n: int, noun: str) -> str:
    """``1 zoo``, ``2 zoos``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


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


def _proxy_table(result: Study) -> Any:
    """Each proxy's own τ, τ_n and τ_arch with their intervals in each folder of the study
    (``studies.answer.proxy_statistics``); None when no folder can be read."""
    import pandas as pd

    try:
        stats = proxy_statistics(list(result.folders))
    except (SpecboundError, OSError):
        return None
    shown = pd.DataFrame(
        {
            "measure": stats["measure"],
            "folder": stats["folder"],
            **{
                label: [
                    "" if is_undefined(v) else f"{sig_small(v)} {interval(lo, hi, 2)}"
                    for v, lo, hi in zip(
                        stats[st], stats[f"{st}_low"], stats[f"{st}_high"], strict=True
                    )
                ]
                for st, label in (
                    ("kendall_tau", "τ [95%]"),
                    ("tau_fixed_n", "τ_n [95%]"),
                    ("tau_arch", "τ_arch [95%]"),
                )
            },
        }
    )
    return table(shown, page_size=60)


def claims_rows(claims: pd.DataFrame | None) -> list[dict[str, str]]:
    """claims.csv's rows as the page lists them, each with its anchor (``claim-C12``)."""
    if claims is None:
        return []
    return [
        {**{str(k): str(v) for k, v in r.items()}, "id": claim_id(str(r["claim"]))}
        for r in claims.to_dict("records")
    ]


def report_html(
    result: Study,
    out_dir: str | Path | None = None,
    answer: str | None = None,
    figures: Sequence[Any] = (),
    claims: pd.DataFrame | None = None,
) -> str:
    """The study page (templates/study.html): the answer's one plain sentence
    (``studies.answer.plain_answer``), then ``answer`` (the text of ``--answer``, Markdown
    subset, its [Cn] citations linked to the rows of ``claims``) or the tally per comparison,
    then ``figures`` (the forest plot), the tally, the sign convention and the independent zoos,
    the family table, each proxy's statistics per folder, the secondary folders, the replicate
    groups, the claims and the exploratory rows, labelled as such."""
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
    shown = {name for name, _ in folder_pages} | {STUDY}
    others = [  # a size ladder, the write-up: the pages beside it that no row links
        (text, href)
        for text, href in (sibling_pages(out_dir) if out_dir is not None else [])
        if href.split("/")[1] not in shown
    ]
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
    listed = claims_rows(claims)
    ids = {c["claim"] for c in listed}
    return page(
        f"Multi-zoo study (protocol v{PROTOCOL}): does the spectrum-adaptive proxy predict "
        "generalization better?",
        docs=("correlate",),
        template="study.html",
        plain=plain_answer(prim) if len(prim) else "",
        details=render_markdown(answer, ids) if answer else None,
        tally=comparison_tally(prim) if len(prim) else [],
        secondary_decided=secondary_lines(prim) if len(prim) else [],
        sign=SIGN_CONVENTION,
        zoos=zoos_line,
        rule=rule,
        files=[file_link(out_dir, f) for f in (*FILES, *(("claims.csv",) if listed else ()))],
        figures=[figure_html(f) for f in figures],
        family=table(_primary_show(fam), page_size=60) if len(fam) else None,
        proxies=_proxy_table(result) if len(prim) else None,
        secondary=secondary,
        secondary_rows=table(_primary_show(sec), page_size=60) if len(sec) else None,
        folder_pages=folder_pages,
        other_pages=others,
        groups=groups,
        claims=listed,
        exploratory=exploratory,
        notes=list(result.notes),
    )


def write_report(
    result: Study,
    out_dir: str | Path,
    answer: str | None = None,
    *,
    figure_formats: str | Sequence[str] | None = None,
    claims: str | Path | None = None,
) -> Path:
    """Write figures/forest.svg and report.html for ``result`` into ``out_dir``, the folder its
    tables are written to (call it inside ``io.output_dir``, e.g. ``result.to_dir(out,
    extra=lambda tmp: write_report(result, tmp, answer))``, so the page links the files
    written there). ``answer``: the plain-words answer (``--answer FILE``'s text) or None;
    ``claims``: the claims.csv its [Cn] citations name (read through the checked reader and
    copied, byte for byte, into ``out_dir``, so the page lists and links every claim)."""
    out_dir = Path(out_dir)
    table_of_claims = None
    if claims is not None:
        table_of_claims = read_claims_csv(claims)
        shutil.copyfile(claims, out_dir / "claims.csv")
    with writing_formats(figure_formats):
        fig = forest_figure(result.primary, out_dir / "figures") if len(result.primary) else None
    path = out_dir / "report.html"
    html = report_html(result, out_dir, answer, [fig] if fig is not None else [], table_of_claims)
    path.write_text(html, encoding="utf-8")
    return path
