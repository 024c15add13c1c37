"""Figures of an analysis and of a scaling study (matplotlib, Agg backend, imported lazily).

Every figure is written as PNG at 200 dpi (embedded in report.html) and SVG with editable text
(``svg.fonttype = 'none'``), each through a temporary file and a rename, so a figure file is
either complete or absent. Figures share one style: 9 inches wide, 11-13 pt text, so that they
stay readable when a 900-px page scales them down. Tick labels are plain numbers (explicit
ticks, no "4x10^0" minor labels); titles never carry a filesystem path.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .errors import SpecboundError
from .naming import display_name
from .spectra import MATRIX_TYPES

if TYPE_CHECKING:
    from .analysis import Analysis
    from .study import Study

PROXY_LABELS = {"spectrum_adaptive": "spectrum-adaptive", "norm_based": "norm-based"}
PROXY_COLORS = {"spectrum_adaptive": "#1f5fa8", "norm_based": "#c0392b"}
DPI = 200
WIDTH = 9.0  # inches; every figure has this width so fonts scale alike in the report
STYLE = {
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 12,
    "axes.titlesize": 13,
    "axes.labelsize": 12,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "legend.fontsize": 11,
    "figure.titlesize": 13,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "savefig.dpi": DPI,
}
SYMBOL = {"hidden_size": "N", "num_layers": "L"}
_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass
class Figure:
    """One saved figure: a stem, a title for the report and its files."""

    name: str
    title: str
    png: Path
    vector: Path
    caption: str = ""


def require_matplotlib() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or a one-line error naming the extra."""
    try:
        import matplotlib
    except ImportError:
        raise SpecboundError(
            "figures and reports need matplotlib; install the plot extra: "
            "pip install 'specbound[plot]'"
        ) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _styled(fn: _F) -> _F:
    """Run a figure function under the house style (fonts, SVG text, dpi)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        plt = require_matplotlib()
        with plt.rc_context(STYLE):
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _atomic_savefig(fig: Any, path: Path, fmt: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fig.savefig(
                fh,
                format=fmt,
                dpi=DPI,
                bbox_inches="tight",
                metadata={"Date": None} if fmt == "svg" else None,
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def save(fig: Any, out_dir: Path, name: str, title: str, caption: str = "") -> Figure:
    """Write ``name``.png and ``name``.svg into ``out_dir`` and close the figure."""
    plt = require_matplotlib()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    png, svg = out_dir / f"{name}.png", out_dir / f"{name}.svg"
    try:
        with plt.rc_context(STYLE):
            _atomic_savefig(fig, png, "png")
            _atomic_savefig(fig, svg, "svg")
    finally:
        plt.close(fig)
    return Figure(name, title, png, svg, caption)


# --- axes helpers ----------------------------------------------------------------------------


def plain_number(v: float) -> str:
    """A tick label: 0.5, 2, 150, 3000; powers of ten beyond 1e5 as 10^k (mathtext)."""
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else ""
    e = math.log10(abs(v))
    exact = abs(e - round(e)) < 1e-9
    if 1e-3 <= abs(v) < 1e4:
        return f"{v:.4g}"
    if exact:
        return ("-" if v < 0 else "") + f"$10^{{{int(round(e))}}}$"
    if 1e4 <= abs(v) < 1e7:
        return f"{v:,.0f}"
    mant, k = f"{v:.1e}".split("e")
    return f"${mant}\\times10^{{{int(k)}}}$"


def log_ticks(lo: float, hi: float, max_ticks: int = 8) -> list[float]:
    """Explicit ticks for a log axis over [lo, hi] (lo > 0): 1-2-5 steps within two decades,
    powers of ten (thinned to at most ``max_ticks``) beyond."""
    lo, hi = float(lo), float(hi)
    if not (lo > 0 and hi >= lo):
        return []
    decades = math.log10(hi / lo) if hi > lo else 0.0
    e0, e1 = math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1
    for mant in ((1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8), (1, 1.5, 2, 3, 5, 7), (1, 2, 5), (1,)):
        if decades > 2.5 and mant != (1,):
            continue
        ticks = [m * 10.0**e for e in range(e0, e1 + 1) for m in mant]
        ticks = [t for t in ticks if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)]
        if 2 <= len(ticks) <= max_ticks:
            return ticks
    ticks = [10.0**e for e in range(e0, e1 + 1) if lo <= 10.0**e <= hi]
    step = max(1, math.ceil(len(ticks) / max_ticks))
    ticks = ticks[::step]
    if len(ticks) < 2:
        ticks = sorted({lo, hi})
    return ticks


def plain_log_axis(ax: Any, which: str, lo: float, hi: float) -> None:
    """Log scale on ``which`` ("x" or "y") with explicit plain ticks over [lo, hi]."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    pad = (hi / lo) ** 0.06 if hi > lo else 1.15
    lim = (lo / pad, hi * pad)
    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log")
    (ax.set_ylim if which == "y" else ax.set_xlim)(*lim)
    axis.set_major_locator(FixedLocator(log_ticks(*lim)))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: plain_number(v)))


