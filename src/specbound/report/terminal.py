"""Every rich table specbound prints on a terminal: the analysis summary, the study summary and
the correlation table of ``correlate``.

Rules: the answer comes first: the numbers, then what they mean in plain words with their caveats
and where the columns are explained (``print_bounds``), then the details; table titles are their
own short line (never wrapped into a narrow table); long paths are shortened; names (models,
measures) wrap only at their separators (``/``, ``_``, ``-``), never mid-word; at 80 columns
every table keeps its key columns with their values (the correlation table stacks each interval
under its value); every column is labelled with its own unit (no label spans columns it does not
fit); the closing ``wrote ...`` line lists every file written.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import MATRIX_TYPES
from ..measures import get_measure, measure_names
from ..measures.powerlaw import MIN_TAIL
from ..naming import display_names, printable, short_path
from ..studies.scale.verdict import AXIS_SYMBOL, growth_verdict
from .numbers import BEYOND, number, spec

if TYPE_CHECKING:
    from ..analysis import Analysis

#: The caveat every bound value carries (SPEC 5/6: leading factors, constants dropped).
PROXY_CAVEAT = "proxies: leading factors with constants dropped, not bounds on the test error"


def _fmt_bound(b: Any) -> str:
    """A bound's value, always in one format (scientific, 5 significant digits); a value
    beyond float64 (None or inf) as :data:`.numbers.BEYOND`."""
    return BEYOND if b.value is None else spec(b.value, ".4e")


def _fixed(v: float, decimals: int) -> str:
    """``v`` with thousands separators and ``decimals`` decimals (scientific from 1e12 on);
    undefined and beyond float64 as :func:`.numbers.number` writes them."""
    return number(v, lambda f: f"{f:.4e}" if abs(f) >= 1e12 else f"{f + 0.0:,.{decimals}f}")


def explain_p(p_star: np.ndarray, analysis: Analysis | None = None) -> str:
    """What the chosen p say, in a sentence or two (SPEC 4: c(A, 0) = sqrt(r N) does not see
    the singular values; c(A, 2) = (||A||_F s)^(1/2) N^(3/4); p = 0 wins when s is large)."""
    p_star = np.asarray(p_star)
    share0 = float(np.mean(p_star == 0)) if p_star.size else 0.0
    share2 = float(np.mean(p_star == 2)) if p_star.size else 0.0
    if share0 == 1.0:
        text = (
            "Every matrix picked p = 0, so the proxy no longer depends on the trained "
            "singular values, only on the ranks: it is the sum of sqrt(rank x N) plus "
            "sqrt(L)."
        )
    elif share2 == 1.0:
        text = (
            "Every matrix picked p = 2: each is charged (||A||_F x s)^(1/2) x N^(3/4), "
            "through its Frobenius norm and its scale s."
        )
    else:
        text = (
            f"{share0:.0%} of matrices picked p = 0 (charged by rank only), {share2:.0%} "
            "p = 2 (charged (||A||_F x s)^(1/2) x N^(3/4)); the rest trade rank against "
            "singular values."
        )
    if analysis is not None and p_star.size:
        s, d = analysis.spectra, analysis.details
        last = s.layer == analysis.spec.num_layers - 1
        zero = last & (p_star == 0)
        if zero.any():
            log10_s = d.log_scale[zero] / math.log(10.0)
            text += (
                f" Even in the last layer, where depth_factor = 1, {int(zero.sum())} of "
                f"{int(last.sum())} matrices picked p = 0: their scale s = gamma x L is "
                f"already {10.0 ** float(log10_s.min()):.3g} or more, so it is the scale, "
                "not only the depth factor, that makes p = 0 win."
            )
    return text


def meaning_line(a: Analysis) -> str:
    """What the bounds mean for this model, in one line printed right under them: SPEC 10's
    rank-ceiling diagnosis (how many matrices picked p* = 0, and the ceiling gap: log10 of the
    rank ceiling minus log10 of the spectrum-adaptive proxy, in decades; 0 means the proxy is
    the ceiling) and SPEC 4's smallest adaptive headroom (> 0: even the matrix closest to using
    its spectrum picks p* = 0)."""
    p = np.asarray(a.details.p_star)
    n = int(p.size)
    k = int(np.sum(p == 0))
    gap = getattr(a, "spectrum_adaptive_ceiling_gap", None)
    finite_gap = gap is not None and math.isfinite(gap)
    share = f" ({k / n:.0%})" if n else ""
    text = f"meaning: {k} of {n} matrices{share} at p* = 0, ceiling gap "
    text += f"{gap:.3g} decades" if finite_gap else "undefined"
    if n and k == n:
        text += ": spectrum_adaptive is its rank ceiling, blind to the trained spectra"
    elif finite_gap:
        text += ": spectrum_adaptive sees the trained singular values"
    h = getattr(a, "adaptive_headroom_min", None)
    if h is not None and math.isfinite(h):
        text += f"; min adaptive headroom {h:.3g} decades"
    return text


#: Where the columns of the tables are explained (``analyze --help`` prints the glossary).
GLOSSARY_POINTER = "glossary (p*, depth_factor, headroom, gamma x L, OV): specbound analyze --help"


def shown(text: Any) -> str:
    """``text`` safe to print through rich: no markup is interpreted, and control characters
    (ANSI escapes in a model path) are shown escaped (:func:`specbound.naming.printable`)."""
    from rich.markup import escape as _rich_markup_safe

    return _rich_markup_safe(printable(text, layout=True))


def wrap_name(name: str, width: int) -> str:
    """``name`` on lines of at most ``width`` characters, broken only after ``/``, ``_``, ``-``
    or spaces (never mid-word); a single piece longer than ``width`` stays whole. Control
    characters of ``name`` itself are escaped first (:func:`specbound.naming.printable`): the
    only line breaks are the ones made here."""
    name = printable(name)
    if width <= 0 or len(name) <= width:
        return name
    pieces = [p for p in re.split(r"(?<=[/_\- ])", name) if p]
    lines: list[str] = []
    line = ""
    for piece in pieces:
        if line and len(line) + len(piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += piece
    if line:
        lines.append(line.rstrip())
    return "\n".join(lines)


def make_console(width: int | None = None) -> Any:
    from rich.console import Console

    return Console(width=width) if width else Console()


def print_title(console: Any, text: str) -> None:
    console.print(f"[bold]{text}[/bold]", no_wrap=True, overflow="ellipsis", highlight=False)


def _short(v: float | None, spec_: str = ".4g") -> str:
    """A measure's value: a whole number (a count) with thousands separators, else ``spec``
    (undefined and beyond float64 as :func:`.numbers.number` writes them)."""
    return number(
        v, lambda f: f"{int(f):,}" if f.is_integer() and abs(f) < 1e15 else format(f, spec_)
    )


def print_measures(console: Any, a: Analysis) -> None:
    """name, value and one-line description of every measure; notes below the table."""
    from rich.table import Table

    values = getattr(a, "measures", None)
    if not values:
        return
    notes = getattr(a, "measure_notes", {}) or {}
    print_title(console, "measures")
    t = Table(show_edge=False)
    t.add_column("measure", no_wrap=True)
    t.add_column("value", justify="right", no_wrap=True)
    t.add_column("description", overflow="fold")
    registered = set(measure_names())
    for name, v in values.items():
        text = get_measure(name).description if name in registered else ""
        t.add_row(shown(name), _short(v), shown(text))
    console.print(t)
    for name, note in notes.items():
        if note:
            console.print(f"  [dim]{shown(name)}:[/dim] {shown(note)}", highlight=False)


def htsr_fit_sentence(a: Analysis) -> str | None:
    """How many power-law fits are ok, short_tail, poor, and the ok-only mean of htsr_alpha
    (None without raw-weight fits)."""
    if getattr(a, "weight_spectra", None) is None:
        return None
    h = a.htsr_fit_summary()
    n = int(h["htsr_fits"] or 0)
    if not n:
        return None
    ok, short, poor = (int(h[f"htsr_fits_{v}"] or 0) for v in ("ok", "short_tail", "poor"))
    text = f"HTSR fits: {ok} of {n} ok, {short} short_tail (tail < {MIN_TAIL}), {poor} poor."
    if ok < n:
        mean_ok = h["htsr_alpha_ok"]
        over = spec(mean_ok, ".4g")
        text += (
            f" htsr_alpha over the {h['htsr_alpha_fits_used']} ok fits: {over} "
            "(htsr_alpha_ok); the measure above averages every defined fit (SPEC 9). Do not "
            "read a failed fit's alpha as a finding (weights.csv: htsr_fit, htsr_fit_reason)."
        )
    return text


def print_htsr_fits(console: Any, a: Analysis) -> None:
    """The fit-quality line under the measures and the failed fits (at most 8 rows)."""
    from rich.table import Table

    text = htsr_fit_sentence(a)
    if text is None:
        return
    console.print(shown(text), highlight=False)
    cols = a.weight_columns()
    bad = [i for i, v in enumerate(cols["htsr_fit"]) if v != "ok"]
    if not bad:
        return
    print_title(console, "power-law fits not to trust")
    t = Table(show_edge=False)
    for c in ("layer", "role", "htsr_alpha", "tail", "fit", "reason"):
        t.add_column(c, justify="left" if c in ("role", "fit", "reason") else "right")
    for i in bad[:8]:
        al = cols["htsr_alpha"][i]
        tail = cols["htsr_num_tail"][i]
        t.add_row(
            str(int(cols["layer"][i])),
            shown(cols["role"][i]),
            spec(al, ".3g"),
            "" if tail is None else str(tail),
            shown(cols["htsr_fit"][i]),
            shown(cols["htsr_fit_reason"][i]),
        )
    console.print(t)
    if len(bad) > 8:
        console.print(f"  ... and {len(bad) - 8} more in weights.csv", highlight=False)


def print_headroom(console: Any, a: Analysis, layer_cols: dict[str, np.ndarray]) -> None:
    """The adaptive headroom (SPEC 4) per layer and matrix type (smallest over heads, decades)
    and its sentence; nothing when no matrix has one."""
    from rich import box
    from rich.table import Table

    sentence = a.headroom_sentence()
    if sentence is None:
        return
    print_title(console, "adaptive headroom (decades; > 0: p* = 0), smallest per layer and type")
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    for c in ["layer", *MATRIX_TYPES]:
        t.add_column(c, justify="right", no_wrap=True)
    for l in range(a.spec.num_layers):
        vals = [float(layer_cols[f"adaptive_headroom_min_{m}"][l]) for m in MATRIX_TYPES]
        t.add_row(str(l), *[f"{v:.3g}" if math.isfinite(v) else "undefined" for v in vals])
    console.print(t)
    console.print(shown(sentence), highlight=False)


def print_bounds(console: Any, a: Analysis) -> None:
    """The two proxies (value and log10 of the value), then the line on what they mean
    (:func:`meaning_line`), the caveat and where the columns are explained."""
    from rich.table import Table

    b = a.bounds
    print_title(console, "bounds")
    bt = Table(show_edge=False)
    for c in ["proxy", "value", "log10(value)"]:
        bt.add_column(c, justify="right", no_wrap=True)
    bt.add_row(
        "spectrum_adaptive", _fmt_bound(b.spectrum_adaptive), spec(b.spectrum_adaptive.log10, ".4f")
    )
    bt.add_row("norm_based", _fmt_bound(b.norm_based), spec(b.norm_based.log10, ".4f"))
    console.print(bt)
    console.print(f"[bold]{shown(meaning_line(a))}[/bold]", highlight=False)
    console.print(f"[dim]{shown(PROXY_CAVEAT)}[/dim]", highlight=False)
    console.print(f"[dim]{shown(GLOSSARY_POINTER)}[/dim]", highlight=False)


def print_summary(
    a: Analysis, out: Path | None = None, report: bool = False, width: int | None = None
) -> None:
    """The terminal summary of ``analyze``: the model line, the bounds with the line on what
    they mean (:func:`print_bounds`), then the details: the per-layer table, the p* counts, the
    headroom, the largest contributions and the measures."""
    from rich import box
    from rich.table import Table

    console = make_console(width)
    s = a.spec
    console.print(
        f"[bold]{shown(short_path(a.model, 40))}[/bold]  {s.architecture}  L={s.num_layers} "
        f"N={s.hidden_size} H={s.num_heads} d_h={s.head_dim} F={s.intermediate_size}  "
        f"grid m={a.grid_m} L_phi={a.l_phi:g}" + ("  (spectra from cache)" if a.from_cache else ""),
        highlight=False,
    )
    print_bounds(console, a)
    cols = a.layer_columns()
    mats = a.matrix_columns()
    depth = cols["log10_depth_factor"] if "log10_depth_factor" in cols else cols["log10_alpha"]
    print_title(console, "per layer: depth factor, contributions by matrix type, p* counts")
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    headers = ["layer", "depth_factor\n(log10)", *MATRIX_TYPES, "total", "p*=0\n(n)", "p*=2\n(n)"]
    for c in headers:
        t.add_column(c, justify="right", no_wrap=True)
    for l in range(s.num_layers):
        t.add_row(
            str(l),
            f"{depth[l]:.3f}",
            *[_fixed(float(cols[f"contribution_{m}"][l]), 1) for m in MATRIX_TYPES],
            _fixed(float(cols["contribution_total"][l]), 1),
            str(cols["n_p0"][l]),
            str(cols["n_p2"][l]),
        )
    console.print(t)

    grid = a.details.grid
    used = np.unique(a.details.p_star)
    print_title(console, "p* picked, by matrix type (count)")
    pt = Table(show_edge=False)
    pt.add_column("type", no_wrap=True)
    for p in used:
        pt.add_column(f"p={p:.3g}", justify="right", no_wrap=True)
    for m in MATRIX_TYPES:
        sel = mats["matrix_type"] == m
        pt.add_row(m, *[str(int(np.sum(a.details.p_star[sel] == p))) for p in used])
    console.print(pt)
    console.print(
        shown(explain_p(a.details.p_star, a)) + f" Grid: {grid.size} points in [0, 2].",
        highlight=False,
    )

    print_headroom(console, a, cols)

    order = np.argsort(-a.details.log_contribution, kind="stable")[:5]
    print_title(console, "largest contributions")
    tt = Table(show_edge=False)
    for c in ["layer", "head", "type", "p*", "contribution", "rank", "spectral norm"]:
        tt.add_column(c, justify="right", no_wrap=True)
    for i in order:
        tt.add_row(
            str(mats["layer"][i]),
            str(mats["head"][i]) if mats["head"][i] >= 0 else "",
            mats["matrix_type"][i],
            f"{mats['p_star'][i]:.3g}",
            _fixed(float(mats["contribution"][i]), 1),
            "undefined" if mats["rank"][i] is None else f"{int(mats['rank'][i]):,}",
            _fixed(float(mats["spectral_norm"][i]), 3),
        )
    console.print(tt)

    print_measures(console, a)
    print_htsr_fits(console, a)
    for note in a.adaptations:
        console.print(f"[yellow]adaptation:[/yellow] {shown(note)}", highlight=False)
    if out is not None:
        weights_csv = " weights.csv," if a.weight_spectra is not None else ""
        files = f"summary.json, matrices.csv, layers.csv,{weights_csv} spectra.npz"
        if report:
            files += ", report.html, figures/"
        console.print(f"wrote {shown(short_path(out, 40))}/: {files}", highlight=False)


#: Short column labels of the study's models table.
SHORT_LABELS = {"spectrum_adaptive": "B_sa", "norm_based": "B_nb"}
SHARE_COLUMNS = ("share_p0", "share_p2")


def study_measure_columns(m: Any, room: int) -> tuple[list[tuple[str, str]], str]:
    """(the (column, measure) pairs of models.csv the models table shows, at most ``room`` in
    SPEC 9 order (the two bounds first), measures undefined everywhere left out; the table's
    title, saying how many measures it leaves to models.csv)."""
    measure_cols = [
        (c, n)
        for n in measure_names()
        for c in (n, f"{n}_log10")
        if c in m.columns and m[c].notna().any()
    ]
    shown_cols = measure_cols[:room]
    title = f"models ({len(m)})"
    if len(shown_cols) < len(measure_cols):
        title += f", {len(shown_cols)} of {len(measure_cols)} measures (all in models.csv)"
    return shown_cols, title


def print_study_models(console: Any, m: Any) -> None:
    """The models table: name, L, N, as many measures as the terminal fits, the p* shares."""
    from rich.table import Table

    names = display_names(list(m["model"].astype(str))) if len(m) else []
    name_width = min(28, max((len(x) for x in names), default=5))
    measure_cols, title = study_measure_columns(m, max(2, (console.width - 16 - name_width) // 12))
    shares = [c for c in SHARE_COLUMNS if c in m.columns]
    print_title(console, title)
    t = Table(show_edge=False)
    t.add_column("model", no_wrap=True)
    for c in ["L", "N"]:
        t.add_column(c, justify="right", no_wrap=True)
    for _c, n in measure_cols:
        t.add_column(SHORT_LABELS.get(n, n.replace("_", " ")), justify="right", overflow="fold")
    for c in shares:
        t.add_column("p*=" + c[-1], justify="right", no_wrap=True)
    for name, r in zip(names, m.to_dict("records"), strict=True):
        row = [shown(wrap_name(name, name_width)), str(r["num_layers"]), str(r["hidden_size"])]
        row += [_short(None if r[c] is None else float(r[c])) for c, _n in measure_cols]
        row += [f"{r[c]:.0%}" for c in shares]
        t.add_row(*row)
    console.print(t)


def print_growth_fits(console: Any, g: Any) -> None:
    """growth.csv's pooled fits (exponent and log10 per unit with their SEs); nothing
    without any."""
    from rich.table import Table

    name_col = "measure" if "measure" in g.columns else "proxy"
    pooled = g[(g["fit"] == "pooled")] if len(g) else g
    if not len(pooled):
        return
    print_title(console, "growth, pooled fits (growth.csv)")
    gt = Table(show_edge=False)
    for c in ["measure", "axis", "exponent", "SE", "log10/unit", "SE", "n"]:
        gt.add_column(
            c,
            justify="left" if c == "measure" else "right",
            no_wrap=True,
            overflow="ellipsis",
        )
    for r in pooled.to_dict("records"):
        gt.add_row(
            shown(wrap_name(str(r[name_col]), 20)),
            AXIS_SYMBOL.get(r["axis"], r["axis"]),
            _short(r["exponent"]),
            _short(r["exponent_se"], ".2g"),
            _short(r["log10_per_unit"]),
            _short(r["log10_per_unit_se"], ".2g"),
            str(r["n_points"]),
        )
    console.print(gt)


def print_growth_verdicts(console: Any, g: Any) -> None:
    """``verdict.growth_verdict``'s sentence and interaction notes, per axis that has one."""
    for axis in ("hidden_size", "num_layers"):
        v = growth_verdict(g, axis) if len(g) else None
        if v is not None:
            console.print(
                f"[bold]against {AXIS_SYMBOL[axis]}:[/bold] {shown(v.sentence)}", highlight=False
            )
            for note in v.interaction:
                console.print(f"  [yellow]{shown(note)}[/yellow]", highlight=False)


def print_study(
    study: Any, out: Path | None = None, report: bool = True, width: int | None = None
) -> None:
    """The models table (one column per measure), the pooled growth fits and the verdict."""
    console = make_console(width)
    print_study_models(console, study.models)
    print_growth_fits(console, study.growth)
    print_growth_verdicts(console, study.growth)
    if out is not None:
        files = "models.csv, growth.csv"
        if getattr(study, "skipped", None):
            files += ", skipped.csv"
        if report:
            files += ", report.html, figures/"
        console.print(f"wrote {shown(short_path(out, 40))}/: {files}", highlight=False)
