"""The report page of ``specbound correlate`` (SPEC 10, protocol v3): figures/ and report.html.

The tables and correlate.json are the result's own (``Correlation.to_dir``); this page is added
to the same atomic write through ``extra``: ``result.to_dir(out, extra=correlation_page(result,
out))``.

Protocol v3: right after the lead, the primary contrasts P1-P3 (differences.csv, family
primary) with delta, interval, p, p_holm, verdict and evidence, and the grid's configurations
without a usable model, named; exploratory differences are labelled as such.

The page opens with the answer in SPEC 10's words: what the tool's own proxy does here
("undetermined here: not shown to predict the gap" when its tau interval includes 0), each
measure's verdict (correlation.csv's ``verdict``: intervals and evidence counts decide), which
differences between measures are established (differences.csv: "better" only when the paired
interval excludes 0), the rank-ceiling diagnosis and the zoo's counts. Then figures, then tables
with short model labels and a legend. Rendered from templates/correlate.html and
_correlate_answer.html, which escape every user string (paths, axis names and values, task,
measure and metric names); numbers through :mod:`..numbers`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...naming import display_names
from ...studies.correlate.rules import BASELINES, better_word, verdict
from ..figures.correlate import color_axis, measure_figure, tau_psi_figure
from ..figures.style import writing_formats
from ..html import figure_html, file_link, files_html, interval, page, render, table
from ..numbers import as_float, spec
from .compact import _sig, _text, compact_table

if TYPE_CHECKING:
    import pandas as pd

    from ...studies.correlate.result import Correlation
    from ..figures.style import Figure

__all__ = [
    "answer_context",
    "answer_html",
    "color_axis",
    "correlation_page",
    "lead_clause",
    "report_html",
    "write_correlation",
    "write_page",
]

OWN = "spectrum_adaptive"
#: Model labels longer than this become m1, m2, ... with a legend.
LABEL_WIDTH = 28
#: Columns that repeat a path per model (the init checkpoint): shown in models.csv only.
PATH_COLUMNS = ("init", "init_path", "init_checkpoint")


def _stat(row: dict[str, Any], st: str, name: str) -> str:
    v = as_float(row.get(st))
    if math.isnan(v):
        return f"{name} undefined"
    v = round(v, 2) + 0.0  # never "-0.00"
    return f"{name} {v:.2f} {interval(row.get(f'{st}_low'), row.get(f'{st}_high'))}"


def predicts(row: dict[str, Any], st: str = "kendall_tau") -> str:
    """SPEC 10's words for one statistic's interval: "predicts the gap" only when the interval
    is above 0, "the wrong way" when below 0, otherwise "undetermined" (an interval that holds
    0 shows neither that it predicts nor that it does not)."""
    lo, hi = as_float(row.get(f"{st}_low")), as_float(row.get(f"{st}_high"))
    if math.isnan(lo) or math.isnan(hi):
        return "is undetermined (no interval)"
    if lo > 0:
        return "predicts the gap here"
    if hi < 0:
        return "ranks the gap the wrong way here"
    return "is undetermined here: not shown to predict the gap, its interval holds 0"


def _verdict(row: dict[str, Any], axes: list[str]) -> str:
    v = row.get("verdict")
    if isinstance(v, str) and v:
        return v

    return verdict(row, axes)


def primary_rows(result: Correlation) -> list[dict[str, str]]:
    """The primary contrasts (differences.csv family primary) as the page shows them: text
    cells, numbers formatted, the interval "[lo, hi]" or "no interval", ``verdict_stable``."""
    d = result.differences
    if d is None or "family" not in d.columns:
        return []
    return [
        {
            **{k: str(r[k]) for k in ("contrast", "measure", "versus", "statistic")},
            **{k: _sig(r[k]) for k in ("delta", "p", "p_holm")},
            "interval": interval(r["low"], r["high"], 3),
            "verdict": str(r["verdict"]),
            "verdict_stable": _text(r.get("verdict_stable")),
            "evidence": str(r["evidence"]),
        }
        for r in d[d["family"] == "primary"].to_dict("records")
    ]


def differences_sentences(result: Correlation, measure: str) -> list[str]:
    """differences.csv rows of ``measure`` in words: protocol v3's ``verdict`` column (or, for
    a table without it, "better" only when low > 0)."""
    d = result.differences
    if d is None or d.empty:
        return []
    out = []
    for r in d[d["measure"] == measure].to_dict("records"):
        lo, hi, delta = as_float(r["low"]), as_float(r["high"]), as_float(r["delta"])
        if math.isnan(delta):
            continue
        if isinstance(r.get("verdict"), str) and r["verdict"]:
            word = str(r["verdict"])
        else:
            word = better_word(lo, hi) if not (math.isnan(lo) or math.isnan(hi)) else "not shown"
        iv = interval(lo, hi, 3)
        out.append(f"vs {r['versus']} on {r['statistic']}: delta {_sig(delta)} {iv}: {word}")
    return out


def lead_clause(said: list[str]) -> str:
    """What the paired differences (:func:`differences_sentences`) allow of a "best" measure:
    its lead is established only over the measures it is "better" than (SPEC 10); "" when it
    is better than every one compared."""
    open_ = [x.split(" on ", 1)[0][3:] for x in said if not x.endswith(": better")]
    if not said or len(open_) == len(said):
        return "; its lead over the others is not established"
    if open_:  # better than some, not all: the crown is not established
        return f"; its lead over {', '.join(open_)} is not established"
    return ""


def confound_sentence(result: Correlation, rows: dict[str, Any]) -> str:
    """The opening sentence: how far sample size alone goes, so no measure is read as a
    predictor on the strength of n."""
    if "sample_size_only" not in rows:
        return (
            "The training-set size n is the same for every model (or unknown), so sample size "
            "cannot explain the ranking; τ at fixed n is undefined and τ is the statistic."
        )
    ss = as_float(rows["sample_size_only"].get("kendall_tau"))
    weight = {
        k: as_float(r.get("kendall_tau"))
        for k, r in rows.items()
        if k not in BASELINES and not k.endswith("sqrt_n")
    }
    weight = {k: v for k, v in weight.items() if not math.isnan(v)}
    best = max(weight, key=lambda k: weight[k]) if weight else None
    text = f"Sample size alone (sample_size_only) ranks the gap with τ {spec(ss, '+.3g')}"
    if best is not None:
        text += (
            f"; the best measure of the weights or data, {best}, has τ {spec(weight[best], '+.3g')}"
        )
    return text + ": n varies, so read each measure beyond n (τ_n, within strata of equal n)."


#: Columns of differences.csv the page leaves to the file: the per-seed figures (``;`` lists).
SEED_COLUMNS = ("p_seeds", "low_seeds", "high_seeds")


def differences_table(d: pd.DataFrame | None) -> Any:
    """differences.csv on the page: delta, low and high in one format (:func:`_sig`), the
    per-seed lists left to the file; None without rows."""
    if d is None or not len(d):
        return None
    shown = d.drop(columns=[c for c in SEED_COLUMNS if c in d.columns])
    return table(shown, page_size=50, formats=dict.fromkeys(("delta", "low", "high"), _sig))


def scope_sentence(result: Correlation) -> str:
    """What every verdict of a folder page is: this zoo alone (Holm over its own primary
    rows, SPEC 10 protocol v4); the study's verdict is the answer about several zoos."""
    n = len(primary_rows(result))
    return (
        f"this zoo alone (Holm over its own {n} primary rows); the study's verdict is the "
        "answer about several zoos"
    )


