"""The page of a multi-zoo study (``specbound study``), SPEC 10 protocol v5.

First screen: the answer in plain words (the text of ``--answer FILE`` when given, the README's
summary generated from the claims; else one sentence generated from the family's tally), the
sign convention of delta and the count of independent zoos; then the forest plot of the primary
deltas (figures/study.py: family rows, secondary rows in their own panel), then the family table
(with ``verdict_stable``), the secondary folders (the folder each overlaps, shared models), the
replicate groups and the exploratory rows. The folder's tables and study.json are written by
``studies.correlate.multizoo.Study.to_dir``; :func:`study_page` returns the page, which
``io.files.write_report_page`` writes. The rule of the verdict words and their numbers are the
protocol's (``studies.answer.verdict_rule``); every number goes through :mod:`..numbers`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import SpecboundError
from ...io.files import copy_file, write_report_page
from ...io.siblings import STUDY, sibling_pages
from ...studies.answer import (
    comparison_tally,
    plain_answer,
    proxy_statistics,
    secondary_lines,
    verdict_rule,
)
from ...studies.protocol.registry import PROTOCOL
from ...studies.readback import read_claims_csv
from ..figures.study import forest_figure
from ..figures.style import writing_formats
from ..html import figure_html, file_link, page, table
from ..html_markdown import claim_id, render_markdown
from ..numbers import interval, is_undefined, sig3, sig_small

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


def family_split(prim: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The primary rows of the independent zoos (the family) and those of the secondary
    folders (``independence`` is ``secondary``)."""
    import pandas as pd

    indep = (
        prim["independence"].astype(str) != "secondary"
        if len(prim) and "independence" in prim.columns
        else pd.Series([True] * len(prim), dtype=bool)
    )
    return prim[indep.to_numpy()], prim[~indep.to_numpy()]


def zoos_sentence(n_zoos: int, n_family: int, n_secondary: int) -> str:
    """What the answer rests on: the independent zoos, their primary rows (Holm over all of
    them) and the secondary folders shown apart."""
    return (
        f"This answer rests on {_count(n_zoos, 'independent zoo')} "
        f"(folders that share no trained model): {n_family} primary rows, Holm over all of "
        f"them; {_count(n_secondary, 'secondary folder')} "
        + ("shares trained models with them and is" if n_secondary == 1 else "share trained "
           "models with them and are")
        + " shown apart, never counted or adjusted with them."
    )  # fmt: skip


def folder_pages(prim: pd.DataFrame, out_dir: str | Path | None) -> list[tuple[str, str | None]]:
    """Each folder of the primary rows with the href of its page when it sits beside
    ``out_dir`` (a benchmark's results/), else None."""
    pages: list[tuple[str, str | None]] = []
    for f in dict.fromkeys(prim["folder"]) if len(prim) else ():
        name = Path(str(f)).name
        if out_dir is not None and (Path(out_dir).parent / name / "report.html").is_file():
            pages.append((name, f"../{name}/report.html"))
        else:
            pages.append((name, None))
    return pages


def other_pages(out_dir: str | Path | None, shown: set[str]) -> list[tuple[str, str]]:
    """The pages beside ``out_dir`` that no row links (a size ladder, the write-up)."""
    if out_dir is None:
        return []
    return [
        (text, href) for text, href in sibling_pages(out_dir) if href.split("/")[1] not in shown
    ]


def secondary_folders(result: Study) -> list[dict[str, str]]:
    """Each secondary folder, the folder it overlaps and the models they share."""
    return [
        {
            "folder": Path(str(s.get("folder", ""))).name,
            "overlaps": Path(str(s.get("overlaps", ""))).name,
            "shared": sig3(s.get("shared_models")),
        }
        for s in result.secondary
    ]


def replicate_groups(result: Study) -> list[dict[str, str]]:
    """Each replicate group: its name and, in words, what it replicates and its seeds."""
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
    return groups


