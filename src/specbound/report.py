"""Self-contained ``report.html`` for one analysis or a scaling study (rendering only).

One file: figures embedded as base64 PNG, inline CSS and a few lines of inline JS (click a
column header to sort a table); no external URL of any kind, so it opens from disk with no
network and no server. The page opens with the answer (both proxies, which matrices dominate,
which p they chose and what that means), then the figures, then the tables. Tables put their
key columns first, keep their header visible while scrolling and label columns in words (the
CSV name is the header's tooltip). No absolute filesystem path and no "inf" reaches the page.
"""

from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._version import __version__
from .naming import display_name, display_names, natural_key
from .spectra import MATRIX_TYPES

if TYPE_CHECKING:
    import pandas as pd

    from .analysis import Analysis
    from .plots import Figure
    from .study import Study

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1180px;padding:1.2em 1.6em;color:#1b1b1f;line-height:1.45}
h1{font-size:1.55em;margin:.2em 0 .4em;overflow-wrap:anywhere}h2{font-size:1.2em;
margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.answer{background:#f3f6fb;border-left:4px solid #3b6fb6;padding:.7em 1.1em;margin:.6em 0 1.2em}
.answer p{margin:.45em 0}.warn{color:#8a4b00}
.bounds{display:flex;gap:2em;flex-wrap:wrap;margin:.3em 0 .6em}
.bound{font-size:1.05em}.bound b{font-size:1.35em}
figure{margin:1.4em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.9em;color:#444;max-width:60em}
.tw{max-height:75vh;overflow:auto;margin:.5em 0 1em;border:1px solid #ddd;max-width:100%;
width:max-content}
table{border-collapse:separate;border-spacing:0;font-size:.85em}
th,td{border-right:1px solid #e3e3e3;border-bottom:1px solid #e3e3e3;padding:.25em .55em;
text-align:right;white-space:nowrap}
th{background:#eef1f5;cursor:pointer;user-select:none;position:sticky;top:0;z-index:1;
white-space:normal;vertical-align:bottom;min-width:3.5em;max-width:10em;font-weight:600}
th.asc:after{content:" \\25B2"}th.desc:after{content:" \\25BC"}
td.txt,th.txt{text-align:left}tr:nth-child(even) td{background:#fafafa}
td.txt{white-space:normal;max-width:34em;overflow-wrap:break-word}
.note{color:#555;font-size:.9em}
"""

_JS = """
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('th').forEach(function(th,i){
    th.addEventListener('click',function(){
      var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);
      var asc=!th.classList.contains('asc');
      t.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
      th.classList.add(asc?'asc':'desc');
      rows.sort(function(r1,r2){
        var a=r1.cells[i].getAttribute('data-v'),c=r2.cells[i].getAttribute('data-v');
        var x=parseFloat(a),y=parseFloat(c);
        var d=(!isNaN(x)&&!isNaN(y))?x-y:String(a).localeCompare(String(c),undefined,
          {numeric:true});
        return asc?d:-d;});
      rows.forEach(function(r){b.appendChild(r);});
    });
  });
});
"""

#: Column labels in words; any other column shows its name with spaces for underscores.
LABELS = {
    "matrix_type": "type",
    "p_star": "p*",
    "contribution": "contribution c*",
    "log10_contribution": "log10 c*",
    "spectral_norm": "spectral norm",
    "frobenius_norm": "Frobenius norm",
    "nuclear_norm": "nuclear norm",
    "norm_21": "(2,1) norm",
    "norm_11": "(1,1) norm",
    "stable_rank": "stable rank",
    "log10_alpha": "log10 alpha",
    "scale": "scale s",
    "log10_scale": "log10 s",
    "log10_xi": "log10 xi",
    "contribution_total": "c* total",
    "n_p0": "p*=0 (count)",
    "n_p2": "p*=2 (count)",
    "mean_p_star": "mean p*",
    "num_layers": "L",
    "hidden_size": "N",
    "num_heads": "H",
    "intermediate_size": "F",
    "num_parameters": "parameters",
    "spectrum_adaptive_log10": "log10 B spectrum-adaptive",
    "norm_based_log10": "log10 B norm-based",
    "share_p0": "share p*=0",
    "spectrum_adaptive": "spectrum-adaptive (log10 B)",
    "norm_based": "norm-based (log10 B)",
    "share_p2": "share p*=2",
    "fixed_axis": "fixed axis",
    "fixed_value": "fixed value",
    "exponent_se": "exponent SE",
    "log10_per_unit": "log10 per unit",
    "log10_per_unit_se": "per unit SE",
    "n_points": "models",
    "htsr_alpha": "HTSR alpha",
    "htsr_alpha_weighted": "HTSR alpha weighted",
    "htsr_xmin": "HTSR x_min",
    "htsr_D": "HTSR D",
    "htsr_num_tail": "HTSR tail size",
    **{f"contribution_{t}": f"c* {t}" for t in MATRIX_TYPES},
}
MATRIX_FIRST = ["layer", "head", "matrix_type", "p_star", "contribution", "log10_contribution"]
LAYER_FIRST = ["layer", "log10_alpha", "contribution_total", "mean_p_star", "n_p0", "n_p2"]
GROWTH_FIRST = [
    "proxy",
    "measure",
    "axis",
    "fit",
    "fixed_axis",
    "fixed_value",
    "exponent",
    "exponent_se",
    "log10_per_unit",
    "log10_per_unit_se",
    "n_points",
]
_ABS_PATH = re.compile(
    r"(?<![\w.:/])(?:[A-Za-z]:)?[/\\](?:[^\s/\\'\"<>,;:()]+[/\\])+"
    r"([^\s/\\'\"<>,;:()]+)"
)


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def scrub_paths(text: str) -> str:
    """Absolute filesystem paths in ``text`` replaced by their last component."""
    return _ABS_PATH.sub(lambda m: m.group(1), str(text))


def _fmt(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return "n/a"
        if math.isinf(v):
            return "> 1.8e308" if v > 0 else "< -1.8e308"
        if v.is_integer() and abs(v) < 1e15:  # counts (parameters, ranks): every digit
            return str(int(v))
        if 1e4 <= abs(v) < 1e6:
            return f"{v:.0f}"
        return f"{v:.4g}" if (v == 0 or abs(v) < 1e4) else f"{v:.5g}"
    if v is None:
        return ""
    return str(v)


def _beyond_float64(v: Any, log10: Any) -> bool:
    """A value that is missing/inf while its log10 says it exceeds the float64 range."""
    if not isinstance(v, (float, np.floating)) or math.isfinite(float(v)):
        return False
    return float(v) > 0 or (isinstance(log10, (float, np.floating)) and float(log10) > 307)


def _sort_key(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return ""
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return repr(f)
    return str(v)


def key_columns_first(df: pd.DataFrame, first: Sequence[str]) -> pd.DataFrame:
    """``df`` with the columns of ``first`` that it has moved to the front, in that order."""
    lead = [c for c in first if c in df.columns]
    return df[lead + [c for c in df.columns if c not in lead]]


def table_html(df: pd.DataFrame, max_rows: int | None = None, first: Sequence[str] = ()) -> str:
    """A sortable HTML table (click a header) in a scroll box with a sticky header; numbers
    sort numerically; columns of ``first`` come first; headers are words (``LABELS``)."""
    if first:
        df = key_columns_first(df, first)
    cols = list(df.columns)
    from pandas.api.types import is_numeric_dtype

    text_cols = {c for c in cols if not is_numeric_dtype(df[c]) or df[c].dtype == bool}
    head = "".join(
        f'<th class="{"txt" if c in text_cols else ""}" title="{_esc(c)}">'
        f"{_esc(LABELS.get(str(c), str(c).replace('_', ' ')))}</th>"
        for c in cols
    )
    body = []
    frame = df if max_rows is None else df.head(max_rows)
    for row in frame.itertuples(index=False):
        cells = []
        logs = dict(zip(cols, row, strict=True))
        for c, v in zip(cols, row, strict=True):
            raw, shown = _sort_key(v), _fmt(v)
            if _beyond_float64(v, logs.get(f"log10_{c}")):  # missing because it overflowed
                raw, shown = "Infinity", "> 1.8e308"
            if c in text_cols:
                shown = scrub_paths(shown)
                raw = scrub_paths(raw)
            cls = ' class="txt"' if c in text_cols else ""
            cells.append(f'<td{cls} data-v="{_esc(raw)}">{_esc(shown)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    note = ""
    if max_rows is not None and len(df) > max_rows:
        note = (
            f'<p class="note">First {max_rows} of {len(df)} rows; the full table is in '
            "the CSV next to this report.</p>"
        )
    return (
        f'<div class="tw"><table class="sortable"><thead><tr>{head}</tr></thead><tbody>'
        + "".join(body)
        + "</tbody></table></div>"
        + note
    )


def figure_html(fig: Figure) -> str:
    """A figure as an embedded base64 PNG."""
    data = base64.b64encode(Path(fig.png).read_bytes()).decode("ascii")
    return (
        f'<figure id="fig-{_esc(fig.name)}"><img alt="{_esc(fig.title)}" '
        f'src="data:image/png;base64,{data}"><figcaption><b>{_esc(fig.title)}.</b> '
        f"{_esc(scrub_paths(fig.caption))} (Vector version: "
        f"figures/{_esc(Path(fig.vector).name)}.)</figcaption></figure>"
    )


def page(title: str, sections: Sequence[str]) -> str:
    """The whole HTML document."""
    title = scrub_paths(title)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_esc(title)}</h1>"
        + "\n".join(sections)
        + f'<p class="note">specbound {_esc(__version__)}. Formulas: SPEC.md.</p>'
        + f"<script>{_JS}</script></body></html>\n"
    )


def _bound_text(b: Any) -> str:
    v = b.value
    value = f"{v:.4g}" if v is not None and math.isfinite(v) else "&gt; 1.8e308"
    return f"{value} (log10 {b.log10:.3f})"


#: What p = 0 and p = 2 charge, in words (SPEC 4), shared by both reports.
P_MEANING = (
    "At p = 0 a matrix is charged c(A, 0) = sqrt(rank x N): its rank only, whatever its "
    "singular values and its scale s = gamma x alpha x L. At p = 2 it is charged "
    "c(A, 2) = (||A||_F x s)^(1/2) x N^(3/4). In between, large singular values weigh more "
    "than small ones. p = 0 wins when the scale is large: roughly when s times the matrix's "
    "typical singular value exceeds sqrt(rank / N), which is at most 1."
)


def measures_table(a: Analysis) -> pd.DataFrame | None:
    """name, value, description, note of every measure of ``a`` (None when it has none)."""
    import pandas as pd

    values = getattr(a, "measures", None)
    if not values:
        return None
    notes = getattr(a, "measure_notes", {}) or {}
    try:
        from .measures import MEASURES
    except ImportError:  # pragma: no cover - the registry ships with the package
        MEASURES = {}
    rows = []
    for name, v in values.items():
        m = MEASURES.get(name)
        rows.append(
            {
                "measure": name,
                "value": "undefined" if v is None else _fmt(float(v)),
                "description": m.description if m is not None else "",
                "note": notes.get(name, ""),
            }
        )
    return pd.DataFrame(rows, columns=["measure", "value", "description", "note"])


def answer_html(a: Analysis) -> str:
    """The opening paragraph for one model: proxies, dominant matrices, chosen p, in words."""
    from .summary import explain_p

    d, s = a.details, a.spectra
    c = np.exp(d.log_contribution - np.max(d.log_contribution)) if len(s) else np.zeros(0)
    total = float(c.sum()) or 1.0
    by_type = {
        name: float(c[s.matrix_type == t].sum()) / total for t, name in enumerate(MATRIX_TYPES)
    }
    ranked = sorted(by_type.items(), key=lambda kv: -kv[1])
    top = int(np.argmax(d.log_contribution)) if len(s) else -1
    parts = [f"{name} {share:.0%}" for name, share in ranked]
    sa, nb = a.bounds.spectrum_adaptive, a.bounds.norm_based
    lines = [
        '<div class="answer">',
        '<div class="bounds">'
        f'<div class="bound">spectrum-adaptive proxy: <b>{_bound_text(sa)}</b></div>'
        f'<div class="bound">norm-based proxy: <b>{_bound_text(nb)}</b></div></div>',
        f"<p>The spectrum-adaptive proxy is {abs(nb.log10 - sa.log10):.2f} orders of magnitude "
        f"{'below' if sa.log10 <= nb.log10 else 'above'} the norm-based one.</p>",
        f"<p><b>Which matrices dominate:</b> share of the summed contributions by type: "
        f"{_esc(', '.join(parts))}.",
    ]
    if top >= 0:
        head = int(s.head[top])
        where = f"layer {int(s.layer[top])}" + (f", head {head}" if head >= 0 else "")
        lines.append(
            f" The largest single term is {MATRIX_TYPES[int(s.matrix_type[top])]} "
            f"({where}), p* = {d.p_star[top]:.3g}."
        )
    lines.append("</p>")
    used, counts = np.unique(d.p_star, return_counts=True)
    dist = ", ".join(f"p = {p:.3g}: {n}" for p, n in zip(used, counts, strict=True))
    lines.append(
        f"<p><b>Which p they chose:</b> {_esc(dist)} (of {len(s)} matrices; grid m = "
        f"{a.grid_m}, p in {{0, 1/m, ..., 2}}). {_esc(explain_p(d.p_star, a))}"
        f"</p><p>{_esc(P_MEANING)}</p>"
    )
    alpha0 = float(d.log_alpha[0] / np.log(10.0)) if d.log_alpha.size else 0.0
    lines.append(
        f"<p>Depth factor: log10 alpha(0) = {alpha0:.2f}. Model: "
        f"{_esc(a.spec.architecture)}, L = {a.spec.num_layers}, "
        f"N = {a.spec.hidden_size}, H = {a.spec.num_heads}, "
        f"F = {a.spec.intermediate_size}.</p>"
    )
    for note in a.adaptations:
        lines.append(f'<p class="note">Adaptation: {_esc(scrub_paths(note))}</p>')
    lines.append("</div>")
    return "".join(lines)


def analysis_sections(a: Analysis, figs: Sequence[Figure]) -> list[str]:
    """Answer, figures, tables for one model."""
    mats = a.matrices.sort_values("log10_contribution", ascending=False, kind="stable")
    mats = mats.assign(head=mats["head"].where(mats["head"] >= 0))  # M_in/M_out: "n/a", not -1
    out = [answer_html(a)]
    mt = measures_table(a)
    if mt is not None:
        out.append(
            "<h2>Measures (summary.json)</h2>"
            '<p class="note">Larger should mean "generalizes worse" (SPEC 9). The two '
            "bounds and the log products are log10 values.</p>" + table_html(mt)
        )
    out += [
        "<h2>Figures</h2>" + "".join(figure_html(f) for f in figs),
        "<h2>Per layer (layers.csv)</h2>" + table_html(a.layers, first=LAYER_FIRST),
        "<h2>Matrices, largest contributions first (matrices.csv)</h2>"
        + table_html(mats, max_rows=200, first=MATRIX_FIRST),
    ]
    weights = getattr(a, "weights", None)
    if weights is not None and len(weights):
        out.append(
            "<h2>Raw weight matrices (weights.csv)</h2>"
            '<p class="note">The matrices of the baseline measures (SPEC 9): norms, '
            "stable rank and the heavy-tailed power-law fit.</p>"
            + table_html(weights, max_rows=200, first=["layer", "role", "tensor"])
        )
    return out


def write_analysis_report(analysis: Analysis, out_dir: str | Path) -> Path:
    """Write figures/ and report.html for one model into ``out_dir`` (call it inside
    ``io.output_dir``, e.g. as ``Analysis.to_dir(out, extra=...)``, so that the report and the
    CSVs are one atomic write)."""
    from . import plots

    plots.require_matplotlib()
    out_dir = Path(out_dir)
    figs = plots.analysis_figures(analysis, out_dir / "figures")
    html_text = page(
        f"specbound report: {display_name(analysis.model)}", analysis_sections(analysis, figs)
    )
    (out_dir / "report.html").write_text(html_text, encoding="utf-8")
    return out_dir / "report.html"


def _growth_html(growth: pd.DataFrame, axis: str) -> str:
    """The honest verdict along one axis (``verdict.growth_verdict``) as HTML."""
    from .verdict import AXIS_SYMBOL, growth_verdict

    v = growth_verdict(growth, axis)
    if v is None:
        return ""
    name_col = "measure" if "measure" in growth.columns else "proxy"
    pooled = growth[
        (growth["axis"] == axis)
        & (growth["fit"] == "pooled")
        & (growth[name_col] == "spectrum_adaptive")
    ]
    n = int(pooled["n_points"].iloc[0]) if len(pooled) else 0
    sym = AXIS_SYMBOL.get(axis, axis)
    osym = "L" if sym == "N" else "N"
    out = (
        f"<p><b>Against {sym}</b> (at fixed {osym}, one pooled slope over {n} models): "
        f"{_esc(v.sentence)}</p>"
    )
    for note in v.interaction:
        out += f'<p class="warn">{_esc(note)}</p>'
    return out


def _proxy_col(models: pd.DataFrame, proxy: str) -> str | None:
    for c in (f"{proxy}_log10", proxy):
        if c in models.columns:
            return c
    return None


def study_answer_html(study: Study) -> str:
    """The opening paragraph of a study report."""
    m = study.models
    lines = ['<div class="answer">', f"<p>{len(m)} models analyzed."]
    for proxy, label in (("spectrum_adaptive", "spectrum-adaptive"), ("norm_based", "norm-based")):
        col = _proxy_col(m, proxy)
        if col is not None and len(m):
            lines.append(
                f" log10 B of the {label} proxy ranges from {m[col].min():.3f} to "
                f"{m[col].max():.3f}."
            )
    lines.append("</p>")
    for axis in ("hidden_size", "num_layers"):
        lines.append(_growth_html(study.growth, axis))
    if study.growth.empty:
        lines.append("<p>No growth fit: no two models differ in only one of N and L.</p>")
    if {"share_p0", "share_p2"} <= set(m.columns) and len(m):
        p0, p2 = float(m["share_p0"].mean()), float(m["share_p2"].mean())
        if float(m["share_p0"].min()) == 1.0:
            lines.append(
                "<p><b>Which p they chose:</b> every matrix of every model picked "
                "p = 0, so the spectrum-adaptive proxy no longer depends on the trained "
                "singular values, only on the ranks (sum of sqrt(rank x N)).</p>"
            )
        else:
            lines.append(
                f"<p><b>Which p they chose:</b> on average {p0:.0%} of matrices picked "
                f"p = 0 (charged by rank only) and {p2:.0%} picked p = 2; the rest sit "
                "in between.</p>"
            )
        lines.append(f"<p>{_esc(P_MEANING)}</p>")
    if study.analyses:
        sa_share: dict[str, float] = dict.fromkeys(MATRIX_TYPES, 0.0)
        for a in study.analyses:
            c = np.exp(a.details.log_contribution - np.max(a.details.log_contribution))
            tot = float(c.sum()) or 1.0
            for t, name in enumerate(MATRIX_TYPES):
                sa_share[name] += float(c[a.spectra.matrix_type == t].sum()) / tot
        n = len(study.analyses)
        ranked = sorted(sa_share.items(), key=lambda kv: -kv[1])
        lines.append(
            "<p><b>Which matrices dominate</b> (mean share of the summed "
            "contributions): " + _esc(", ".join(f"{k} {v / n:.0%}" for k, v in ranked)) + ".</p>"
        )
    if study.missing:
        lines.append(
            f'<p class="note">Missing ({len(study.missing)}), not analyzed: '
            + _esc(", ".join(study.missing))
            + "</p>"
        )
    skipped = getattr(study, "skipped", [])
    if skipped:
        lines.append(
            f'<p class="note">Skipped ({len(skipped)}), could not be analyzed '
            "(skipped.csv): "
            + _esc(scrub_paths("; ".join(f"{display_name(m)}: {r}" for m, r in skipped)))
            + "</p>"
        )
    lines.append("</div>")
    return "".join(lines)


def models_display(study: Study) -> pd.DataFrame:
    """models.csv for the page: names without their shared prefix, natural order, key columns
    (name, L, N, the measures) first."""
    m = study.models.copy()
    if "model" in m.columns and len(m):
        m["model"] = display_names(list(m["model"].astype(str)))
        keys = [c for c in ("num_layers", "hidden_size") if c in m.columns]
        order = sorted(
            range(len(m)),
            key=lambda i: (tuple(m[k].iloc[i] for k in keys), natural_key(m["model"].iloc[i])),
        )
        m = m.iloc[order].reset_index(drop=True)
    try:
        from .measures import measure_names

        names = measure_names()
    except ImportError:  # pragma: no cover
        names = []
    measure_cols = [c for n in names for c in (n, f"{n}_log10") if c in m.columns]
    undefined = [c for c in measure_cols if not m[c].notna().any()]  # e.g. no --init given
    m = m.drop(columns=undefined)
    measure_cols = [c for c in measure_cols if c not in undefined]
    return key_columns_first(m, ["model", "num_layers", "hidden_size", *measure_cols])


def detail_model(study: Study) -> Analysis | None:
    """The study's largest model (most layers, then widest), whose spectra the report shows."""
    if not study.analyses:
        return None
    return max(study.analyses, key=lambda a: (a.spec.num_layers, a.spec.hidden_size))


def write_study(
    study: Study, out_dir: str | Path, *, norm_scaling_layers: int | None = None
) -> Path:
    """Write figures/ and report.html for a study into ``out_dir`` (call it inside
    ``io.output_dir``, e.g. ``study.to_dir(out, extra=lambda tmp: write_study(study, tmp))``).

    Figures: growth against N and L, both proxies per model, and the spectral decay and
    contribution-against-p figures of the largest model (files ``L{L}_N{N}_*``); with
    ``norm_scaling_layers``, also the norms against N at that depth.
    """
    from . import plots

    plots.require_matplotlib()
    out_dir = Path(out_dir)
    fig_dir = out_dir / "figures"
    figs = plots.study_figures(study, fig_dir)
    big = detail_model(study)
    if big is not None:
        L, N = big.spec.num_layers, big.spec.hidden_size
        figs += [
            plots.spectral_decay_figure(big, fig_dir, prefix=f"L{L}_N{N}_"),
            plots.contribution_figure(big, fig_dir, prefix=f"L{L}_N{N}_"),
        ]
        for f in figs[-2:]:
            f.title += f" of the largest model (L = {L}, N = {N})"
    if norm_scaling_layers is not None:
        nf = plots.norm_scaling_figure(study, fig_dir, num_layers=norm_scaling_layers)
        if nf is not None:
            figs.append(nf)
    return write_study_report(study, out_dir, figs)


def write_study_report(study: Study, out_dir: str | Path, figs: Sequence[Figure]) -> Path:
    """Write report.html for a study into ``out_dir`` (figures already written)."""
    growth = key_columns_first(study.growth, GROWTH_FIRST).copy()
    if "fixed_value" in growth.columns and "fit" in growth.columns:
        fixed = [
            ("all" if f == "pooled" else (int(v) if v == v and v is not None else ""))
            for f, v in zip(growth["fit"], growth["fixed_value"], strict=True)
        ]
        growth["fixed_value"] = fixed
    sections = [
        study_answer_html(study),
        "<h2>Figures</h2>" + "".join(figure_html(f) for f in figs),
        "<h2>Models (models.csv)</h2>" + table_html(models_display(study)),
        "<h2>Growth fits (growth.csv)</h2>"
        '<p class="note">exponent: slope of log10 of the measure (B for the bounds) on log10 of '
        "the axis; log10 per unit: slope of log10 of the measure on the axis value. per_fixed: "
        "one fit per value of the other axis; "
        "pooled: common slope, one intercept per value of the other axis. Standard errors: OLS "
        "(n/a when there are no residual degrees of freedom). Two slopes are called different "
        "only when they differ by more than two combined standard errors.</p>" + table_html(growth),
    ]
    path = Path(out_dir) / "report.html"
    path.write_text(page(study.title, sections), encoding="utf-8")
    return path