def value_ticks(ax: Any, which: str, values: Sequence[float], log2: bool = False) -> None:
    """Ticks exactly at ``values`` (e.g. the N or L of the grid), plain labels."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    vals = sorted({float(v) for v in values})
    axis = ax.yaxis if which == "y" else ax.xaxis
    if log2:
        (ax.set_yscale if which == "y" else ax.set_xscale)("log", base=2)
    if len(vals) > 12:  # keep every k-th so labels never collide
        vals = vals[:: math.ceil(len(vals) / 12)]
    axis.set_major_locator(FixedLocator(vals))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: plain_number(v)))


def integer_axis(ax: Any, which: str, n: int, max_ticks: int = 16) -> None:
    """Integer ticks 0..n-1, every k-th when n is large."""
    from matplotlib.ticker import FixedLocator, NullLocator

    step = max(1, math.ceil(n / max_ticks))
    for k in (1, 2, 4, 5, 8, 10, 16, 20, 25, 50, 100):
        if k >= step:
            step = k
            break
    axis = ax.yaxis if which == "y" else ax.xaxis
    axis.set_major_locator(FixedLocator(list(range(0, n, step))))
    axis.set_minor_locator(NullLocator())


def pick_layers(num_layers: int, k: int = 4) -> list[int]:
    """Up to ``k`` layers spread over the depth: first, last and evenly in between."""
    if num_layers <= k:
        return list(range(num_layers))
    return sorted({int(round(x)) for x in np.linspace(0, num_layers - 1, k)})


def _layer_list(layers: Sequence[int], num_layers: int) -> str:
    shown = ", ".join(str(l) for l in layers)
    if len(layers) == num_layers:
        return f"all {num_layers} layers ({shown})" if num_layers > 1 else "layer 0"
    return f"layers {shown} of 0..{num_layers - 1}"


# --- scaling study ---------------------------------------------------------------------------


def _normalized(y_log10: np.ndarray) -> tuple[np.ndarray, bool]:
    """B / B(first) from log10 values; (log10 ratio, False) if the ratio leaves float range."""
    d = y_log10 - y_log10[0]
    if np.all(np.abs(d) < 300):
        return 10.0**d, True
    return d, False


def _proxy_column(models: Any, proxy: str) -> str | None:
    for col in (f"{proxy}_log10", proxy):
        if col in models.columns:
            return col
    return None


@_styled
def growth_figure(study: Study, axis: str, out_dir: Path) -> Figure | None:
    """Both proxies against ``axis`` at each fixed value of the other axis, each curve divided by
    its value at the smallest ``axis`` value; the two panels share one log y axis."""
    plt = require_matplotlib()
    other = "num_layers" if axis == "hidden_size" else "hidden_size"
    m = study.models
    proxies = [(p, c) for p in PROXY_LABELS if (c := _proxy_column(m, p)) is not None]
    groups = [(z, g.sort_values(axis)) for z, g in m.groupby(other) if g[axis].nunique() >= 2]
    if not groups or not proxies:
        return None
    sym, osym = SYMBOL[axis], SYMBOL[other]
    # log10 of B / B(smallest x), per proxy and fixed value
    curves = {
        (p, z): (g[axis].to_numpy(dtype=float), g[c].to_numpy(dtype=float) - float(g[c].iloc[0]))
        for p, c in proxies
        for z, g in groups
    }
    ds = np.concatenate([d for _, d in curves.values()])
    ds = ds[np.isfinite(ds)]
    as_ratio = ds.size > 0 and float(np.max(np.abs(ds))) < 300
    fig, axes = plt.subplots(
        1, len(proxies), figsize=(WIDTH, 4.0), sharey=True, squeeze=False, layout="constrained"
    )
    cmap = plt.get_cmap("viridis")
    for ax, (proxy, _col) in zip(axes[0], proxies, strict=True):
        for i, (z, _g) in enumerate(groups):
            x, d = curves[(proxy, z)]
            color = cmap(i / max(len(groups) - 1, 1) * 0.85)
            ax.plot(
                x,
                10.0**d if as_ratio else d,
                marker="o",
                ms=4,
                lw=1.6,
                color=color,
                label=f"{osym} = {z}",
            )
        ax.set_title(f"{PROXY_LABELS[proxy]} proxy", color=PROXY_COLORS[proxy])
        ax.set_xlabel(sym)
        ax.grid(True, which="major", alpha=0.3)
        value_ticks(ax, "x", m[axis].unique(), log2=axis == "hidden_size")
    if as_ratio:
        plain_log_axis(axes[0][0], "y", float(10.0 ** ds.min()), float(10.0 ** ds.max()))
        axes[0][0].set_ylabel(f"B / B at smallest {sym}")
        how = "log y axis shared by both panels"
    else:
        axes[0][0].set_ylabel(f"log10 (B / B at smallest {sym})")
        how = "y axis (log10 of the ratio) shared by both panels"
    axes[0][-1].legend(title=f"fixed {osym}", loc="upper left", frameon=False)
    fig.suptitle(f"Growth with {sym} at fixed {osym}")
    return save(
        fig,
        out_dir,
        f"growth_vs_{axis}",
        f"Both proxies against {sym}",
        f"Each curve is one fixed {osym}, divided by its value at the smallest {sym}; "
        f"{how}, so the steeper panel is the faster-growing proxy.",
    )


@_styled
def absolute_figure(study: Study, out_dir: Path) -> Figure | None:
    """log10 of both proxies per model (absolute values), one bar pair per model."""
    plt = require_matplotlib()
    m = study.models
    proxies = [(p, c) for p in PROXY_LABELS if (c := _proxy_column(m, p)) is not None]
    if not proxies or m.empty:
        return None
    labels = [f"L{r.num_layers} N{r.hidden_size}" for r in m.itertuples()]
    x = np.arange(len(m))
    fig, ax = plt.subplots(figsize=(WIDTH, 3.8), layout="constrained")
    w = 0.8 / len(proxies)
    for j, (proxy, col) in enumerate(proxies):
        ax.bar(
            x + (j - (len(proxies) - 1) / 2) * w,
            m[col].to_numpy(dtype=float),
            w,
            label=PROXY_LABELS[proxy],
            color=PROXY_COLORS[proxy],
        )
    ax.set_xticks(x)
    ax.set_xticklabels(
        labels, rotation=60 if len(m) > 8 else 0, ha="right" if len(m) > 8 else "center", fontsize=9
    )
    ax.set_ylabel("log10 B")
    ax.set_title("Both proxies per model")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(frameon=False)
    return save(
        fig,
        out_dir,
        "proxies_per_model",
        "Both proxies per model",
        "Absolute values, log10 B; models ordered by L, then N.",
    )


def study_figures(study: Study, out_dir: Path) -> list[Figure]:
    """The paper's growth figures (vs N at fixed L, vs L at fixed N) plus absolute values."""
    figs = [
        growth_figure(study, "hidden_size", out_dir),
        growth_figure(study, "num_layers", out_dir),
        absolute_figure(study, out_dir),
    ]
    return [f for f in figs if f is not None]