def answer_parts(prim: pd.DataFrame) -> dict[str, Any]:
    """The words of the answer (``studies.answer``): the plain sentence, the tally per
    comparison and the secondary folders' decided rows; empty without primary rows."""
    has = bool(len(prim))
    return {
        "plain": plain_answer(prim) if has else "",
        "tally": comparison_tally(prim) if has else [],
        "secondary_decided": secondary_lines(prim) if has else [],
    }


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
    fam, sec = family_split(prim)
    n_zoos = int(result.summary().get("independent_zoos", 0))
    pages = folder_pages(prim, out_dir)
    ex = result.exploratory
    has_ex = isinstance(ex, pd.DataFrame) and bool(len(ex))
    listed = claims_rows(claims)
    ids = {c["claim"] for c in listed}
    return page(
        f"Multi-zoo study (protocol v{PROTOCOL}): does the spectrum-adaptive proxy predict "
        "generalization better?",
        docs=("correlate",),
        template="study.html",
        **answer_parts(prim),
        details=render_markdown(answer, ids) if answer else None,
        sign=SIGN_CONVENTION,
        zoos=zoos_sentence(n_zoos, len(fam), len(result.secondary)),
        rule=verdict_rule(),
        files=[file_link(out_dir, f) for f in (*FILES, *(("claims.csv",) if listed else ()))],
        figures=[figure_html(f) for f in figures],
        family=table(_primary_show(fam), page_size=60) if len(fam) else None,
        proxies=_proxy_table(result) if len(prim) else None,
        secondary=secondary_folders(result),
        secondary_rows=table(_primary_show(sec), page_size=60) if len(sec) else None,
        folder_pages=pages,
        other_pages=other_pages(out_dir, {name for name, _ in pages} | {STUDY}),
        groups=replicate_groups(result),
        claims=listed,
        exploratory=table(ex, first=["measure"], page_size=50) if has_ex else None,
        notes=list(result.notes),
    )


def study_page(
    result: Study,
    out_dir: str | Path,
    answer: str | None = None,
    *,
    figure_formats: str | Sequence[str] | None = None,
    claims: pd.DataFrame | None = None,
) -> str:
    """The study page (:func:`report_html`) with its forest plot drawn into
    ``out_dir``/figures (the folder its tables are written to: the ``tmp`` of
    ``result.to_dir(out, extra=...)``, so the page links the files written there): the text
    for ``out_dir``/report.html, which ``io.files.write_report_page`` writes. ``answer``: the
    plain-words answer (``--answer FILE``'s text) or None; ``claims``: the rows of the
    claims.csv its [Cn] citations name (``studies.readback.read_claims_csv``), copied into
    ``out_dir`` by the caller (``io.files.copy_file``), so the page lists and links every
    claim."""
    out_dir = Path(out_dir)
    with writing_formats(figure_formats):
        fig = forest_figure(result.primary, out_dir / "figures") if len(result.primary) else None
    return report_html(result, out_dir, answer, [fig] if fig is not None else [], claims)


def write_report(
    result: Study,
    out_dir: str | Path,
    answer: str | None = None,
    *,
    figure_formats: str | Sequence[str] | None = None,
    claims: str | Path | None = None,
) -> Path:
    """figures/forest.svg and report.html for ``result`` in ``out_dir`` (what ``specbound
    study`` writes inside ``result.to_dir(out, extra=...)``): ``claims`` (a claims.csv path)
    read through the checked reader and copied byte for byte (``io.files.copy_file``), then
    :func:`study_page`'s text written by ``io.files.write_report_page``."""
    table_of_claims = None
    if claims is not None:
        table_of_claims = read_claims_csv(claims)
        copy_file(claims, Path(out_dir) / "claims.csv")
    text = study_page(
        result, out_dir, answer, figure_formats=figure_formats, claims=table_of_claims
    )
    return write_report_page(out_dir, text)
