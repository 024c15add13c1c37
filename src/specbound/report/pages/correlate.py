"""The report page of ``specbound correlate`` (SPEC 10, protocol v3): figures/ and report.html.

The tables and correlate.json are the result's own (``Correlation.to_dir``); this page is added
to the same atomic write through ``extra``: ``page = correlation_page(result, out)``, then
``result.to_dir(out, extra=lambda tmp: io.files.write_report_page(tmp, page(tmp)))``.

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

from ...errors import SpecboundError
from ...io.files import write_report_page
from ...io.readback import read_zoo_json
from ...naming import display_names
from ...studies import answer as answer_words
from ...studies.correlate.rules import BASELINES, better_word, verdict
from ..figures.correlate import color_axis, measure_figure, tau_psi_figure
from ..figures.style import writing_formats
from ..html import figure_html, file_link, files_html, interval, page, render, table
from ..numbers import as_float, spec
from . import links
from .compact import cell_text, compact_table, sig_text

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
    "page_text",
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
        return f"{name} n/a"
    v = round(v, 2) + 0.0  # never "-0.00"
    return f"{name} {v:.2f} {interval(row.get(f'{st}_low'), row.get(f'{st}_high'))}"


def predicts(row: dict[str, Any], st: str = "kendall_tau") -> str:
    """SPEC 10's words for one statistic's interval (``studies.answer.predicts``)."""
    return answer_words.predicts(row.get(f"{st}_low"), row.get(f"{st}_high"))


def _verdict(row: dict[str, Any], axes: list[str]) -> str:
    v = row.get("verdict")
    if isinstance(v, str) and v:
        return v

    return verdict(row, axes)


def primary_rows(result: Correlation, study: pd.DataFrame | None = None) -> list[dict[str, str]]:
    """The primary contrasts (differences.csv family primary) as the page shows them: text
    cells, numbers formatted, the interval "[lo, hi]" or "no interval", ``verdict_stable``;
    with ``study`` (the study's rows of this folder, ``studies.answer.study_rows``) the
    study's verdict of each row and why it differs from this page's (``study_note``)."""
    d = result.differences
    if d is None or "family" not in d.columns:
        return []
    prim = d[d["family"] == "primary"].to_dict("records")
    theirs: dict[str, dict[str, Any]] = {}
    n_family = 0
    if study is not None:
        theirs = {str(r["contrast"]): r for r in study.to_dict("records")}
        n_family = int(study.attrs.get("n_family", 0))
    out = []
    for r in prim:
        row = {
            **{k: str(r[k]) for k in ("contrast", "measure", "versus", "statistic")},
            **{k: sig_text(r[k]) for k in ("delta", "p", "p_holm")},
            "interval": interval(r["low"], r["high"], 3),
            "verdict": str(r["verdict"]),
            "verdict_stable": cell_text(r.get("verdict_stable")),
            "evidence": str(r["evidence"]),
            "study_verdict": "",
            "study_p_holm": "",
            "study_note": "",
        }
        s_row = theirs.get(row["contrast"])
        if s_row is not None:
            row["study_verdict"] = str(s_row["verdict"])
            row["study_p_holm"] = sig_text(s_row.get("p_holm"))
            row["study_note"] = answer_words.verdict_note(
                row["verdict"],
                row["study_verdict"],
                str(s_row.get("independence", "") or ""),
                len(prim),
                n_family,
            )
        out.append(row)
    return out


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
        out.append(f"vs {r['versus']} on {r['statistic']}: delta {sig_text(delta)} {iv}: {word}")
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
    """differences.csv on the page: delta, low and high in one format (:func:`sig_text`), the
    per-seed lists left to the file; None without rows."""
    if d is None or not len(d):
        return None
    shown = d.drop(columns=[c for c in SEED_COLUMNS if c in d.columns])
    return table(shown, page_size=50, formats=dict.fromkeys(("delta", "low", "high"), sig_text))


def scope_sentence(result: Correlation) -> str:
    """What every verdict of a folder page is: this zoo alone (Holm over its own primary
    rows, SPEC 10 protocol v4); the study's verdict is the answer about several zoos."""
    n = len(primary_rows(result))
    return (
        f"this zoo alone (Holm over its own {n} primary rows); the study's verdict is the "
        "answer about several zoos"
    )


def _rank(rows: dict[str, Any], name: str, st: str = "kendall_tau") -> str:
    """``3rd of 14 measures by τ`` (ties share the better place); "" when undefined."""
    vals = {k: as_float(r.get(st)) for k, r in rows.items()}
    vals = {k: v for k, v in vals.items() if not math.isnan(v)}
    if name not in vals:
        return ""
    place = 1 + sum(1 for v in vals.values() if v > vals[name])
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(place if place < 20 else place % 10, "th")
    return f"{place}{suffix} of {len(vals)} measures by τ"


def own_lead(rows: dict[str, Any]) -> str | None:
    """The tool's own proxy in SPEC 10's words: its τ interval (:func:`predicts`), its rank
    among the measures and, with several n, τ at fixed n; None when it was not measured."""
    if OWN not in rows:
        return None
    r = rows[OWN]
    lead = f"{OWN} {predicts(r)} ({_stat(r, 'kendall_tau', 'τ')}"
    rank = _rank(rows, OWN)
    lead += f", {rank})" if rank else ")"
    if math.isnan(as_float(r.get("tau_fixed_n"))):
        return lead + "; τ at fixed n is n/a (one n)"
    lead += f"; at fixed n it {predicts(r, 'tau_fixed_n').replace(' here', '')} "
    return lead + f"({_stat(r, 'tau_fixed_n', 'τ_n')})"


def best_rows(result: Correlation, rows: dict[str, Any]) -> list[dict[str, str]]:
    """The measure with the largest Ψ and the one with the largest τ, each with its
    exploratory paired differences and what they establish (:func:`lead_clause`), and whether
    it holds sample size."""
    c = result.correlation
    out = []
    for st, label in (("psi", "granulated Kendall Ψ"), ("kendall_tau", "Kendall τ")):
        if st not in c.columns or not c[st].map(as_float).notna().any():
            continue
        best = str(c.loc[c[st].map(as_float).idxmax(), "measure"])
        said = [x for x in differences_sentences(result, best) if f" on {st}:" in x]
        text = f"{_stat(rows[best], st, label.split()[-1])}; the largest point value"
        if said:
            text += "; exploratory paired differences (BH q-values): " + "; ".join(said)
        text += lead_clause(said) + sample_size_clause(best)
        out.append({"label": label, "measure": best, "text": text})
    return out


def sample_size_clause(measure: str) -> str:
    """What a measure holding sample size adds to its rank ("" for the others)."""
    if measure == "sample_size_only":
        return "; it is sample size alone, not a property of the weights"
    if measure.endswith("sqrt_n"):
        return "; it contains sample size (a -1/2 log10 n term), so part of its rank is n's"
    return ""


def zoo_sentence(result: Correlation) -> str:
    """The zoo's counts: models used, failed and unconverged, configurations, the gap, the
    axes."""
    used, listed = len(result.models), result.n_listed
    failed = len(result.skipped) - result.n_unconverged
    conv = "kept" if result.include_unconverged else "excluded"
    return (
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


def answer_context(
    result: Correlation, study_href: str | None = None, study: pd.DataFrame | None = None
) -> dict[str, Any]:
    """What the opening says (templates/_correlate_answer.html): the primary contrasts first
    (``studies.answer.primary_lead``, the bold lead), with the study's verdict of each row when
    ``study`` (its rows of this folder) is given; then the tool's own proxy (its interval in
    SPEC 10's words and its rank among the measures), every measure's verdict, established
    differences, the rank ceiling, the zoo's counts."""
    rows = {str(r["measure"]): r for r in result.correlation.to_dict("records")}
    prim = primary_rows(result, study)
    rc = getattr(result, "rank_ceiling", None) or {}
    measures = [
        (
            name,
            _verdict(r, result.axes),
            f"{_stat(r, 'kendall_tau', 'τ')}; {_stat(r, 'psi', 'Ψ')}",
        )
        for name, r in rows.items()
    ]
    return {
        "scope": scope_sentence(result),
        "study_href": study_href,
        "confound": confound_sentence(result, rows),
        "lead": own_lead(rows),
        "primary_lead": answer_words.primary_lead(prim),
        "primary": prim,
        "study_shown": study is not None and bool(prim),
        "differ": sum(1 for r in prim if r["study_verdict"] and r["study_note"] != "same"),
        "missing": [str(m) for m in getattr(result, "missing", []) or []],
        "rank_ceiling": rc.get("statement"),
        "measures": measures,
        "best": best_rows(result, rows),
        "zoo": zoo_sentence(result),
        "unconverged": result.n_unconverged if not result.include_unconverged else 0,
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


def zoo_words(result: Correlation) -> str:
    """Which zoo the page is on, from correlate.json's ``zoos`` and the zoo's zoo.json (read
    through the checked reader ``io.readback.read_zoo_json``): ``zoo NAME (standard preset)``
    or ``zoo NAME (grid file G)``; ``N zoos pooled: A + B`` for several zoos; NAME is the zoo's
    folder (correlate.json's ``zoos``, else the manifest's folder), which tells replicates and
    retrains apart (e.g. ``modular-addition-v2-avx2``)."""
    zoos = [str(z) for z in result.zoos]
    if len(zoos) > 1:
        return f"{len(zoos)} zoos pooled: {' + '.join(zoos)}"
    plan = ""
    zoo_json = Path(str(result.manifest)).with_name("zoo.json")
    if zoo_json.is_file():
        try:
            meta = read_zoo_json(zoo_json)
        except SpecboundError:
            meta = {}
        grid_file, preset = meta.get("grid_file"), meta.get("preset")
        if grid_file:
            plan = f"grid file {Path(str(grid_file)).name}"
        elif preset and preset != "grid":
            plan = f"{preset} preset"
    name = zoos[0] if zoos else Path(str(result.manifest)).parent.name
    if not name:
        return plan
    return f"zoo {name}" + (f" ({plan})" if plan else "")


def page_title(result: Correlation) -> str:
    """``Correlation study: TASK, zoo NAME (PLAN), protocol v4, with data measures``: the page
    says which zoo it is on (:func:`zoo_words`) and the protocol number correlate.json
    records."""
    parts = [str(result.task)] if result.task else []
    zoo = zoo_words(result)
    if zoo:
        parts.append(zoo)
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
    study: pd.DataFrame | None = None,
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
        a=answer_context(result, study_href, study),
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
    """The other pages beside ``out`` (``links.sibling_pages``: the study, the correlate
    folders, a size ladder; never a hidden temporary folder) and the README.md of the folder
    above them when there is one (a benchmark's write-up)."""
    return links.sibling_pages(out)


def study_of(out: Path) -> pd.DataFrame | None:
    """The study's primary rows of the folder ``out`` when the study's folder sits beside it
    (``studies.answer.study_rows``); None when there is none or it cannot be read."""
    there = Path(out).absolute().parent / links.STUDY
    if Path(out).name == links.STUDY:
        return None
    try:
        return answer_words.study_rows(there, Path(out).name)
    except SpecboundError:
        return None


def study_page(out: Path) -> str | None:
    """``../study/report.html`` when the study's page sits beside ``out`` (a benchmark's
    results/ folder), else None."""
    there = Path(out).absolute().parent / "study" / "report.html"
    return "../study/report.html" if there.is_file() and Path(out).name != "study" else None


def page_text(
    result: Correlation,
    folder: str | Path,
    *,
    figures: bool = True,
    siblings: Sequence[tuple[str, str]] = (),
    figure_formats: str | Sequence[str] | None = None,
    study_href: str | None = None,
    study: pd.DataFrame | None = None,
) -> str:
    """The page of ``result`` (:func:`report_html`) with its figures drawn into
    ``folder``/figures (unless ``figures`` is False; each in ``figure_formats``, SVG by
    default): the text for ``folder``/report.html (``folder``: the result's folder being
    written; the page links to the files beside it and ``siblings``), which
    ``io.files.write_report_page`` writes."""
    folder = Path(folder)
    with writing_formats(figure_formats):
        figs = correlation_figures(result, folder / "figures") if figures else []
    return report_html(result, figs, folder, siblings, study_href, study)


def write_page(
    result: Correlation,
    folder: str | Path,
    *,
    figures: bool = True,
    siblings: Sequence[tuple[str, str]] = (),
    figure_formats: str | Sequence[str] | None = None,
    study_href: str | None = None,
    study: pd.DataFrame | None = None,
) -> Path:
    """Figures/ and report.html in ``folder``: :func:`page_text`'s text written by
    ``io.files.write_report_page``."""
    text = page_text(
        result,
        folder,
        figures=figures,
        siblings=siblings,
        figure_formats=figure_formats,
        study_href=study_href,
        study=study,
    )
    return write_report_page(folder, text)


def correlation_page(
    result: Correlation,
    out: str | Path,
    figures: bool = True,
    siblings: Sequence[tuple[str, str]] = (),
    *,
    figure_formats: str | Sequence[str] | None = None,
) -> Callable[[Path], str]:
    """The page of ``result`` for the folder being written to ``out``: a function of that
    folder (the ``tmp`` of ``result.to_dir(out, extra=...)``) that draws the figures there and
    returns the text of its report.html (:func:`page_text`), for ``io.files.write_report_page``
    to write: ``result.to_dir(out, extra=lambda tmp: write_report_page(tmp, page(tmp)))``. The
    page links to the pages beside ``out`` (``sibling_pages``, found now, before the write)
    unless ``siblings`` are given, with the study's verdict of each primary row when the
    study's folder sits beside ``out`` (:func:`study_of`)."""
    pages = list(siblings) or sibling_pages(Path(out))
    return functools.partial(
        page_text,
        result,
        figures=figures,
        siblings=pages,
        figure_formats=figure_formats,
        study_href=study_page(Path(out)),
        study=study_of(Path(out)),
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
    one atomic write (what ``specbound correlate`` does): ``result.to_dir(out, extra=...)``
    with :func:`correlation_page`'s text written by ``io.files.write_report_page``;
    ``figure_formats``: the files of each figure (``"svg"`` by default; e.g. ``"png,pdf"``)."""
    text = correlation_page(result, out, figures, siblings, figure_formats=figure_formats)
    return result.to_dir(out, extra=lambda tmp: write_report_page(tmp, text(tmp)))
