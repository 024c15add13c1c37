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
with short model labels and a legend. Every user string (paths, axis names and values, task,
measure and metric names) goes through ``html.escape``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...naming import display_names
from ...studies.correlate.rules import BASELINES
from ..figures.correlate import color_axis, measure_figure, tau_psi_figure
from ..html import escape, figure_html, files_html, interval, page, table

if TYPE_CHECKING:
    import pandas as pd

    from ...studies.correlate.result import Correlation
    from ..figures.style import Figure

__all__ = [
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


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _stat(row: dict[str, Any], st: str, name: str) -> str:
    v = _float(row.get(st))
    if math.isnan(v):
        return f"{name} undefined"
    v = round(v, 2) + 0.0  # never "-0.00"
    return f"{name} {v:.2f} {interval(row.get(f'{st}_low'), row.get(f'{st}_high'))}"


def predicts(row: dict[str, Any], st: str = "kendall_tau") -> str:
    """SPEC 10's words for one statistic's interval: "predicts the gap" only when the interval
    is above 0, "the wrong way" when below 0, otherwise "undetermined" (an interval that holds
    0 shows neither that it predicts nor that it does not)."""
    lo, hi = _float(row.get(f"{st}_low")), _float(row.get(f"{st}_high"))
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
    from ...studies.correlate.table import verdict

    return verdict(row, axes)


def _sig(v: Any) -> str:
    """3 decimals, or 3 significant digits below 0.01 (never rounds across 0 or a threshold)."""
    x = _float(v)
    if math.isnan(x):
        return "undefined"
    return f"{x:.3g}" if x != 0 and abs(x) < 0.01 else f"{x:.3f}"


def primary_html(result: Correlation) -> str:
    """The primary contrasts (protocol v3) as a small table, then the missing grid points."""
    d = result.differences
    parts = []
    if d is not None and "family" in d.columns:
        prim = d[d["family"] == "primary"].to_dict("records")
        if prim:
            rows = "".join(
                f"<tr><td>{escape(r['contrast'])}</td><td><code>{escape(r['measure'])}</code> − "
                f"<code>{escape(r['versus'])}</code></td><td>{escape(r['statistic'])}</td>"
                f'<td class="num">{_sig(r["delta"])} [{_sig(r["low"])}, {_sig(r["high"])}]</td>'
                f'<td class="num">{_sig(r["p"])}</td><td class="num">{_sig(r["p_holm"])}</td>'
                f"<td><b>{escape(r['verdict'])}</b></td><td>{escape(r['evidence'])}</td></tr>"
                for r in prim
            )
            parts.append(
                "<p><b>Primary contrasts</b> (fixed in advance; Holm over these "
                f"{len(prim)}; a verdict needs p_holm &lt; 0.05 and an interval that excludes 0, "
                "&ge; 8 configurations and &ge; 1000 draws):</p>"
                '<div class="scroll"><table><thead><tr><th>contrast</th><th>measure − versus'
                "</th><th>statistic</th><th>delta [95% interval]</th><th>p</th><th>p_holm</th>"
                "<th>verdict</th><th>evidence</th></tr></thead><tbody>"
                + rows
                + "</tbody></table></div>"
            )
    missing = list(getattr(result, "missing", []) or [])
    if missing:
        parts.append(
            f'<p class="warn">{len(missing)} configurations of the grid have no usable model '
            f"(missing, skipped or unconverged): {escape(', '.join(missing))}.</p>"
        )
    return "".join(parts)


def differences_sentences(result: Correlation, measure: str) -> list[str]:
    """differences.csv rows of ``measure`` in words: protocol v3's ``verdict`` column (or, for
    a table without it, "better" only when low > 0)."""
    from ...studies.correlate.table import better_word

    d = result.differences
    if d is None or d.empty:
        return []
    out = []
    for r in d[d["measure"] == measure].to_dict("records"):
        lo, hi, delta = _float(r["low"]), _float(r["high"]), _float(r["delta"])
        if math.isnan(delta):
            continue
        if isinstance(r.get("verdict"), str) and r["verdict"]:
            word = str(r["verdict"])
        else:
            word = better_word(lo, hi) if not (math.isnan(lo) or math.isnan(hi)) else "not shown"
        out.append(
            f"vs {r['versus']} on {r['statistic']}: delta {_sig(delta)} "
            f"[{_sig(lo)}, {_sig(hi)}]: {word}"
        )
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
    ss = _float(rows["sample_size_only"].get("kendall_tau"))
    weight = {
        k: _float(r.get("kendall_tau"))
        for k, r in rows.items()
        if k not in BASELINES and not k.endswith("sqrt_n")
    }
    weight = {k: v for k, v in weight.items() if not math.isnan(v)}
    best = max(weight, key=lambda k: weight[k]) if weight else None
    text = f"Sample size alone (sample_size_only) ranks the gap with τ {ss:+.3g}"
    if best is not None:
        text += f"; the best measure of the weights or data, {best}, has τ {weight[best]:+.3g}"
    return text + ": n varies, so read each measure beyond n (τ_n, within strata of equal n)."


def answer_html(result: Correlation) -> str:
    """The opening: the tool's own proxy, every measure's verdict, established differences,
    the rank ceiling, the zoo's counts."""
    c = result.correlation
    rows = {str(r["measure"]): r for r in c.to_dict("records")}
    parts: list[str] = [f"<p>{escape(confound_sentence(result, rows))}</p>"]
    if OWN in rows:
        r = rows[OWN]
        lead = f"{OWN} {predicts(r)} ({_stat(r, 'kendall_tau', 'τ')})"
        if math.isnan(_float(r.get("tau_fixed_n"))):
            lead += "; τ at fixed n is undefined"
        else:
            lead += f"; at fixed n it {predicts(r, 'tau_fixed_n').replace(' here', '')} "
            lead += f"({_stat(r, 'tau_fixed_n', 'τ_n')})"
        parts.append(f'<p class="lead"><b>{escape(lead)}.</b></p>')
    parts.append(primary_html(result))
    rc = getattr(result, "rank_ceiling", None) or {}
    if rc.get("statement"):
        parts.append(f"<p><b>Rank ceiling:</b> {escape(rc['statement'])}</p>")
    items = []
    for name, r in rows.items():
        items.append(
            f"<li><code>{escape(name)}</code>: {escape(_verdict(r, result.axes))} "
            f"({escape(_stat(r, 'kendall_tau', 'τ'))}; {escape(_stat(r, 'psi', 'Ψ'))})</li>"
        )
    parts.append(
        "<p><b>Each measure, in SPEC 10's words</b> (a claim needs an interval that excludes "
        "0, or for a failing axis at least 10 pairs):</p><ul>" + "".join(items) + "</ul>"
    )
    for st, label in (("psi", "granulated Kendall Ψ"), ("kendall_tau", "Kendall τ")):
        if st not in c.columns or not c[st].map(_float).notna().any():
            continue
        best = str(c.loc[c[st].map(_float).idxmax(), "measure"])
        said = [x for x in differences_sentences(result, best) if f" on {st}:" in x]
        text = (
            f"<p><b>Best by {label}:</b> <code>{escape(best)}</code> "
            f"({escape(_stat(rows[best], st, label.split()[-1]))}; the largest point value"
        )
        if said:
            text += "; exploratory paired differences (BH q-values): " + escape("; ".join(said))
        text += escape(lead_clause(said))
        if best.endswith("sqrt_n") or best == "sample_size_only":
            text += escape(
                "; it contains sample size (a -1/2 log10 n term), so part of its rank is n's"
                if best != "sample_size_only"
                else "; it is sample size alone, not a property of the weights"
            )
        parts.append(text + ").</p>")
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
    parts.append(f"<p>{escape(zoo)}</p>")
    if result.n_unconverged and not result.include_unconverged:
        parts.append(
            f'<p class="warn">{result.n_unconverged:,} unconverged models are excluded: the '
            "statistics describe the converged models only, not the design.</p>"
        )
    return '<div class="answer">' + "".join(parts) + "</div>"


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
    """``Correlation study: TASK, PRESET, protocol v3, with data measures``: the page says which
    zoo it is on (preset from the zoo's zoo.json, "pooled" for several zoos)."""
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
    parts.append("protocol v3")
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
) -> str:
    """The whole report page, figures embedded; links to the files written next to it and to
    ``siblings`` (label, relative href) pages."""
    title = page_title(result)
    sections = [answer_html(result), files_html(out_dir, CORRELATE_FILES)]
    if siblings:
        links = ", ".join(f'<a href="{escape(h)}">{escape(t)}</a>' for t, h in siblings)
        sections.append(f'<p class="files">Other pages of this study: {links}</p>')
    if result.notes:
        sections.append('<p class="note">' + "<br>".join(escape(n) for n in result.notes) + "</p>")
    if figures:
        sections.append("<h2>τ, Ψ and τ at fixed n of every measure</h2>" + figure_html(figures[0]))
        sections.append(
            '<h2>Each measure against the gap</h2><div class="grid">'
            + "".join(figure_html(f) for f in figures[1:])
            + "</div>"
        )
    sections.append("<h2>correlation.csv</h2>" + table(result.correlation))
    d = result.differences
    if d is not None and len(d):
        sections.append(
            "<h2>differences.csv</h2>"
            '<p class="note">delta = statistic(measure) − statistic(versus); [low, high]: the '
            "paired bootstrap interval; p: its bootstrap p-value over B draws. Primary rows "
            "(P1-P3) carry p_holm (Holm over them), exploratory rows q_bh (Benjamini-Hochberg "
            "over them); a verdict is better or worse only when that figure is &lt; 0.05 and the "
            "interval excludes 0, and never within 2 Monte Carlo errors of 0.05 (borderline).</p>"
            + table(d, page_size=50)
        )
    models = result.models.copy()
    labels, legend = model_labels(models)
    if "model" in models.columns:
        models["model"] = labels
    drop = [c for c in PATH_COLUMNS if c in models.columns]
    models = models.drop(columns=drop)
    note = (
        f'<p class="note">Columns {escape(", ".join(drop))} (a path per model) are in '
        "models.csv.</p>"
        if drop
        else ""
    )
    sections.append(
        f"<h2>models.csv ({len(result.models):,} models)</h2>" + note + table(models, page_size=50)
    )
    if legend is not None:
        sections.append("<h2>Model labels</h2>" + table(legend, page_size=50))
    if len(result.skipped):
        sections.append(
            f"<h2>skipped.csv ({len(result.skipped):,} models)</h2>"
            + table(result.skipped, page_size=50)
        )
    return page(title, sections, docs=("correlate", "measures"))


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


def write_page(
    result: Correlation,
    folder: str | Path,
    *,
    figures: bool = True,
    siblings: Sequence[tuple[str, str]] = (),
    figure_formats: str | Sequence[str] | None = None,
) -> None:
    """Write figures/ (unless ``figures`` is False; each in ``figure_formats``, SVG by default)
    and report.html into ``folder`` (the result's folder being written; the page links to the
    files beside it and ``siblings``)."""
    from ..figures.style import writing_formats

    folder = Path(folder)
    with writing_formats(figure_formats):
        figs = correlation_figures(result, folder / "figures") if figures else []
    (folder / "report.html").write_text(
        report_html(result, figs, folder, siblings), encoding="utf-8"
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
        write_page, result, figures=figures, siblings=links, figure_formats=figure_formats
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