@_styled
def norm_scaling_figure(
    study: Study, out_dir: Path, num_layers: int | None = None
) -> Figure | None:
    """(2,1), (1,1) and spectral norms (mean over matrices of each type) against N at fixed L."""
    plt = require_matplotlib()
    if not study.analyses:
        return None
    L = num_layers if num_layers is not None else min(a.spec.num_layers for a in study.analyses)
    sel = sorted(
        (a for a in study.analyses if a.spec.num_layers == L), key=lambda a: a.spec.hidden_size
    )
    if len(sel) < 2:
        return None
    ns = [a.spec.hidden_size for a in sel]
    fig, axes = plt.subplots(1, 3, figsize=(WIDTH, 3.4), layout="constrained")
    for ax, (col, label) in zip(
        axes,
        [("norm_21", "(2,1) norm"), ("norm_11", "(1,1) norm"), ("spectral_norm", "spectral norm")],
        strict=True,
    ):
        allv = []
        for t, name in enumerate(MATRIX_TYPES):
            vals = []
            for a in sel:
                v = getattr(a.spectra, col)
                vals.append(float(np.mean(v[a.spectra.matrix_type == t])))
            allv += vals
            ax.plot(ns, vals, marker="o", ms=4, label=name, color=f"C{t}")
        value_ticks(ax, "x", ns, log2=True)
        pos = [v for v in allv if v > 0 and math.isfinite(v)]
        if pos:
            plain_log_axis(ax, "y", min(pos), max(pos))
        ax.set_xlabel("N")
        ax.set_title(label)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].legend(frameon=False)
    fig.suptitle(f"Norms against N at L = {L} (mean per matrix)")
    return save(
        fig,
        out_dir,
        f"norm_scaling_L{L}",
        f"Norms against N at L = {L}",
        "Mean over the matrices of each type; log-log axes.",
    )


