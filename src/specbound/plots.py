"""Figures of an analysis and of a scaling study (matplotlib, Agg backend, imported lazily).

Every figure is written as PNG (embedded in report.html) and SVG, each through a temporary
file and a rename, so a figure file is either complete or absent.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import SpecboundError
from .spectra import MATRIX_TYPES

if TYPE_CHECKING:
    from .analysis import Analysis
    from .study import Study

PROXY_LABELS = {"spectrum_adaptive": "spectrum-adaptive", "norm_based": "norm-based"}
_DPI = 110


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


def _atomic_savefig(fig: Any, path: Path, fmt: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fig.savefig(fh, format=fmt, dpi=_DPI, bbox_inches="tight",
                        metadata={"Date": None} if fmt == "svg" else None)
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
        _atomic_savefig(fig, png, "png")
        _atomic_savefig(fig, svg, "svg")
    finally:
        plt.close(fig)
    return Figure(name, title, png, svg, caption)


# --- scaling study ---------------------------------------------------------------------------

def _normalized(y_log10: np.ndarray) -> tuple[np.ndarray, bool]:
    """B / B(first) from log10 values; (log10 ratio, False) if the ratio leaves float range."""
    d = y_log10 - y_log10[0]
    if np.all(np.abs(d) < 300):
        return 10.0 ** d, True
    return d, False


def growth_figure(study: Study, axis: str, out_dir: Path) -> Figure | None:
    """Each proxy against ``axis`` at each fixed value of the other axis, normalized, log y."""
    plt = require_matplotlib()
    other = "num_layers" if axis == "hidden_size" else "hidden_size"
    m = study.models
    groups = [(z, g.sort_values(axis)) for z, g in m.groupby(other)
              if g[axis].nunique() >= 2]
    if not groups:
        return None
    sym = {"hidden_size": "N", "num_layers": "L"}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharey=False)
    for ax, proxy in zip(axes, ("spectrum_adaptive", "norm_based"), strict=True):
        log_scale = True
        for i, (z, g) in enumerate(groups):
            y, ok = _normalized(g[f"{proxy}_log10"].to_numpy(dtype=float))
            log_scale &= ok
            ax.plot(g[axis], y, marker="o", color=f"C{i % 10}",
                    label=f"{sym[other]} = {z}")
        if log_scale:
            ax.set_yscale("log")
            ax.set_ylabel(f"B / B(smallest {sym[axis]})")
        else:
            ax.set_ylabel(f"log10 B / B(smallest {sym[axis]})")
        ax.set_xlabel(f"{sym[axis]} ({axis})")
        ax.set_title(f"{PROXY_LABELS[proxy]} proxy")
        ax.grid(True, which="both", alpha=0.3)
        if axis == "hidden_size":
            ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(m[axis].unique()))
        ax.set_xticklabels([str(v) for v in sorted(m[axis].unique())])
        ax.legend(fontsize=8)
    fig.suptitle(f"Growth with {sym[axis]} at fixed {sym[other]}")
    fig.tight_layout()
    return save(fig, out_dir, f"growth_vs_{axis}", f"Both proxies against {sym[axis]}",
                f"Each curve is divided by its value at the smallest {sym[axis]}; log y axis.")


def absolute_figure(study: Study, out_dir: Path) -> Figure:
    """log10 of both proxies per model (absolute values), one bar pair per model."""
    plt = require_matplotlib()
    m = study.models
    labels = [f"L{r.num_layers} N{r.hidden_size}" for r in m.itertuples()]
    x = np.arange(len(m))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(m) + 3), 4.2))
    ax.bar(x - 0.2, m["spectrum_adaptive_log10"], 0.4, label="spectrum-adaptive")
    ax.bar(x + 0.2, m["norm_based_log10"], 0.4, label="norm-based")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("log10 B")
    ax.set_title("Both proxies per model (log10)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return save(fig, out_dir, "proxies_per_model", "Both proxies per model",
                "Absolute values, log10.")


def study_figures(study: Study, out_dir: Path) -> list[Figure]:
    """The paper's growth figures (vs N at fixed L, vs L at fixed N) plus absolute values."""
    figs = [growth_figure(study, "hidden_size", out_dir),
            growth_figure(study, "num_layers", out_dir),
            absolute_figure(study, out_dir)]
    return [f for f in figs if f is not None]