def answer_context(result: Correlation, study_href: str | None = None) -> dict[str, Any]:
    """What the opening says (templates/_correlate_answer.html): the tool's own proxy, the
    primary contrasts, every measure's verdict, established differences, the rank ceiling,
    the zoo's counts."""
    c = result.correlation
    rows = {str(r["measure"]): r for r in c.to_dict("records")}
    lead = None
    if OWN in rows:
        r = rows[OWN]
        lead = f"{OWN} {predicts(r)} ({_stat(r, 'kendall_tau', 'τ')})"
        if math.isnan(as_float(r.get("tau_fixed_n"))):
            lead += "; τ at fixed n is undefined"
        else:
            lead += f"; at fixed n it {predicts(r, 'tau_fixed_n').replace(' here', '')} "
            lead += f"({_stat(r, 'tau_fixed_n', 'τ_n')})"
    rc = getattr(result, "rank_ceiling", None) or {}
    measures = [
        (
            name,
            _verdict(r, result.axes),
            f"{_stat(r, 'kendall_tau', 'τ')}; {_stat(r, 'psi', 'Ψ')}",
        )
        for name, r in rows.items()
    ]
    best_rows = []
    for st, label in (("psi", "granulated Kendall Ψ"), ("kendall_tau", "Kendall τ")):
        if st not in c.columns or not c[st].map(as_float).notna().any():
            continue
        best = str(c.loc[c[st].map(as_float).idxmax(), "measure"])
        said = [x for x in differences_sentences(result, best) if f" on {st}:" in x]
        text = f"{_stat(rows[best], st, label.split()[-1])}; the largest point value"
        if said:
            text += "; exploratory paired differences (BH q-values): " + "; ".join(said)
        text += lead_clause(said)
        if best.endswith("sqrt_n") or best == "sample_size_only":
            text += (
                "; it contains sample size (a -1/2 log10 n term), so part of its rank is n's"
                if best != "sample_size_only"
                else "; it is sample size alone, not a property of the weights"
            )
        best_rows.append({"label": label, "measure": best, "text": text})
    used, listed = len(result.models), result.n_listed
    failed = len(result.skipped) - result.n_unconverged
    conv = "kept" if result.include_unconverged else "excluded"
    zoo = (
        f"{used:,} of {listed:,} models used ({failed:,} failed or had no metrics; "
        f"{result.n_unconverged:,} unconverged, {conv}); "
        f"{getattr(result, 'n_configurations', 0) or 'unknown'} configurations; gap = "
        + (
            "train accuracy − test accuracy"
            if result.gap == "accuracy"
            else "test loss − train loss"
        )
        + f"; axes: {', '.join(result.axes) or 'none'} (seed is a replicate unless named)."
    )
    unconverged = result.n_unconverged if not result.include_unconverged else 0
    return {
        "scope": scope_sentence(result),
        "study_href": study_href,
        "confound": confound_sentence(result, rows),
        "lead": lead,
        "primary": primary_rows(result),
        "missing": [str(m) for m in getattr(result, "missing", []) or []],
        "rank_ceiling": rc.get("statement"),
        "measures": measures,
        "best": best_rows,
        "zoo": zoo,
        "unconverged": unconverged,
    }


