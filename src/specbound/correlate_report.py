"""Output of ``specbound correlate``: CSVs, figures and a self-contained report.html.

Rendering only: everything shown comes from a ``Correlation`` (``studies.correlate``). The page
opens with the answer (which measure ranks the zoo best by Psi and by tau, whether its interval
separates it from the others, where each measure fails), then the figures, then the tables.
"""

from __future__ import annotations

import base64
import contextlib
import html as _html
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .studies.correlate import Correlation

#: The trivial baselines of SPEC 10: what a measure must beat to add anything.
BASELINES = ("sample_size_only", "num_parameters", "num_parameters_per_sqrt_n")
_EXTRA_CSS = (
    ".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(330px,1fr));gap:.6em}"
    ".grid figure{margin:.2em 0}.bad{color:#a4262c}"
)


def _esc(x: Any) -> str:
    return _html.escape(str(x), quote=True)


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _f(v: Any, digits: int = 3) -> str:
    x = _float(v)
    return "undefined" if math.isnan(x) else f"{x:.{digits}f}"


def _interval(lo: Any, hi: Any) -> str:
    lo, hi = _float(lo), _float(hi)
    if math.isnan(lo) or math.isnan(hi):
        return "no interval"
    return f"95% [{lo:.3f}, {hi:.3f}]"


@contextlib.contextmanager
def _out_dir(path: str | Path) -> Iterator[Path]:
    """The shared atomic output-directory helper of ``specbound.io``."""
    from .io import output_dir

    with output_dir(path) as tmp:
        yield Path(tmp)


# --- figures --------------------------------------------------------------------------------


