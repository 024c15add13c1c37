"""The terminal summary of an Analysis or a Study (rich tables).

Table titles are printed as their own short line (never wrapped into a narrow table), long
paths are shortened, and the closing ``wrote ...`` line lists every file written.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .naming import display_names, short_path
from .spectra import MATRIX_TYPES

if TYPE_CHECKING:
    from .analysis import Analysis


def _fmt_bound(b: Any) -> str:
    v = b.value
    return f"{v:.6g}" if v is not None and math.isfinite(v) else "> 1.8e308"


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
                f" Even in the last layer, where alpha = 1, {int(zero.sum())} of "
                f"{int(last.sum())} matrices picked p = 0: their scale s = gamma x L is "
                f"already {10.0 ** float(log10_s.min()):.3g} or more, so it is the scale, "
                "not only the depth factor, that makes p = 0 win."
            )
    return text


def escape(text: Any) -> str:
    """``text`` safe to print through rich (no markup is interpreted)."""
    from rich.markup import escape as _escape

    return _escape(str(text))


def _console(width: int | None = None) -> Any:
    from rich.console import Console

    return Console(width=width) if width else Console()


def _title(console: Any, text: str) -> None:
    console.print(f"[bold]{text}[/bold]", no_wrap=True, overflow="ellipsis", highlight=False)


def _short(v: float | None, spec: str = ".4g") -> str:
    if v is None or not math.isfinite(v):
        return "undefined" if v is None or math.isnan(v) else "> 1.8e308"
    return format(v, spec)


def print_measures(console: Any, a: Analysis) -> None:
    """name, value and one-line description of every measure; notes below the table."""
    from rich.table import Table

    values = getattr(a, "measures", None)
    if not values:
        return
    try:
        from .measures import MEASURES
    except ImportError:  # pragma: no cover
        MEASURES = {}
    notes = getattr(a, "measure_notes", {}) or {}
    _title(console, "measures")
    t = Table(show_edge=False)
    t.add_column("measure", no_wrap=True)
    t.add_column("value", justify="right", no_wrap=True)
    t.add_column("description", overflow="fold")
    for name, v in values.items():
        m = MEASURES.get(name)
        t.add_row(escape(name), _short(v), escape(m.description) if m is not None else "")
    console.print(t)
    for name, note in notes.items():
        if note:
            console.print(f"  [dim]{escape(name)}:[/dim] {escape(note)}", highlight=False)


def print_summary(
    a: Analysis, out: Path | None = None, report: bool = False, width: int | None = None
) -> None:
    from rich.table import Table

    console = _console(width)
    s = a.spec
    console.print(
        f"[bold]{escape(short_path(a.model, 40))}[/bold]  {s.architecture}  L={s.num_layers} "
        f"N={s.hidden_size} H={s.num_heads} d_h={s.head_dim} F={s.intermediate_size}  "
        f"grid m={a.grid_m} L_phi={a.l_phi:g}" + ("  (spectra from cache)" if a.from_cache else ""),
        highlight=False,
    )
    cols = a.layer_columns()
    mats = a.matrix_columns()
    _title(console, "per layer")
    t = Table(show_edge=False)
    for c in ["layer", "log10 alpha", *MATRIX_TYPES, "total", "p*=0", "p*=2"]:
        t.add_column(c, justify="right", no_wrap=True)
    for l in range(s.num_layers):
        t.add_row(
            str(l),
            f"{cols['log10_alpha'][l]:.3f}",
            *[f"{cols[f'contribution_{m}'][l]:.4g}" for m in MATRIX_TYPES],
            f"{cols['contribution_total'][l]:.4g}",
            str(cols["n_p0"][l]),
            str(cols["n_p2"][l]),
        )
    console.print(t)

    grid = a.details.grid
    used = np.unique(a.details.p_star)
    _title(console, "p* picked, by matrix type (count)")
    pt = Table(show_edge=False)
    pt.add_column("type", no_wrap=True)
    for p in used:
        pt.add_column(f"p={p:.3g}", justify="right", no_wrap=True)
    for m in MATRIX_TYPES:
        sel = mats["matrix_type"] == m
        pt.add_row(m, *[str(int(np.sum(a.details.p_star[sel] == p))) for p in used])
    console.print(pt)
    console.print(
        escape(explain_p(a.details.p_star, a)) + f" Grid: {grid.size} points in [0, 2].",
        highlight=False,
    )

    order = np.argsort(-a.details.log_contribution, kind="stable")[:5]
    _title(console, "largest contributions")
    tt = Table(show_edge=False)
    for c in ["layer", "head", "type", "p*", "contribution", "rank", "spectral norm"]:
        tt.add_column(c, justify="right", no_wrap=True)
    for i in order:
        tt.add_row(
            str(mats["layer"][i]),
            str(mats["head"][i]) if mats["head"][i] >= 0 else "",
            mats["matrix_type"][i],
            f"{mats['p_star'][i]:.3g}",
            f"{mats['contribution'][i]:.4g}",
            str(mats["rank"][i]),
            f"{mats['spectral_norm'][i]:.4g}",
        )
    console.print(tt)

    b = a.bounds
    _title(console, "bounds")
    bt = Table(show_edge=False)
    for c in ["proxy", "value", "log10"]:
        bt.add_column(c, justify="right", no_wrap=True)
    bt.add_row(
        "spectrum_adaptive", _fmt_bound(b.spectrum_adaptive), f"{b.spectrum_adaptive.log10:.4f}"
    )
    bt.add_row("norm_based", _fmt_bound(b.norm_based), f"{b.norm_based.log10:.4f}")
    console.print(bt)
    print_measures(console, a)
    for note in a.adaptations:
        console.print(f"[yellow]adaptation:[/yellow] {escape(note)}", highlight=False)
    if out is not None:
        weights_csv = " weights.csv," if a.weight_spectra is not None else ""
        files = f"summary.json, matrices.csv, layers.csv,{weights_csv} spectra.npz"
        if report:
            files += ", report.html, figures/"
        console.print(f"wrote {escape(short_path(out, 40))}/: {files}", highlight=False)


def print_study(
    study: Any, out: Path | None = None, report: bool = True, width: int | None = None
) -> None:
    """The models table (one column per measure), the pooled growth fits and the verdict."""
    from rich.table import Table

    from .verdict import AXIS_SYMBOL, growth_verdict

    console = _console(width)
    m = study.models
    names = display_names(list(m["model"].astype(str))) if len(m) else []
    try:
        from .measures import measure_names

        registered = measure_names()
    except ImportError:  # pragma: no cover
        registered = []
    measure_cols = [
        (c, n)
        for n in registered
        for c in (n, f"{n}_log10")
        if c in m.columns and m[c].notna().any()
    ]  # skip undefined everywhere
    # as many measure columns as the terminal fits (SPEC 9 order: the two bounds first)
    room = max(2, (console.width - 16 - min(28, max((len(x) for x in names), default=5))) // 12)
    shown_cols = measure_cols[:room]
    title = f"models ({len(m)})"
    if len(shown_cols) < len(measure_cols):
        title += f", {len(shown_cols)} of {len(measure_cols)} measures (all in models.csv)"
    measure_cols = shown_cols
    _title(console, title)
    t = Table(show_edge=False)
    t.add_column("model", overflow="fold", max_width=28)
    for c in ["L", "N"]:
        t.add_column(c, justify="right", no_wrap=True)
    short = {"spectrum_adaptive": "B_sa", "norm_based": "B_nb"}
    for _c, n in measure_cols:
        t.add_column(short.get(n, n.replace("_", " ")), justify="right", overflow="fold")
    for c in ("share_p0", "share_p2"):
        if c in m.columns:
            t.add_column("p*=" + c[-1], justify="right", no_wrap=True)
    for name, r in zip(names, m.to_dict("records"), strict=True):
        row = [escape(name), str(r["num_layers"]), str(r["hidden_size"])]
        row += [_short(None if r[c] is None else float(r[c])) for c, _n in measure_cols]
        row += [f"{r[c]:.0%}" for c in ("share_p0", "share_p2") if c in m.columns]
        t.add_row(*row)
    console.print(t)
    g = study.growth
    name_col = "measure" if "measure" in g.columns else "proxy"
    pooled = g[(g["fit"] == "pooled")] if len(g) else g
    if len(pooled):
        _title(console, "growth, pooled fits (growth.csv)")
        gt = Table(show_edge=False)
        for c in ["measure", "axis", "exponent", "SE", "log10/unit", "SE", "n"]:
            gt.add_column(
                c,
                justify="left" if c == "measure" else "right",
                no_wrap=c != "measure",
                overflow="fold" if c == "measure" else "ellipsis",
            )
        for r in pooled.to_dict("records"):
            gt.add_row(
                escape(str(r[name_col])),
                AXIS_SYMBOL.get(r["axis"], r["axis"]),
                _short(r["exponent"]),
                _short(r["exponent_se"], ".2g"),
                _short(r["log10_per_unit"]),
                _short(r["log10_per_unit_se"], ".2g"),
                str(r["n_points"]),
            )
        console.print(gt)
    for axis in ("hidden_size", "num_layers"):
        v = growth_verdict(g, axis) if len(g) else None
        if v is not None:
            console.print(
                f"[bold]against {AXIS_SYMBOL[axis]}:[/bold] {escape(v.sentence)}", highlight=False
            )
            for note in v.interaction:
                console.print(f"  [yellow]{escape(note)}[/yellow]", highlight=False)
    if out is not None:
        files = "models.csv, growth.csv"
        if getattr(study, "skipped", None):
            files += ", skipped.csv"
        if report:
            files += ", report.html, figures/"
        console.print(f"wrote {escape(short_path(out, 40))}/: {files}", highlight=False)
