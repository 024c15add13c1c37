"""Figures of one analysis: spectral decay, contribution against p, contributions per head,
the depth factor per layer, the ESD of raw weights with their power-law fit, HTSR alpha per
layer. Each draws what the Analysis holds (spectra, p*, ``contribution_curves``, the HTSR fits
of ``measures.powerlaw``); nothing here computes a bound."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...measures.spectrum_adaptive import kept_singular_values
from ...naming import display_name
from .htsr import esd_figures, htsr_layer_figure
from .style import (
    WIDTH,
    Figure,
    axis_label,
    band,
    integer_axis,
    layer_colors,
    layer_list,
    legend_below,
    plain_log_axis,
    require_matplotlib,
    save,
    styled,
)

if TYPE_CHECKING:
    from ...analysis import Analysis

MATRIX_TYPES = ("QK", "OV", "M_in", "M_out")
BAND_ABOVE = 3  # more heads than this per layer: median line and min-max band
NEAR_CONSTANT = 0.01  # decades: a heatmap whose cells span less is described, not drawn


def _decay_rows(a: Analysis, idx: np.ndarray) -> list[np.ndarray]:
    s = a.spectra
    rows = []
    for i in idx:
        sv = kept_singular_values(s.singular_values(int(i)), int(min(s.rows[i], s.cols[i])))
        if sv.size and sv[0] > 0:
            rows.append(sv / sv[0])
    return rows


@styled
def spectral_decay_figure(a: Analysis, out_dir: Path, prefix: str = "") -> Figure:
    """s_i / s_1 against i on log-log axes for QK, OV, M_in and M_out of every layer; many
    heads are drawn as the median and the min-max band over heads."""
    plt = require_matplotlib()
    s = a.spectra
    shown = list(range(a.spec.num_layers))
    colors = layer_colors(shown)
    fig, axes = plt.subplots(1, 4, figsize=(WIDTH, 3.6), sharey=True, layout="constrained")
    banded = False
    lo_y, hi_x = 1.0, 2.0
    for t, (ax, name) in enumerate(zip(axes, MATRIX_TYPES, strict=True)):
        for l in shown:
            idx = np.flatnonzero((s.layer == l) & (s.matrix_type == t))
            rows = _decay_rows(a, idx)
            if not rows:
                continue
            if len(rows) > BAND_ABOVE:
                banded = True
                med, lo, hi = band(rows)
                i = np.arange(1, med.size + 1)
                ax.fill_between(i, lo, hi, color=colors[l], alpha=0.15, lw=0)
                ax.plot(i, med, color=colors[l], lw=1.4, label=f"layer {l}")
                lo_y = min(lo_y, float(np.nanmin(lo)))
            else:
                for j, r in enumerate(rows):
                    ax.plot(
                        np.arange(1, r.size + 1),
                        r,
                        color=colors[l],
                        lw=1.2,
                        label=f"layer {l}" if j == 0 else None,
                    )
                    lo_y = min(lo_y, float(r.min()))
            hi_x = max(hi_x, max(r.size for r in rows))
        ax.set_xlabel(axis_label("index i", log=True))
        ax.set_title(name)
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes:
        plain_log_axis(ax, "x", 1.0, float(hi_x))
    plain_log_axis(axes[0], "y", max(lo_y, 1e-12), 1.0)
    axes[0].set_ylabel(axis_label("s_i / s_1", log=True))
    legend_below(fig, axes, ncol=8)
    fig.suptitle("Spectral decay (singular values / largest), log-log")
    heads = (
        f" QK and OV: median over the {a.spec.num_heads} heads of each layer (line) and "
        "their min-max range (shaded band)."
        if banded
        else " QK and OV: one line per head."
    )
    return save(
        fig,
        out_dir,
        f"{prefix}spectral_decay",
        "Spectral decay",
        f"{display_name(a.model)}, {layer_list(shown, a.spec.num_layers)} (one colour "
        f"per layer); singular values above the rank threshold only; both axes log scale.{heads}",
    )


@styled
def contribution_figure(
    a: Analysis, out_dir: Path, layers: Sequence[int] | None = None, prefix: str = ""
) -> Figure:
    """log10 c(A, p) / c(A, 0) against p (``Analysis.contribution_curves``), one panel per type;
    many heads as the median and min-max band; dots mark each matrix's p*."""
    plt = require_matplotlib()
    s, d = a.spectra, a.details
    curves = a.contribution_curves()
    shown = list(layers) if layers is not None else list(range(a.spec.num_layers))
    colors = layer_colors(shown)
    fig, axes = plt.subplots(1, 4, figsize=(WIDTH, 3.6), sharey=False, layout="constrained")
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
                    d.grid, rel.min(axis=0), rel.max(axis=0), color=colors[l], alpha=0.3, lw=0
                )
                ax.plot(d.grid, np.median(rel, axis=0), color=colors[l], lw=1.4, label=f"layer {l}")
            else:
                for j in range(len(idx)):
                    ax.plot(
                        d.grid,
                        rel[j],
                        color=colors[l],
                        lw=1.2,
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
    legend_below(fig, axes, ncol=8)
    fig.suptitle("Contribution against p, normalized at p = 0 (dots: chosen p*)")
    heads = (
        f" QK and OV: median over the {a.spec.num_heads} heads (line) and their min-max range "
        "(shaded band; narrow when the heads agree)."
        if banded
        else ""
    )
    return save(
        fig,
        out_dir,
        f"{prefix}contribution_vs_p",
        "Contribution against p",
        f"{display_name(a.model)}, {layer_list(shown, a.spec.num_layers)} (one colour "
        "per layer). log10 of c(A, p) / c(A, 0); a curve above 0 everywhere means "
        f"p* = 0.{heads}",
    )


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
                f"Every QK and OV cell is {mid:.2f} (log10 c*, all within {NEAR_CONSTANT:g} "
                "decades): every head of every layer contributes the same, so no heatmap is "
                "drawn."
            ),
        )
    return lo, hi, None