def norm_scaling_figure(study: Study, out_dir: Path,
                        num_layers: int | None = None) -> Figure | None:
    """(2,1), (1,1) and spectral norms (mean over matrices of each type) against N at fixed L."""
    plt = require_matplotlib()
    if not study.analyses:
        return None
    L = num_layers if num_layers is not None else min(a.spec.num_layers for a in study.analyses)
    sel = sorted((a for a in study.analyses if a.spec.num_layers == L),
                 key=lambda a: a.spec.hidden_size)
    if len(sel) < 2:
        return None
    ns = [a.spec.hidden_size for a in sel]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    for ax, (col, label) in zip(axes, [("norm_21", "(2,1) norm"), ("norm_11", "(1,1) norm"),
                                       ("spectral_norm", "spectral norm")], strict=True):
        for t, name in enumerate(MATRIX_TYPES):
            vals = []
            for a in sel:
                v = getattr(a.spectra, col)
                vals.append(float(np.mean(v[a.spectra.matrix_type == t])))
            ax.plot(ns, vals, marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(ns)
        ax.set_xticklabels([str(n) for n in ns])
        ax.set_xlabel("N (hidden_size)")
        ax.set_title(f"{label}, mean per matrix, L = {L}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return save(fig, out_dir, f"norm_scaling_L{L}", f"Norms against N at L = {L}",
                "Mean over the matrices of each type; log-log axes.")


# --- one analysis ---------------------------------------------------------------------------

def spectral_decay_figure(a: Analysis, out_dir: Path, layers: int = 4, prefix: str = "") -> Figure:
    """s_i / s_1 against i for QK, OV (every head), M_in and M_out of the first ``layers``."""
    plt = require_matplotlib()
    s = a.spectra
    n_l = min(layers, a.spec.num_layers)
    fig, axes = plt.subplots(1, 4, figsize=(14, 4.0), sharey=True)
    cmap = plt.get_cmap("plasma")
    for t, (ax, name) in enumerate(zip(axes, MATRIX_TYPES, strict=True)):
        for l in range(n_l):
            idx = np.flatnonzero((s.layer == l) & (s.matrix_type == t))
            for j, i in enumerate(idx):
                sv = s.singular_values(int(i))
                if sv.size == 0 or sv[0] <= 0:
                    continue
                ax.plot(np.arange(1, sv.size + 1), sv / sv[0], lw=1.0, alpha=0.8,
                        color=cmap(l / max(n_l, 1)), label=f"layer {l}" if j == 0 else None)
        ax.set_yscale("log")
        ax.set_xlabel("index i")
        ax.set_title(name)
        ax.grid(True, which="both", alpha=0.3)
        if t == 0:
            ax.set_ylabel("s_i / s_1")
            ax.legend(fontsize=8)
    fig.suptitle(f"Spectral decay, first {n_l} layers: {a.model}", fontsize=10)
    fig.tight_layout()
    return save(fig, out_dir, f"{prefix}spectral_decay", "Spectral decay",
                "Singular values divided by the largest, per matrix (QK/OV: every head).")


def contribution_curves(a: Analysis) -> np.ndarray:
    """log c(A, p) over the grid for every matrix, shape (matrices, grid)."""
    from .bounds import kept_singular_values, log_contribution_curve

    s, d = a.spectra, a.details
    k = np.minimum(s.rows, s.cols)
    return np.array([
        log_contribution_curve(kept_singular_values(s.singular_values(i), int(k[i])),
                               d.log_scale[i], a.spec.hidden_size, d.grid)
        for i in range(len(s))
    ]).reshape(len(s), d.grid.size)


def contribution_figure(a: Analysis, out_dir: Path, layers: int = 4, prefix: str = "") -> Figure:
    """c(A, p) / c(A, 0) against p for the first ``layers`` layers, one panel per type."""
    plt = require_matplotlib()
    s, d = a.spectra, a.details
    curves = contribution_curves(a)
    n_l = min(layers, a.spec.num_layers)
    fig, axes = plt.subplots(1, 4, figsize=(14, 4.0), sharey=False)
    cmap = plt.get_cmap("plasma")
    for t, (ax, name) in enumerate(zip(axes, MATRIX_TYPES, strict=True)):
        for l in range(n_l):
            idx = np.flatnonzero((s.layer == l) & (s.matrix_type == t))
            for j, i in enumerate(idx):
                c = curves[i]
                if not np.isfinite(c[0]):
                    continue
                rel = (c - c[0]) / np.log(10.0)
                ax.plot(d.grid, rel, lw=1.0, alpha=0.8, color=cmap(l / max(n_l, 1)),
                        label=f"layer {l}" if j == 0 else None)
                ax.plot([d.p_star[i]], [rel[int(np.searchsorted(d.grid, d.p_star[i]))]],
                        "k.", ms=4)
        ax.set_xlabel("p")
        ax.set_title(name)
        ax.grid(True, alpha=0.3)
        ax.axhline(0.0, color="grey", lw=0.8)
        if t == 0:
            ax.set_ylabel("log10 c(A, p) / c(A, 0)")
            ax.legend(fontsize=8)
    fig.suptitle(f"Contribution against p, normalized at p = 0 (dots: chosen p*): {a.model}",
                 fontsize=10)
    fig.tight_layout()
    return save(fig, out_dir, f"{prefix}contribution_vs_p", "Contribution against p",
                "log10 of c(A, p) / c(A, 0); a curve above 0 everywhere means p* = 0.")


def head_heatmap_figure(a: Analysis, out_dir: Path, prefix: str = "") -> Figure:
    """Layer x head heatmaps of log10 contribution for QK and OV."""
    plt = require_matplotlib()
    s, d = a.spectra, a.details
    L, H = a.spec.num_layers, a.spec.num_heads
    fig, axes = plt.subplots(1, 2, figsize=(max(8.0, 2 * (0.5 * H + 2.5)), max(3.0, 0.4 * L + 2)))
    for ax, t in zip(axes, (0, 1), strict=True):
        grid = np.full((L, H), np.nan)
        sel = s.matrix_type == t
        grid[s.layer[sel], s.head[sel]] = d.log_contribution[sel] / np.log(10.0)
        im = ax.imshow(np.where(np.isfinite(grid), grid, np.nan), aspect="auto", cmap="magma",
                       origin="upper")
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        ax.set_xticks(range(H))
        ax.set_yticks(range(L))
        ax.set_title(f"{MATRIX_TYPES[t]}: log10 contribution")
        if L * H <= 160:  # small grids: print the values, readable even when all are equal
            for (i, j), v in np.ndenumerate(grid):
                if np.isfinite(v):
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                            color="white" if v < np.nanmean(grid) else "black")
        fig.colorbar(im, ax=ax, shrink=0.85)
    fig.tight_layout()
    return save(fig, out_dir, f"{prefix}head_heatmap", "Contributions per layer and head",
                "log10 c*(A) of every QK and OV matrix.")


def alpha_figure(a: Analysis, out_dir: Path, prefix: str = "") -> Figure:
    """log10 alpha(l) per layer."""
    plt = require_matplotlib()
    L = a.spec.num_layers
    fig, ax = plt.subplots(figsize=(max(5.0, 0.5 * L + 3), 3.6))
    ax.bar(np.arange(L), a.details.log_alpha / np.log(10.0), color="tab:purple")
    ax.set_xlabel("layer l")
    ax.set_ylabel("log10 alpha(l)")
    ax.set_xticks(range(L))
    ax.set_title("Depth factor alpha per layer")
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return save(fig, out_dir, f"{prefix}alpha", "Depth factor alpha per layer",
                "alpha(l) multiplies every matrix scale of layer l; alpha(L-1) = 1.")


def analysis_figures(a: Analysis, out_dir: Path, prefix: str = "") -> list[Figure]:
    """Spectral decay, contribution-vs-p, head heatmap and alpha per layer."""
    return [spectral_decay_figure(a, out_dir, prefix=prefix),
            contribution_figure(a, out_dir, prefix=prefix),
            head_heatmap_figure(a, out_dir, prefix=prefix),
            alpha_figure(a, out_dir, prefix=prefix)]