def answer_html(result: Correlation) -> str:
    """The opening alone (templates/_correlate_answer.html with :func:`answer_context`)."""
    return render("_correlate_answer.html", a=answer_context(result))


def model_labels(models: pd.DataFrame) -> tuple[list[str], pd.DataFrame | None]:
    """Short labels of the models (shared prefix removed; m1, m2, ... when still longer than
    LABEL_WIDTH) and the legend (label -> model), None when the labels are the names."""
    import pandas as pd

    names = [str(n) for n in models.get("model", pd.Series([], dtype=str))]
    short = display_names(names)
    if not short or max(len(s) for s in short) <= LABEL_WIDTH:
        return short, None
    labels = [f"m{i + 1}" for i in range(len(names))]
    return labels, pd.DataFrame({"label": labels, "model": short})


def page_title(result: Correlation) -> str:
    """``Correlation study: TASK, PRESET, protocol v4, with data measures``: the page says which
    zoo it is on (preset from the zoo's zoo.json, "pooled" for several zoos) and the protocol
    number correlate.json records."""
    import json

    parts = [str(result.task)] if result.task else []
    preset = None
    if len(result.zoos) > 1:
        preset = f"{len(result.zoos)} zoos pooled"
    else:
        zoo_json = Path(str(result.manifest)).with_name("zoo.json")
        try:
            preset = json.loads(zoo_json.read_text(encoding="utf-8")).get("preset")
        except (OSError, ValueError, AttributeError):
            preset = None
        if preset == "grid" or preset is None:
            preset = result.zoos[0] if result.zoos else preset
    if preset:
        parts.append(str(preset))
    parts.append(f"protocol v{result.summary()['protocol']}")
    data = any(m in result.measures for m in ("sharpness", "pacbayes_flatness", "inverse_margin"))
    parts.append("with data measures" if data else "weight measures only")
    return "Correlation study: " + ", ".join(parts)


CORRELATE_FILES = (
    "models.csv",
    "correlation.csv",
    "differences.csv",
    "skipped.csv",
    "correlate.json",
)