def _save_png(fig: Any, path: Path) -> Path:
    from .plots import DPI, require_matplotlib

    plt = require_matplotlib()
    try:
        fig.savefig(path, format="png", dpi=DPI, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


def color_axis(row: Any, axes: list[str]) -> str | None:
    """The axis with the largest |psi_i| of a correlation row (None when no psi_i is defined)."""
    best, best_axis = -1.0, None
    for a in axes:
        v = _float(row.get(f"psi_{a}"))
        if not math.isnan(v) and abs(v) > best:
            best, best_axis = abs(v), a
    return best_axis


def measure_figure(result: Correlation, measure: str, out_dir: Path) -> Path:
    """The measure against the gap, coloured by the axis with the largest |psi_i|."""
    import pandas as pd

    from .plots import require_matplotlib

    plt = require_matplotlib()
    m = result.models
    row = result.correlation.set_index("measure").loc[measure]
    axis = color_axis(row.to_dict(), result.axes)
    x = pd.to_numeric(m[measure], errors="coerce").to_numpy(float)
    y = m["gap"].to_numpy(float)
    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    if axis is None:
        ax.scatter(x, y, s=22, color="#3b6fb6")
    else:
        codes, values = pd.factorize(m[axis], sort=True, use_na_sentinel=False)
        cmap = plt.get_cmap("tab10" if len(values) <= 10 else "viridis")
        for k, v in enumerate(values):
            sel = codes == k
            color = cmap(k if len(values) <= 10 else k / max(len(values) - 1, 1))
            ax.scatter(x[sel], y[sel], s=22, color=color, label=f"{axis}={v}")
        if len(values) <= 10:
            ax.legend(fontsize=7, loc="best", frameon=False)
        else:
            ax.text(
                0.01,
                0.99,
                f"colour: {axis}, dark = low, light = high",
                fontsize=7,
                transform=ax.transAxes,
                va="top",
            )
    ax.set_xlabel(measure)
    ax.set_ylabel(f"gap ({result.gap})")
    ax.set_title(f"{measure}: tau={_f(row['kendall_tau'], 2)}, Psi={_f(row['psi'], 2)}", fontsize=9)
    ax.grid(alpha=0.3)
    return _save_png(fig, out_dir / f"measure_{measure}.png")


def tau_psi_figure(result: Correlation, out_dir: Path) -> Path:
    """tau and Psi of every measure with their bootstrap intervals, side by side."""
    from .plots import require_matplotlib

    plt = require_matplotlib()
    c = result.correlation
    names = list(c["measure"])
    y = np.arange(len(names))[::-1]
    fig, axs = plt.subplots(1, 2, figsize=(9.5, 0.34 * len(names) + 1.4), sharey=True)
    for ax, (col, lo, hi, label) in zip(
        axs,
        [
            ("kendall_tau", "tau_low", "tau_high", "Kendall tau"),
            ("psi", "psi_low", "psi_high", "granulated Psi"),
        ],
        strict=True,
    ):
        v = c[col].to_numpy(float)
        lo_v, hi_v = c[lo].to_numpy(float), c[hi].to_numpy(float)
        err = np.nan_to_num(np.vstack([v - lo_v, hi_v - v]))
        ax.errorbar(v, y, xerr=np.maximum(err, 0), fmt="o", color="#3b6fb6", capsize=3, ms=4)
        ax.axvline(0, color="#888", lw=0.8)
        ax.set_xlabel(label)
        ax.set_xlim(-1.05, 1.05)
        ax.grid(alpha=0.3, axis="x")
    axs[0].set_yticks(y)
    axs[0].set_yticklabels(names, fontsize=8)
    fig.tight_layout()
    return _save_png(fig, out_dir / "tau_psi.png")


# --- html -----------------------------------------------------------------------------------


def _img(path: Path, title: str, caption: str = "") -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (
        f'<figure><img alt="{_esc(title)}" src="data:image/png;base64,{data}">'
        f"<figcaption><b>{_esc(title)}.</b> {_esc(caption)}</figcaption></figure>"
    )


def _overlapping(c: Any, col: str, lo: str, hi: str, best: str) -> list[str]:
    b = c.set_index("measure").loc[best]
    blo, bhi = _float(b[lo]), _float(b[hi])
    out = []
    for r in c.itertuples(index=False):
        d = r._asdict()
        if d["measure"] == best or math.isnan(_float(d[col])):
            continue
        rlo, rhi = _float(d[lo]), _float(d[hi])
        if math.isnan(blo) or math.isnan(rlo) or (rhi >= blo and rlo <= bhi):
            out.append(d["measure"])
    return out


def answer_html(result: Correlation) -> str:
    """The opening paragraph: best measure by Psi and tau, how sure, where each fails."""
    c = result.correlation
    parts = []
    used, listed = len(result.models), result.n_listed
    failed = len(result.skipped) - result.n_unconverged
    zoo = (
        f"{used} of {listed} models used ({failed} failed or had no metrics, "
        f"{result.n_unconverged} unconverged "
        f"{'kept' if result.include_unconverged else 'excluded'}); gap = "
        + (
            "train accuracy − test accuracy"
            if result.gap == "accuracy"
            else "test loss − train loss"
        )
        + f"; axes: {', '.join(result.axes) or 'none'}."
    )
    parts.append(f"<p>{_esc(zoo)}</p>")
    for col, lo, hi, label in [
        ("psi", "psi_low", "psi_high", "granulated Kendall Ψ"),
        ("kendall_tau", "tau_low", "tau_high", "Kendall τ"),
    ]:
        v = c[col].astype(float)
        if v.notna().sum() == 0:
            parts.append(f"<p><b>{label}</b> is undefined for every measure on this zoo.</p>")
            continue
        best = c.loc[v.idxmax()]
        ov = _overlapping(c, col, lo, hi, best["measure"])
        sure = (
            "its interval overlaps those of " + ", ".join(ov) + ": not separable at 95%"
            if ov
            else "its interval lies above every other measure's"
        )
        if math.isnan(_float(best[lo])):
            sure = "no bootstrap interval (--bootstrap 0 or too few models), so no verdict"
        tied = [
            m for m, x in zip(c["measure"], v, strict=True) if m != best["measure"] and x == v.max()
        ]
        tie = f" (tied with {', '.join(tied)})" if tied else ""
        text = (
            f"<p><b>Best by {label}:</b> <code>{_esc(best['measure'])}</code>{_esc(tie)} "
            f"({_f(best[col])}, {_interval(best[lo], best[hi])}); {_esc(sure)}."
        )
        real = c[~c["measure"].isin(BASELINES)]
        rv = real[col].astype(float)
        if best["measure"] in BASELINES and rv.notna().any():
            rb = real.loc[rv.idxmax()]
            text += (
                f" That is a trivial baseline: the best measure beyond model size and "
                f"sample size is <code>{_esc(rb['measure'])}</code> ({_f(rb[col])}, "
                f"{_interval(rb[lo], rb[hi])})."
            )
        parts.append(text + "</p>")
    fails = []
    for r in c.to_dict("records"):
        psis = {a: _float(r.get(f"psi_{a}")) for a in result.axes}
        psis = {a: v for a, v in psis.items() if not math.isnan(v)}
        bits = []
        if psis:
            a = min(psis, key=lambda k: psis[k])
            bits.append(f"worst axis {a} (ψ = {psis[a]:.2f})")
        ser = _float(r["sign_error_robust"])
        if not math.isnan(ser) and ser > 0.5:
            bits.append(
                f'<span class="bad">sign-error {ser:.2f} &gt; 0.5 on '
                f"{_esc(r['sign_error_robust_axis'])}: worse than a coin flip</span>"
            )
        if bits:
            fails.append(f"<li><code>{_esc(r['measure'])}</code>: " + "; ".join(bits) + "</li>")
    if fails:
        parts.append("<p><b>Where each measure fails:</b></p><ul>" + "".join(fails) + "</ul>")
    return '<div class="answer">' + "".join(parts) + "</div>"


def report_html(result: Correlation, figures: list[tuple[Path, str, str]]) -> str:
    """The whole report page, figures embedded."""
    from .report import page, table_html

    title = "Correlation study" + (f": {result.task}" if result.task else "")
    sections = [answer_html(result)]
    if result.notes:
        sections.append('<p class="note">' + "<br>".join(_esc(n) for n in result.notes) + "</p>")
    if figures:
        sections.append("<h2>τ and Ψ of every measure</h2>" + _img(*figures[0]))
        sections.append(
            '<h2>Each measure against the gap</h2><div class="grid">'
            + "".join(_img(*f) for f in figures[1:])
            + "</div>"
        )
    sections.append("<h2>correlation.csv</h2>" + table_html(result.correlation))
    sections.append(
        f"<h2>models.csv ({len(result.models)} models)</h2>"
        + table_html(result.models, max_rows=300)
    )
    if len(result.skipped):
        sections.append(
            f"<h2>skipped.csv ({len(result.skipped)} models)</h2>" + table_html(result.skipped)
        )
    doc = page(title, sections)
    return doc.replace("</style>", _EXTRA_CSS + "</style>", 1)


def write_correlation(result: Correlation, out: str | Path, figures: bool = True) -> Path:
    """Write models.csv, correlation.csv, skipped.csv, correlate.json, figures/ and report.html
    into ``out`` through the shared atomic output directory (all or nothing)."""
    with _out_dir(out) as tmp:
        result.models.to_csv(tmp / "models.csv", index=False, float_format="%.17g")
        result.correlation.to_csv(tmp / "correlation.csv", index=False, float_format="%.17g")
        result.skipped.to_csv(tmp / "skipped.csv", index=False)
        (tmp / "correlate.json").write_text(json.dumps(result.summary(), indent=2) + "\n")
        figs: list[tuple[Path, str, str]] = []
        if figures:
            fig_dir = tmp / "figures"
            fig_dir.mkdir()
            figs.append(
                (
                    tau_psi_figure(result, fig_dir),
                    "Kendall τ and granulated Ψ",
                    "Points: values over all models; bars: 95% bootstrap intervals "
                    f"({result.bootstrap} draws, seed {result.seed}).",
                )
            )
            for m in result.measures:
                row = result.correlation.set_index("measure").loc[m].to_dict()
                axis = color_axis(row, result.axes)
                figs.append(
                    (
                        measure_figure(result, m, fig_dir),
                        m,
                        f"coloured by {axis} (largest |ψ_i|)" if axis else "",
                    )
                )
        (tmp / "report.html").write_text(report_html(result, figs), encoding="utf-8")
    return Path(out)
