"""The page of a multi-zoo study (``specbound study``): the primary table first. The folder's
tables and study.json are written by ``studies.multizoo.Study.to_dir``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..html import file_link, page, sig3, table

if TYPE_CHECKING:
    from ...studies.multizoo import Study

FILES = ("primary.csv", "exploratory.csv", "study.json")


def report_html(result: Study, out_dir: str | Path | None = None) -> str:
    """The study page (templates/study.html): what was pooled, the primary table (Holm over
    the whole study), the replicate groups, then the exploratory rows, labelled as such."""
    import pandas as pd

    prim = result.primary
    counts = result.summary()["verdicts"]
    tasks = sorted({str(t) for t in prim["task"].dropna()}) if len(prim) else []
    lead = (
        f"Protocol v3 over {len(result.folders)} correlate folders"
        + (f" ({', '.join(tasks)})" if tasks else "")
        + f": {len(prim)} primary rows (P1 spectrum_adaptive - norm_based, P2 "
        "spectrum_adaptive - num_parameters, P3 norm_based - num_parameters), Holm over all "
        "of them. A row is better or worse only when its p_holm is below 0.05, its 95% "
        "interval excludes 0 and p_holm is not within 2 Monte Carlo errors of 0.05."
    )
    primary = None
    folder_pages: list[tuple[str, str | None]] = []
    if len(prim):
        show = pd.DataFrame(
            {
                "contrast": prim["contrast"],
                "folder": [Path(str(f)).name for f in prim["folder"]],
                "role": prim["role"],
                "delta": prim["delta"],
                "interval": [
                    f"[{sig3(lo)}, {sig3(hi)}]"
                    for lo, hi in zip(prim["low"], prim["high"], strict=True)
                ],
                "p_holm": prim["p_holm"],
                "verdict": prim["verdict"],
                "replicated": prim["replicated"],
                "p": prim["p"],
                "statistic": prim["statistic"],
                "evidence": prim["evidence"],
            }
        )
        formats: dict[str, Any] = {c: sig3 for c in ("delta", "p", "p_holm")}
        primary = table(show, formats=formats, page_size=60)
        for f in dict.fromkeys(prim["folder"]):
            page_of = Path(str(f)) / "report.html"
            name = Path(str(f)).name
            if out_dir is not None and (Path(out_dir).parent / name / "report.html").is_file():
                folder_pages.append((name, f"../{name}/report.html"))
            else:
                folder_pages.append((name if not page_of.is_file() else str(page_of), None))
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
        "Multi-zoo study (protocol v3): primary contrasts",
        docs=("correlate",),
        template="study.html",
        lead=lead,
        verdicts=[(k, v) for k, v in sorted(counts.items())],
        files=[file_link(out_dir, f) for f in FILES],
        primary=primary,
        folder_pages=folder_pages,
        groups=groups,
        exploratory=exploratory,
        notes=list(result.notes),
    )


def write_report(result: Study, out_dir: str | Path) -> Path:
    """Write report.html for ``result`` into ``out_dir``, the folder its tables are written to
    (call it inside ``io.output_dir``, e.g. ``result.to_dir(out, extra=lambda tmp:
    write_report(result, tmp))``, so the page links the files written there)."""
    path = Path(out_dir) / "report.html"
    path.write_text(report_html(result, Path(out_dir)), encoding="utf-8")
    return path