def report_html(
    result: Correlation,
    figures: list[Figure],
    out_dir: str | Path | None = None,
    siblings: Sequence[tuple[str, str]] = (),
    study_href: str | None = None,
) -> str:
    """The whole report page (templates/correlate.html), figures embedded; links to the files
    written next to it, to ``siblings`` (label, relative href) pages and to the study's page
    (``study_href``) beside the "this zoo alone" caveat of every verdict. correlation.csv is
    shown in its compact form (:func:`compact_table`) and linked in full."""
    d = result.differences
    models = result.models.copy()
    labels, legend = model_labels(models)
    if "model" in models.columns:
        models["model"] = labels
    drop = [c for c in PATH_COLUMNS if c in models.columns]
    models = models.drop(columns=drop)
    return page(
        page_title(result),
        docs=("correlate", "measures"),
        template="correlate.html",
        a=answer_context(result, study_href),
        files=files_html(out_dir, CORRELATE_FILES),
        siblings=list(siblings),
        notes=list(result.notes),
        figures=[figure_html(f) for f in figures],
        correlation=table(compact_table(result), page_size=60),
        correlation_link=file_link(out_dir, "correlation.csv"),
        differences=differences_table(d),
        n_models=len(result.models),
        path_columns=drop,
        models=table(models, page_size=50),
        legend=table(legend, page_size=50) if legend is not None else None,
        n_skipped=len(result.skipped),
        skipped=table(result.skipped, page_size=50) if len(result.skipped) else None,
    )


def correlation_figures(result: Correlation, fig_dir: Path) -> list[Figure]:
    """The tau/Psi chart, then one scatter per measure."""
    figs = [tau_psi_figure(result, fig_dir)]
    figs += [
        measure_figure(result, m, fig_dir) for m in result.measures if m in result.models.columns
    ]
    return figs


def sibling_pages(out: Path) -> list[tuple[str, str]]:
    """The other correlate folders beside ``out`` (their report.html, relative links), and the
    README.md of the folder above them when there is one (a benchmark's write-up)."""
    parent = Path(out).absolute().parent
    if not parent.is_dir():
        return []
    pages = [
        (d.name, f"../{d.name}/report.html")
        for d in sorted(parent.iterdir())
        if d.name != Path(out).name and (d / "correlate.json").is_file()
    ]
    if (parent.parent / "README.md").is_file() and pages:
        pages.append(("README", "../../README.md"))
    return pages


def study_page(out: Path) -> str | None:
    """``../study/report.html`` when the study's page sits beside ``out`` (a benchmark's
    results/ folder), else None."""
    there = Path(out).absolute().parent / "study" / "report.html"
    return "../study/report.html" if there.is_file() and Path(out).name != "study" else None


def write_page(
    result: Correlation,
    folder: str | Path,
    *,
    figures: bool = True,
    siblings: Sequence[tuple[str, str]] = (),
    figure_formats: str | Sequence[str] | None = None,
    study_href: str | None = None,
) -> None:
    """Write figures/ (unless ``figures`` is False; each in ``figure_formats``, SVG by default)
    and report.html into ``folder`` (the result's folder being written; the page links to the
    files beside it and ``siblings``)."""
    folder = Path(folder)
    with writing_formats(figure_formats):
        figs = correlation_figures(result, folder / "figures") if figures else []
    (folder / "report.html").write_text(
        report_html(result, figs, folder, siblings, study_href), encoding="utf-8"
    )


def correlation_page(
    result: Correlation,
    out: str | Path,
    figures: bool = True,
    siblings: Sequence[tuple[str, str]] = (),
    *,
    figure_formats: str | Sequence[str] | None = None,
) -> Callable[[Path], None]:
    """The ``extra`` of ``result.to_dir(out, extra=...)`` that adds the report page: figures/
    and report.html, linking to the correlate folders beside ``out`` (``sibling_pages``, found
    now, before the write) unless ``siblings`` are given."""
    links = list(siblings) or sibling_pages(Path(out))
    return functools.partial(
        write_page,
        result,
        figures=figures,
        siblings=links,
        figure_formats=figure_formats,
        study_href=study_page(Path(out)),
    )


def write_correlation(
    result: Correlation,
    out: str | Path,
    figures: bool = True,
    siblings: Sequence[tuple[str, str]] = (),
    *,
    figure_formats: str | Sequence[str] | None = None,
) -> Path:
    """Write the result's tables and correlate.json, figures/ and report.html into ``out`` in
    one atomic write: ``result.to_dir(out, extra=correlation_page(result, out, ...))``;
    ``figure_formats``: the files of each figure (``"svg"`` by default; e.g. ``"png,pdf"``)."""
    extra = correlation_page(result, out, figures, siblings, figure_formats=figure_formats)
    return result.to_dir(out, extra=extra)