@styled
def head_heatmap_figure(a: Analysis, out_dir: Path, prefix: str = "") -> Figure | None:
    """Layer x head heatmaps of log10 c*(A) for QK and OV on one colour scale with its colour
    bar; None when the map is constant (``heatmap_summary`` says so in words)."""
    plt = require_matplotlib()
    grids = head_grids(a)
    L, H = a.spec.num_layers, a.spec.num_heads
    vmin, vmax, constant = heatmap_summary(grids)
    if constant is not None:
        return None
    compact = L > 24 or H > 24
    height = min(7.5, max(2.8, (0.13 if compact else 0.34) * L + 1.6))
    fig, axes = plt.subplots(1, 2, figsize=(WIDTH, height), sharey=True, layout="constrained")
    im = None
    annotate = H <= 8 and L <= 16  # values readable at 900 px
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
    cb = fig.colorbar(im, ax=list(axes), shrink=0.9, pad=0.02)
    cb.set_label("log10 c*")
    fig.suptitle("log10 contribution per layer and head")
    return save(
        fig,
        out_dir,
        f"{prefix}head_heatmap",
        "Contributions per layer and head",
        "log10 c*(A) of every QK and OV matrix; one colour scale (the bar) for both panels.",
    )


@styled
def depth_factor_figure(a: Analysis, out_dir: Path, prefix: str = "") -> Figure:
    """log10 depth_factor(l) per layer (SPEC 4's alpha(l))."""
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
    ax.set_ylabel("log10_depth_factor")
    ax.set_xlim(-0.7, L - 0.3)
    integer_axis(ax, "x", L, max_ticks=16)
    ax.set_title("Depth factor per layer (log10_depth_factor)")
    ax.grid(True, axis="y", alpha=0.3)
    return save(
        fig,
        out_dir,
        f"{prefix}depth_factor",
        "Depth factor per layer",
        "depth_factor(l) (SPEC 4's alpha(l)) multiplies every matrix scale of layer l; "
        "depth_factor(L-1) = 1 (log10_depth_factor = 0). Bar height: log10_depth_factor.",
    )


#: One colour per matrix type in the headroom figure.
TYPE_COLORS = {"QK": "#1f78b4", "OV": "#33a02c", "M_in": "#e31a1c", "M_out": "#ff7f00"}


@styled
def headroom_figure(a: Analysis, out_dir: Path, prefix: str = "") -> Figure | None:
    """The adaptive headroom (SPEC 4) per layer and matrix type: the smallest over heads, in
    decades (``layers`` columns ``adaptive_headroom_min_<t>``); None when no matrix has one."""
    cols = a.layer_columns()
    L = a.spec.num_layers
    grids = {t: np.asarray(cols[f"adaptive_headroom_min_{t}"], dtype=float) for t in MATRIX_TYPES}
    if not any(np.isfinite(v).any() for v in grids.values()):
        return None
    plt = require_matplotlib()
    fig, ax = plt.subplots(figsize=(WIDTH, 3.4), layout="constrained")
    x = np.arange(L)
    for t, v in grids.items():
        ok = np.isfinite(v)
        if ok.any():
            ax.plot(x[ok], v[ok], marker="o", ms=3, lw=1.2, color=TYPE_COLORS[t], label=t)
    ax.axhline(0.0, color="0.3", lw=0.8, ls="--")
    ax.set_xlabel("layer l")
    ax.set_ylabel("adaptive headroom (decades)")
    ax.set_xlim(-0.5, L - 0.5)
    integer_axis(ax, "x", L, max_ticks=16)
    ax.set_title("How far each matrix is from using its spectrum")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small", ncol=4)
    return save(
        fig,
        out_dir,
        f"{prefix}adaptive_headroom",
        "Adaptive headroom per layer and type",
        "log10 s - max over p > 0 of T_p(A) / ln 10, the smallest over the heads of each layer "
        "and type (SPEC 4). Above 0 (dashed) the matrix picks p* = 0 and its scale s would have "
        "to shrink by that many orders of magnitude before any p > 0 beats the rank count; "
        "at or below 0 some p > 0 already wins.",
    )


def analysis_figures(
    a: Analysis, out_dir: Path, prefix: str = "", esd: str = "worst"
) -> list[Figure]:
    """Spectral decay, contribution-vs-p, head heatmap (unless constant), depth_factor per
    layer, adaptive headroom per layer and type, HTSR alpha per layer and the ESD figures of
    ``esd``."""
    figs = [
        spectral_decay_figure(a, out_dir, prefix=prefix),
        contribution_figure(a, out_dir, prefix=prefix),
        head_heatmap_figure(a, out_dir, prefix=prefix),
        depth_factor_figure(a, out_dir, prefix=prefix),
        headroom_figure(a, out_dir, prefix=prefix),
    ]
    if esd != "none":
        figs.append(htsr_layer_figure(a, out_dir, prefix=prefix))
        figs += esd_figures(a, out_dir, esd, prefix=prefix)
    return [f for f in figs if f is not None]
