"""Self-contained ``report.html`` for one analysis or a scaling study.

One file: figures embedded as base64 PNG, inline CSS and a few lines of inline JS (click a
column header to sort a table); no external URL of any kind, so it opens from disk with no
network and no server. The page opens with the answer (both proxies, which matrices dominate,
which p they chose and what that means), then the figures, then the tables.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._version import __version__
from .spectra import MATRIX_TYPES

if TYPE_CHECKING:
    import pandas as pd

    from .analysis import Analysis
    from .plots import Figure
    from .study import Study

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1180px;padding:1.2em 1.6em;color:#1b1b1f;line-height:1.45}
h1{font-size:1.55em;margin:.2em 0 .4em}h2{font-size:1.2em;margin-top:1.6em;
border-bottom:1px solid #ddd;padding-bottom:.2em}
.answer{background:#f3f6fb;border-left:4px solid #3b6fb6;padding:.7em 1.1em;margin:.6em 0 1.2em}
.bounds{display:flex;gap:2em;flex-wrap:wrap;margin:.3em 0 .6em}
.bound{font-size:1.05em}.bound b{font-size:1.35em}
figure{margin:1.2em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.9em;color:#555}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0 1em;display:block;overflow-x:auto;
max-width:100%}
th,td{border:1px solid #ddd;padding:.25em .55em;text-align:right;white-space:nowrap}
th{background:#eef1f5;cursor:pointer;user-select:none;position:sticky;top:0}
th.asc:after{content:" \\25B2"}th.desc:after{content:" \\25BC"}
td.txt,th.txt{text-align:left}tr:nth-child(even) td{background:#fafafa}
.note{color:#666;font-size:.9em}
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
        var d=(!isNaN(x)&&!isNaN(y))?x-y:String(a).localeCompare(String(c));
        return asc?d:-d;});
      rows.forEach(function(r){b.appendChild(r);});
    });
  });
});
"""


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _fmt(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return "n/a"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return f"{v:.4g}" if (v == 0 or 1e-3 <= abs(v) < 1e6) else f"{v:.4e}"
    if v is None:
        return ""
    return str(v)


def table_html(df: pd.DataFrame, max_rows: int | None = None) -> str:
    """A sortable HTML table (click a header); numbers sort numerically."""
    cols = list(df.columns)
    text_cols = {c for c in cols if df[c].dtype == object}
    head = "".join(f'<th class="{"txt" if c in text_cols else ""}">{_esc(c)}</th>' for c in cols)
    body = []
    frame = df if max_rows is None else df.head(max_rows)
    for row in frame.itertuples(index=False):
        cells = []
        for c, v in zip(cols, row, strict=True):
            raw = "" if v is None else (repr(float(v)) if isinstance(v, (float, np.floating))
                                        else str(v))
            cls = ' class="txt"' if c in text_cols else ""
            cells.append(f'<td{cls} data-v="{_esc(raw)}">{_esc(_fmt(v))}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    note = ""
    if max_rows is not None and len(df) > max_rows:
        note = (f'<p class="note">First {max_rows} of {len(df)} rows; the full table is in '
                "the CSV next to this report.</p>")
    return (f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>'
            + "".join(body) + "</tbody></table>" + note)


def figure_html(fig: Figure) -> str:
    """A figure as an embedded base64 PNG."""
    data = base64.b64encode(Path(fig.png).read_bytes()).decode("ascii")
    return (f'<figure id="fig-{_esc(fig.name)}"><img alt="{_esc(fig.title)}" '
            f'src="data:image/png;base64,{data}"><figcaption><b>{_esc(fig.title)}.</b> '
            f"{_esc(fig.caption)} (Vector version: figures/{_esc(Path(fig.vector).name)}.)"
            "</figcaption></figure>")


def page(title: str, sections: Sequence[str]) -> str:
    """The whole HTML document."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_esc(title)}</h1>" + "\n".join(sections)
        + f'<p class="note">specbound {_esc(__version__)}. Formulas: SPEC.md.</p>'
        + f"<script>{_JS}</script></body></html>\n"
    )


def _bound_text(b: Any) -> str:
    v = b.value
    value = f"{v:.4g}" if v is not None else "&gt; 1.8e308"
    return f"{value} (log10 {b.log10:.3f})"


def answer_html(a: Analysis) -> str:
    """The opening paragraph for one model: proxies, dominant matrices, chosen p, in words."""
    from .summary import explain_p

    d, s = a.details, a.spectra
    c = np.exp(d.log_contribution - np.max(d.log_contribution)) if len(s) else np.zeros(0)
    total = float(c.sum()) or 1.0
    by_type = {name: float(c[s.matrix_type == t].sum()) / total
               for t, name in enumerate(MATRIX_TYPES)}
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
        lines.append(f" The largest single term is {MATRIX_TYPES[int(s.matrix_type[top])]} "
                     f"({where}), p* = {d.p_star[top]:.3g}.")
    lines.append("</p>")
    used, counts = np.unique(d.p_star, return_counts=True)
    dist = ", ".join(f"p = {p:.3g}: {n}" for p, n in zip(used, counts, strict=True))
    lines.append(f"<p><b>Which p they chose:</b> {_esc(dist)} (of {len(s)} matrices; grid m = "
                 f"{a.grid_m}, p in {{0, 1/m, ..., 2}}). {_esc(explain_p(d.p_star))} "
                 "At p = 0 a matrix is charged sqrt(rank x N), independent of its norms and of "
                 "the depth factor alpha; at p = 2 it is charged through its Frobenius norm "
                 "times its scale; in between, large singular values are charged more than small "
                 "ones.</p>")
    alpha0 = float(d.log_alpha[0] / np.log(10.0)) if d.log_alpha.size else 0.0
    lines.append(f"<p>Depth factor: log10 alpha(0) = {alpha0:.2f}. Model: "
                 f"{_esc(a.spec.architecture)}, L = {a.spec.num_layers}, "
                 f"N = {a.spec.hidden_size}, H = {a.spec.num_heads}, "
                 f"F = {a.spec.intermediate_size}.</p>")
    for note in a.adaptations:
        lines.append(f'<p class="note">Adaptation: {_esc(note)}</p>')
    lines.append("</div>")
    return "".join(lines)


def analysis_sections(a: Analysis, figs: Sequence[Figure]) -> list[str]:
    """Answer, figures, tables for one model."""
    mats = a.matrices
    top = mats.sort_values("log10_contribution", ascending=False)
    return [
        answer_html(a),
        "<h2>Figures</h2>" + "".join(figure_html(f) for f in figs),
        "<h2>Per layer</h2>" + table_html(a.layers),
        "<h2>Matrices (largest contributions first)</h2>" + table_html(top, max_rows=200),
    ]


def write_analysis_report(analysis: Analysis, out_dir: str | Path) -> Path:
    """Write figures/ and report.html for one model into ``out_dir`` (atomically)."""
    from . import plots
    from .io import atomic_dir

    plots.require_matplotlib()
    with atomic_dir(out_dir) as tmp:
        figs = plots.analysis_figures(analysis, tmp / "figures")
        html_text = page(f"specbound report: {analysis.model}", analysis_sections(analysis, figs))
        (tmp / "report.html").write_text(html_text, encoding="utf-8")
    return Path(out_dir) / "report.html"


def _growth_sentence(growth: pd.DataFrame, axis: str) -> str:
    pooled = growth[(growth["axis"] == axis) & (growth["fit"] == "pooled")]
    if pooled.empty:
        return ""
    sym = "N" if axis == "hidden_size" else "L"
    vals = {}
    for r in pooled.itertuples():
        vals[r.proxy] = r
    if set(vals) != {"spectrum_adaptive", "norm_based"}:
        return ""
    sa, nb = vals["spectrum_adaptive"], vals["norm_based"]

    def pm(v: float, se: float) -> str:
        return f"{v:.3g}" + (f" &plusmn; {se:.2g}" if np.isfinite(se) else "")

    if axis == "hidden_size":
        slower = sa.exponent < nb.exponent
        return (f"<p><b>Against {sym}</b> (at fixed L, pooled over {sa.n_points} models): "
                f"B grows like {sym}^exponent with exponent {pm(sa.exponent, sa.exponent_se)} "
                f"(spectrum-adaptive) vs {pm(nb.exponent, nb.exponent_se)} (norm-based): the "
                f"spectrum-adaptive proxy grows <b>{'more slowly' if slower else 'faster'}</b>."
                "</p>")
    slower = sa.log10_per_unit < nb.log10_per_unit
    return (f"<p><b>Against {sym}</b> (at fixed N, pooled over {sa.n_points} models): log10 B "
            f"rises by {pm(sa.log10_per_unit, sa.log10_per_unit_se)} per layer "
            f"(spectrum-adaptive) vs {pm(nb.log10_per_unit, nb.log10_per_unit_se)} "
            f"(norm-based); log-log exponents {pm(sa.exponent, sa.exponent_se)} vs "
            f"{pm(nb.exponent, nb.exponent_se)}: the spectrum-adaptive proxy grows "
            f"<b>{'more slowly' if slower else 'faster'}</b>.</p>")


def study_answer_html(study: Study) -> str:
    """The opening paragraph of a study report."""
    m = study.models
    lines = ['<div class="answer">',
             f"<p>{len(m)} models analyzed. "
             f"Spectrum-adaptive proxy: log10 B from {m['spectrum_adaptive_log10'].min():.3f} "
             f"to {m['spectrum_adaptive_log10'].max():.3f}; norm-based: from "
             f"{m['norm_based_log10'].min():.3f} to {m['norm_based_log10'].max():.3f}.</p>"]
    for axis in ("hidden_size", "num_layers"):
        lines.append(_growth_sentence(study.growth, axis))
    if study.growth.empty:
        lines.append("<p>No growth fit: no two models differ in only one of N and L.</p>")
    p0, p2 = float(m["share_p0"].mean()), float(m["share_p2"].mean())
    lines.append(f"<p><b>Which p they chose:</b> on average {p0:.0%} of matrices picked p = 0 "
                 f"(charged sqrt(rank x N), blind to norms and depth factor) and {p2:.0%} picked "
                 "p = 2 (charged by Frobenius norm times scale); the rest sit in between.</p>")
    if study.analyses:
        sa_share: dict[str, float] = dict.fromkeys(MATRIX_TYPES, 0.0)
        for a in study.analyses:
            c = np.exp(a.details.log_contribution - np.max(a.details.log_contribution))
            tot = float(c.sum()) or 1.0
            for t, name in enumerate(MATRIX_TYPES):
                sa_share[name] += float(c[a.spectra.matrix_type == t].sum()) / tot
        n = len(study.analyses)
        ranked = sorted(sa_share.items(), key=lambda kv: -kv[1])
        lines.append("<p><b>Which matrices dominate</b> (mean share of the summed "
                     "contributions): " + _esc(", ".join(f"{k} {v / n:.0%}" for k, v in ranked))
                     + ".</p>")
    if study.missing:
        lines.append(f'<p class="note">Missing ({len(study.missing)}), not analyzed: '
                     + _esc(", ".join(study.missing)) + "</p>")
    lines.append("</div>")
    return "".join(lines)


def write_study_report(study: Study, out_dir: str | Path, figs: Sequence[Figure]) -> Path:
    """Write report.html for a study into ``out_dir`` (figures already there; call it inside
    ``io.atomic_dir``, as ``Study.to_dir`` does)."""
    sections = [
        study_answer_html(study),
        "<h2>Figures</h2>" + "".join(figure_html(f) for f in figs),
        "<h2>Models (models.csv)</h2>" + table_html(study.models),
        "<h2>Growth fits (growth.csv)</h2>"
        '<p class="note">exponent: slope of log10 B on log10 of the axis; log10_per_unit: slope '
        "of log10 B on the axis value. per_fixed: one fit per value of the other axis; pooled: "
        "common slope, one intercept per value of the other axis. Standard errors: OLS "
        "(n/a when there are no residual degrees of freedom).</p>" + table_html(study.growth),
    ]
    path = Path(out_dir) / "report.html"
    path.write_text(page(study.title, sections), encoding="utf-8")
    return path