# --- one analysis ---------------------------------------------------------------------------


def _band(rows: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Median, min and max over ragged rows (padded with NaN)."""
    n = max(r.size for r in rows)
    a = np.full((len(rows), n), np.nan)
    for i, r in enumerate(rows):
        a[i, : r.size] = r
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(a, axis=0), np.nanmin(a, axis=0), np.nanmax(a, axis=0)


def _legend_below(fig: Any, axes: Any) -> None:
    """One legend for all panels, in a row under them (never over a curve); tight layout."""
    handles, labels = {}, []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    if labels:
        fig.legend(
            [handles[k] for k in labels],
            labels,
            loc="outside lower center",
            frameon=False,
            ncol=min(len(labels), 6),
        )


def _layer_colors(layers: Sequence[int]) -> dict[int, Any]:
    plt = require_matplotlib()
    cmap = plt.get_cmap("tab10")
    return {l: cmap(i % 10) for i, l in enumerate(layers)}


BAND_ABOVE = 3  # more heads than this per layer: median line and min-max band


def _decay_rows(a: Analysis, idx: np.ndarray) -> list[np.ndarray]:
    from .bounds import kept_singular_values

    s = a.spectra
    rows = []
    for i in idx:
        sv = kept_singular_values(s.singular_values(int(i)), int(min(s.rows[i], s.cols[i])))
        if sv.size and sv[0] > 0:
            rows.append(sv / sv[0])
    return rows


@_styled
def spectral_decay_figure(a: Analysis, out_dir: Path, layers: int = 4, prefix: str = "") -> Figure:
    """s_i / s_1 against i for QK, OV, M_in and M_out of up to ``layers`` layers spread over
    the depth; many heads are drawn as the median and the min-max band over heads."""
    plt = require_matplotlib()
    s = a.spectra
    shown = pick_layers(a.spec.num_layers, layers)
    colors = _layer_colors(shown)
    fig, axes = plt.subplots(1, 4, figsize=(WIDTH, 3.3), sharey=True, layout="constrained")
    banded = False
    for t, (ax, name) in enumerate(zip(axes, MATRIX_TYPES, strict=True)):
        for l in shown:
            idx = np.flatnonzero((s.layer == l) & (s.matrix_type == t))
            rows = _decay_rows(a, idx)
            if not rows:
                continue
            if len(rows) > BAND_ABOVE:
                banded = True
                med, lo, hi = _band(rows)
                i = np.arange(1, med.size + 1)
                ax.fill_between(i, lo, hi, color=colors[l], alpha=0.18, lw=0)
                ax.plot(i, med, color=colors[l], lw=1.5, label=f"layer {l}")
            else:
                for j, r in enumerate(rows):
                    ax.plot(
                        np.arange(1, r.size + 1),
                        r,
                        color=colors[l],
                        lw=1.3,
                        label=f"layer {l}" if j == 0 else None,
                    )
        ax.set_yscale("log")
        ax.set_xlabel("index i")
        ax.set_title(name)
        ax.grid(True, which="major", alpha=0.3)
    lo_y = min(
        (
            ln.get_ydata().min()
            for ax in axes
            for ln in ax.get_lines()
            if np.size(ln.get_ydata()) and np.nanmin(ln.get_ydata()) > 0
        ),
        default=0.1,
    )
    plain_log_axis(axes[0], "y", max(float(lo_y), 1e-12), 1.0)
    axes[0].set_ylabel("s_i / s_1")
    _legend_below(fig, axes)
    fig.suptitle("Spectral decay (singular values / largest)")
    heads = (
        f" QK and OV: median over the {a.spec.num_heads} heads of each layer (line) and "
        "their min-max range (band)."
        if banded
        else " QK and OV: one line per head."
    )
    return save(
        fig,
        out_dir,
        f"{prefix}spectral_decay",
        "Spectral decay",
        f"{display_name(a.model)}, {_layer_list(shown, a.spec.num_layers)} (one colour "
        f"per layer); singular values above the rank threshold only.{heads}",
    )


def contribution_curves(a: Analysis) -> np.ndarray:
    """log c(A, p) over the grid for every matrix, shape (matrices, grid)."""
    from .bounds import kept_singular_values, log_contribution_curve

    s, d = a.spectra, a.details
    k = np.minimum(s.rows, s.cols)
    return np.array(
        [
            log_contribution_curve(
                kept_singular_values(s.singular_values(i), int(k[i])),
                d.log_scale[i],
                a.spec.hidden_size,
                d.grid,
            )
            for i in range(len(s))
        ]
    ).reshape(len(s), d.grid.size)


@_styled
def contribution_figure(a: Analysis, out_dir: Path, layers: int = 4, prefix: str = "") -> Figure:
    """log10 c(A, p) / c(A, 0) against p for up to ``layers`` layers, one panel per type; many
    heads as the median and min-max band; dots mark each matrix's p*."""
    plt = require_matplotlib()
    s, d = a.spectra, a.details
    curves = contribution_curves(a)
    shown = pick_layers(a.spec.num_layers, layers)
    colors = _layer_colors(shown)
    fig, axes = plt.subplots(1, 4, figsize=(WIDTH, 3.3), sharey=False, layout="constrained")
    banded = False
    for t, (ax, name) in enumerate(zip(axes, MATRIX_TYPES, strict=True)):
        for l in shown:
            idx = [
                int(i)
                for i in np.flatnonzero((s.layer == l) & (s.matrix_type == t))
                if np.isfinite(curves[i][0])
            ]
            if not idx:
                continue
            rel = np.array([(curves[i] - curves[i][0]) / np.log(10.0) for i in idx])
            if len(idx) > BAND_ABOVE:
                banded = True
                ax.fill_between(
                    d.grid, rel.min(axis=0), rel.max(axis=0), color=colors[l], alpha=0.18, lw=0
                )
                ax.plot(d.grid, np.median(rel, axis=0), color=colors[l], lw=1.5, label=f"layer {l}")
            else:
                for j in range(len(idx)):
                    ax.plot(
                        d.grid,
                        rel[j],
                        color=colors[l],
                        lw=1.3,
                        label=f"layer {l}" if j == 0 else None,
                    )
            ps = d.p_star[idx]
            at = np.clip(np.searchsorted(d.grid, ps), 0, d.grid.size - 1)
            ax.plot(
                ps,
                rel[np.arange(len(idx)), at],
                "o",
                ms=3.5,
                mfc=colors[l],
                mec="black",
                mew=0.5,
                ls="none",
            )
        ax.set_xlabel("p")
        ax.set_title(name)
        ax.set_xticks([0, 0.5, 1, 1.5, 2])
        ax.set_xticklabels(["0", "0.5", "1", "1.5", "2"])
        ax.grid(True, alpha=0.3)
        ax.axhline(0.0, color="grey", lw=0.8)
    axes[0].set_ylabel("log10 c(A, p) / c(A, 0)")
    _legend_below(fig, axes)
    fig.suptitle("Contribution against p, normalized at p = 0 (dots: chosen p*)")
    heads = (
        f" QK and OV: median over the {a.spec.num_heads} heads (line), min-max band."
        if banded
        else ""
    )
    return save(
        fig,
        out_dir,
        f"{prefix}contribution_vs_p",
        "Contribution against p",
        f"{display_name(a.model)}, {_layer_list(shown, a.spec.num_layers)} (one colour "
        "per layer). log10 of c(A, p) / c(A, 0); a curve above 0 everywhere means "
        f"p* = 0.{heads}",
    )


NEAR_CONSTANT = 0.01  # decades: a heatmap whose cells span less is described, not stretched


def head_grids(a: Analysis) -> dict[str, np.ndarray]:
    """Layer x head arrays of log10 c*(A) for QK and OV (NaN where a head is absent)."""
    s, d = a.spectra, a.details
    L, H = a.spec.num_layers, a.spec.num_heads
    out = {}
    for t in (0, 1):
        grid = np.full((L, H), np.nan)
        sel = (s.matrix_type == t) & (s.head >= 0) & (s.head < H)
        vals = d.log_contribution[sel] / np.log(10.0)
        grid[s.layer[sel], s.head[sel]] = np.where(np.isfinite(vals), vals, np.nan)
        out[MATRIX_TYPES[t]] = grid
    return out


def heatmap_summary(grids: dict[str, np.ndarray]) -> tuple[float, float, str | None]:
    """(vmin, vmax, sentence): one colour range for all grids; the sentence says in words that
    the map is constant when every cell lies within ``NEAR_CONSTANT`` decades (else None)."""
    vals = np.concatenate([g[np.isfinite(g)] for g in grids.values()])
    if vals.size == 0:
        return 0.0, 1.0, "No QK or OV matrix has a positive contribution."
    lo, hi = float(vals.min()), float(vals.max())
    if hi - lo < NEAR_CONSTANT:
        mid = 0.5 * (lo + hi)
        return (
            mid - 1.0,
            mid + 1.0,
            (
                f"Every QK and OV cell is {mid:.2f} (log10 c*, all "
                f"within {NEAR_CONSTANT:g} decades): every head of every "
                "layer contributes the same."
            ),
        )
    return lo, hi, None


@_styled
def head_heatmap_figure(a: Analysis, out_dir: Path, prefix: str = "") -> Figure:
    """Layer x head heatmaps of log10 c*(A) for QK and OV on one colour scale."""
    plt = require_matplotlib()
    grids = head_grids(a)
    L, H = a.spec.num_layers, a.spec.num_heads
    vmin, vmax, constant = heatmap_summary(grids)
    compact = L > 24 or H > 24
    height = min(7.5, max(2.8, (0.13 if compact else 0.34) * L + 1.6))
    if constant is not None:
        height = min(height, 3.4)
    fig, axes = plt.subplots(1, 2, figsize=(WIDTH, height), sharey=True, layout="constrained")
    im = None
    annotate = constant is None and H <= 8 and L <= 16  # values readable at 900 px
    for ax, (name, grid) in zip(axes, grids.items(), strict=True):
        im = ax.imshow(
            grid,
            aspect="auto",
            cmap="viridis",
            origin="upper",
            vmin=vmin,
            vmax=vmax,
            interpolation="nearest",
        )
        ax.set_xlabel("head")
        ax.set_title(name)
        integer_axis(ax, "x", H, max_ticks=12)
        integer_axis(ax, "y", L, max_ticks=max(4, min(16, int(2.5 * height))))
        if constant is not None and np.isfinite(grid).any():
            ax.text(
                (H - 1) / 2,
                (L - 1) / 2,
                f"every cell\n{np.nanmean(grid):.2f}",
                ha="center",
                va="center",
                fontsize=13,
                color="white",
                bbox={"facecolor": "black", "alpha": 0.35, "lw": 0},
            )
        if annotate:
            mid = 0.5 * (vmin + vmax)
            for (i, j), v in np.ndenumerate(grid):
                if np.isfinite(v):
                    ax.text(
                        j,
                        i,
                        f"{v:.2f}",
                        ha="center",
                        va="center",
                        fontsize=9 if H <= 6 else 8,
                        color="white" if v < mid else "black",
                    )
    axes[0].set_ylabel("layer")
    if constant is None:  # a colour bar for a constant map would only suggest a contrast
        cb = fig.colorbar(im, ax=list(axes), shrink=0.9, pad=0.02)
        cb.set_label("log10 c*")
    fig.suptitle("log10 contribution per layer and head" + (" (constant)" if constant else ""))
    caption = "log10 c*(A) of every QK and OV matrix; one colour scale for both panels."
    if constant:
        caption = constant + " " + caption
    return save(fig, out_dir, f"{prefix}head_heatmap", "Contributions per layer and head", caption)


@_styled
def alpha_figure(a: Analysis, out_dir: Path, prefix: str = "") -> Figure:
    """log10 alpha(l) per layer."""
    plt = require_matplotlib()
    L = a.spec.num_layers
    fig, ax = plt.subplots(figsize=(WIDTH, 3.2), layout="constrained")
    ax.bar(
        np.arange(L),
        a.details.log_alpha / np.log(10.0),
        color="#6a3d9a",
        width=0.8 if L <= 64 else 1.0,
    )
    ax.set_xlabel("layer l")
    ax.set_ylabel("log10 alpha(l)")
    ax.set_xlim(-0.7, L - 0.3)
    integer_axis(ax, "x", L, max_ticks=16)
    ax.set_title("Depth factor alpha per layer")
    ax.grid(True, axis="y", alpha=0.3)
    return save(
        fig,
        out_dir,
        f"{prefix}alpha",
        "Depth factor alpha per layer",
        "alpha(l) multiplies every matrix scale of layer l; alpha(L-1) = 1 (log10 alpha = 0).",
    )


def analysis_figures(a: Analysis, out_dir: Path, prefix: str = "") -> list[Figure]:
    """Spectral decay, contribution-vs-p, head heatmap and alpha per layer."""
    return [
        spectral_decay_figure(a, out_dir, prefix=prefix),
        contribution_figure(a, out_dir, prefix=prefix),
        head_heatmap_figure(a, out_dir, prefix=prefix),
        alpha_figure(a, out_dir, prefix=prefix),
    ]
