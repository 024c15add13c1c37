"""Figures of a scaling study: growth of both proxies against N and L with the fitted lines of
growth.csv and their slopes, both proxies per model, norms against N. Each draws what the Study
holds (models.csv, growth.csv, the analyses); the fitted lines are growth.csv's OLS fits drawn
through their group means (an OLS line passes through the means), nothing is refitted."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...studies.scale.fit import CEILING_COLUMN
from ...studies.scale.verdict import low_resid_df
from .style import (
    PROXY_COLORS,
    PROXY_LABELS,
    SYMBOL,
    WIDTH,
    Figure,
    axis_label,
    legend_below,
    plain_log_axis,
    require_matplotlib,
    save,
    styled,
    value_ticks,
)

if TYPE_CHECKING:
    from ...studies.scale.run import Study

MATRIX_TYPES = ("QK", "OV", "M_in", "M_out")
#: the slope drawn along each axis: exponent in N (log-log), log10 per unit in L
AXIS_SLOPE = {"hidden_size": "exponent", "num_layers": "log10_per_unit"}


def _proxy_column(models: Any, proxy: str) -> str | None:
    for col in (f"{proxy}_log10", proxy):
        if col in models.columns:
            return col
    return None


def _per_fixed(growth: Any, proxy: str, axis: str, z: Any) -> Any:
    """growth.csv's rows of the per-fixed fit of ``proxy`` along ``axis`` at fixed value ``z``
    (a DataFrame), or None when growth.csv has none."""
    if growth is None or growth.empty:
        return None
    name_col = "measure" if "measure" in growth.columns else "proxy"
    rows = growth[
        (growth[name_col] == proxy)
        & (growth["axis"] == axis)
        & (growth["fit"] == "per_fixed")
        & (growth["fixed_value"].astype(float) == float(z))
    ]
    return None if rows.empty else rows


def _low_df(growth: Any, proxy: str, axis: str, z: Any) -> int | None:
    """The residual degrees of freedom of growth.csv's per-fixed fit of ``proxy`` along
    ``axis`` at ``z`` when below ``verdict.MIN_RESID_DF`` (the line is flagged:
    ``verdict.low_resid_df``), else None."""
    rows = _per_fixed(growth, proxy, axis, z)
    return None if rows is None else low_resid_df(rows.iloc[0])


def _slope(growth: Any, proxy: str, axis: str, z: Any) -> float | None:
    """growth.csv's per-fixed slope of ``proxy`` along ``axis`` at fixed value ``z``."""
    rows = _per_fixed(growth, proxy, axis, z)
    if rows is None:
        return None
    v = float(_numbers(rows[AXIS_SLOPE[axis]])[0])
    return v if math.isfinite(v) else None


def _numbers(column: Any) -> Any:
    """A column as float64, NaN where a value is undefined (None, empty: beyond float64)."""
    import pandas as pd

    return pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)


def _relative(g: Any, axis: str, column: str) -> tuple[Any, Any]:
    """(``axis`` values, log10 proxy minus its first defined value) of one curve; a proxy
    beyond float64 (an empty cell, None) is NaN and left out of the drawing."""
    y = _numbers(g[column])
    defined = y[np.isfinite(y)]
    return g[axis].to_numpy(dtype=float), y - (defined[0] if defined.size else np.nan)


@dataclass
class _Growth:
    """What one growth figure draws: the proxies (name, models.csv column), the groups (fixed
    value of the other axis, its models sorted along ``axis``), each curve relative to its first
    defined value, each group's rank ceiling on the same scale, and whether the y axis shows
    the ratio (log axis) or its log10."""

    axis: str
    other: str
    proxies: list[tuple[str, str]]
    groups: list[tuple[Any, Any]]
    curves: dict[tuple[str, Any], tuple[Any, Any]]
    ceilings: dict[Any, Any]
    as_ratio: bool
    span: Any  # every finite relative value drawn (the y range)

    def y(self, d: Any) -> Any:
        """A relative log10 value as drawn: the ratio 10**d on a log axis, else d."""
        return 10.0**d if self.as_ratio else d

    def color(self, cmap: Any, i: int) -> Any:
        return cmap(i / max(len(self.groups) - 1, 1) * 0.85)


def _ceiling_curves(m: Any, groups: list[tuple[Any, Any]], curves: dict) -> dict[Any, Any]:
    """The rank ceiling of each group, relative to the same reference as its spectrum-adaptive
    curve (groups with fewer than 2 defined values left out)."""
    ceilings = {}
    if CEILING_COLUMN in m.columns and ("spectrum_adaptive", groups[0][0]) in curves:
        col = _proxy_column(m, "spectrum_adaptive")
        for z, g in groups:
            _x, d = curves[("spectrum_adaptive", z)]
            ce = _numbers(g[CEILING_COLUMN]) - (_numbers(g[col]) - d)
            if np.isfinite(ce).sum() >= 2:
                ceilings[z] = ce
    return ceilings


def _growth_data(study: Study, axis: str) -> _Growth | None:
    """The curves of a growth figure; None when there is nothing to draw (no proxy column, no
    group with 2 values along ``axis``, every proxy beyond float64)."""
    other = "num_layers" if axis == "hidden_size" else "hidden_size"
    m = study.models
    proxies = [(p, c) for p in PROXY_LABELS if (c := _proxy_column(m, p)) is not None]
    groups = [(z, g.sort_values(axis)) for z, g in m.groupby(other) if g[axis].nunique() >= 2]
    if not groups or not proxies:
        return None
    curves = {(p, z): _relative(g, axis, c) for p, c in proxies for z, g in groups}
    ceilings = _ceiling_curves(m, groups, curves)
    ds = np.concatenate([d for _, d in curves.values()] + list(ceilings.values()))
    ds = ds[np.isfinite(ds)]
    if ds.size == 0:  # every proxy beyond float64: nothing to draw (the page says undefined)
        return None
    as_ratio = ds.size > 0 and float(np.max(np.abs(ds))) < 300
    return _Growth(axis, other, proxies, groups, curves, ceilings, as_ratio, ds)


def _fitted_line(gr: _Growth, x: Any, d: Any, b: float) -> tuple[Any, Any] | None:
    """growth.csv's fitted line of slope ``b`` through the mean of the defined points (an OLS
    line passes through the means), in the axes' units; None below 2 defined points."""
    ok = np.isfinite(d)
    if ok.sum() < 2:
        return None
    log_x = gr.axis == "hidden_size"
    u = np.log10(x) if log_x else x
    xs = np.linspace(u[ok].min(), u[ok].max(), 30)
    line = d[ok].mean() + b * (xs - u[ok].mean())
    return (10.0**xs if log_x else xs), gr.y(line)


def _draw_groups(ax: Any, gr: _Growth, growth: Any, proxy: str, cmap: Any) -> bool:
    """One proxy's panel: each group's points and growth.csv's fitted line (dotted and faint
    where the fit has too few residual degrees of freedom). True when a line was flagged."""
    flagged = False
    osym = SYMBOL[gr.other]
    for i, (z, _g) in enumerate(gr.groups):
        x, d = gr.curves[(proxy, z)]
        color = gr.color(cmap, i)
        b = _slope(growth, proxy, gr.axis, z)
        low = _low_df(growth, proxy, gr.axis, z)
        flagged = flagged or low is not None
        label = f"{osym} = {z}" + (f": slope {b:.3g}" if b is not None else "")
        label += f" (resid df {low}: unchecked)" if low is not None else ""
        ax.plot(x, gr.y(d), marker="o", ms=5, lw=0, color=color, label=label)
        line = _fitted_line(gr, x, d, b) if b is not None else None
        if line is not None:
            ax.plot(
                *line,
                ls=":" if low is not None else "--",
                lw=1.4,
                color=color,
                alpha=0.6 if low is not None else 1.0,
            )
    return flagged


def _draw_ceilings(ax: Any, gr: _Growth, cmap: Any) -> bool:
    """The rank ceiling of each group (dash-dot) in the spectrum-adaptive panel; True when any
    was drawn."""
    drawn = False
    for i, (z, _g) in enumerate(gr.groups):
        if z in gr.ceilings:
            x = gr.curves[("spectrum_adaptive", z)][0]
            ax.plot(x, gr.y(gr.ceilings[z]), ls="-.", lw=1.1, color=gr.color(cmap, i))
            drawn = True
    return drawn


def _finish_panel(ax: Any, gr: _Growth, proxy: str, values: Any) -> None:
    """Title, x axis and the legend (below the panel: never over a point) of one panel."""
    sym, osym = SYMBOL[gr.axis], SYMBOL[gr.other]
    unit = "exponent" if gr.axis == "hidden_size" else "log10 per layer"
    ax.set_title(f"{PROXY_LABELS[proxy]} proxy", color=PROXY_COLORS[proxy])
    ax.set_xlabel(axis_label(sym, log=gr.axis == "hidden_size"))
    ax.grid(True, which="major", alpha=0.3)
    value_ticks(ax, "x", values, log2=gr.axis == "hidden_size")
    ax.legend(
        title=f"fixed {osym} ({unit})",
        loc="upper center",
        bbox_to_anchor=(0.5, -0.2),
        frameon=False,
        fontsize=10,
        title_fontsize=10,
    )


def _shared_y_axis(ax: Any, gr: _Growth) -> str:
    """The y axis both panels share (set on the first); how it is scaled, in words."""
    sym = SYMBOL[gr.axis]
    if gr.as_ratio:
        plain_log_axis(ax, "y", float(10.0 ** gr.span.min()), float(10.0 ** gr.span.max()))
        ax.set_ylabel(axis_label(f"B / B at smallest {sym}", log=True))
        return "log y axis shared by both panels"
    ax.set_ylabel(f"log10 (B / B at smallest {sym})")
    return "y axis (log10 of the ratio) shared by both panels"


def _growth_caption(gr: _Growth, how: str, ceiling_drawn: bool, flagged: bool) -> str:
    sym, osym = SYMBOL[gr.axis], SYMBOL[gr.other]
    slope_text = (
        "dashed: the fitted power law of growth.csv (slope = exponent of N)"
        if gr.axis == "hidden_size"
        else "dashed: the fitted exponential of growth.csv (slope = log10 of B per layer)"
    )
    return (
        f"Each colour is one fixed {osym}, divided by its value at the smallest {sym}; "
        f"{how}, so the steeper panel is the faster-growing proxy; {slope_text}."
        + (
            " Dash-dot (spectrum-adaptive panel): the rank ceiling sum sqrt(r N) + sqrt(L) of "
            "each model on the same scale (the proxy equals it when every matrix picks p* = 0)."
            if ceiling_drawn
            else ""
        )
        + (
            " Dotted, labelled 'resid df': a fit with fewer than 2 residual degrees of freedom "
            "(too few points to check the line; its SE rests on at most one residual)."
            if flagged
            else ""
        )
    )


@styled
def growth_figure(study: Study, axis: str, out_dir: Path) -> Figure | None:
    """Both proxies against ``axis`` at each fixed value of the other axis, each curve divided by
    its value at the smallest ``axis`` value, with growth.csv's fitted line (dashed) and slope;
    the two panels share one log y axis."""
    plt = require_matplotlib()
    gr = _growth_data(study, axis)
    if gr is None:
        return None
    fig, axes = plt.subplots(
        1, len(gr.proxies), figsize=(WIDTH, 4.4), sharey=True, squeeze=False, layout="constrained"
    )
    cmap = plt.get_cmap("viridis")
    flagged = ceiling_drawn = False
    for ax, (proxy, _col) in zip(axes[0], gr.proxies, strict=True):
        flagged = _draw_groups(ax, gr, study.growth, proxy, cmap) or flagged
        if proxy == "spectrum_adaptive":
            ceiling_drawn = _draw_ceilings(ax, gr, cmap) or ceiling_drawn
        _finish_panel(ax, gr, proxy, study.models[axis].unique())
    how = _shared_y_axis(axes[0][0], gr)
    sym, osym = SYMBOL[axis], SYMBOL[gr.other]
    fig.suptitle(f"Growth with {sym} at fixed {osym}")
    caption = _growth_caption(gr, how, ceiling_drawn, flagged)
    return save(fig, out_dir, f"growth_vs_{axis}", f"Both proxies against {sym}", caption)


@styled
def absolute_figure(study: Study, out_dir: Path) -> Figure | None:
    """log10 of both proxies per model (absolute values), one bar pair per model."""
    plt = require_matplotlib()
    m = study.models
    proxies = [(p, c) for p in PROXY_LABELS if (c := _proxy_column(m, p)) is not None]
    if not proxies or m.empty or not any(np.isfinite(_numbers(m[c])).any() for _, c in proxies):
        return None
    labels = [f"L{r.num_layers} N{r.hidden_size}" for r in m.itertuples()]
    x = np.arange(len(m))
    fig, ax = plt.subplots(figsize=(WIDTH, 3.9), layout="constrained")
    w = 0.8 / len(proxies)
    for j, (proxy, col) in enumerate(proxies):
        ax.bar(
            x + (j - (len(proxies) - 1) / 2) * w,
            _numbers(m[col]),
            w,
            label=PROXY_LABELS[proxy],
            color=PROXY_COLORS[proxy],
        )
    ax.set_xticks(x)
    ax.set_xticklabels(
        labels,
        rotation=60 if len(m) > 8 else 0,
        ha="right" if len(m) > 8 else "center",
        fontsize=10,
    )
    ax.set_ylabel("log10 B")
    ax.set_title("Both proxies per model")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside the bars
    return save(
        fig,
        out_dir,
        "proxies_per_model",
        "Both proxies per model",
        "Absolute values, log10 B (proxies: constants dropped); models ordered by L, then N.",
    )


#: The rank-ceiling diagnosis of models.csv (SPEC 10): the gap log10 ceiling - log10 B, the
#: share of matrices at p* = 0.
CEILING_SERIES = (
    ("spectrum_adaptive_ceiling_gap", "log10 ceiling − log10 B"),
    ("spectrum_adaptive_share_p0", "share of matrices at p* = 0"),
)


@styled
def ceiling_figure(study: Study, out_dir: Path) -> Figure | None:
    """The rank ceiling against N, one colour per L: the ceiling gap (0 = the proxy is its
    rank count) and the share of matrices at p* = 0 (1 = every matrix charged by its rank)."""
    plt = require_matplotlib()
    m = study.models
    series = [(c, lab) for c, lab in CEILING_SERIES if c in m.columns]
    if m.empty or not series or "hidden_size" not in m or "num_layers" not in m:
        return None
    depths = sorted(m["num_layers"].dropna().unique())
    cmap = plt.get_cmap("viridis")
    fig, axes = plt.subplots(
        1, len(series), figsize=(WIDTH, 3.9), squeeze=False, layout="constrained"
    )
    for ax, (col, label) in zip(axes[0], series, strict=True):
        for i, L in enumerate(depths):
            g = m[m["num_layers"] == L].sort_values("hidden_size")
            color = cmap(i / max(len(depths) - 1, 1) * 0.85)
            ax.plot(
                g["hidden_size"].to_numpy(float), _numbers(g[col]), "o", ms=5, color=color,
                label=f"L = {L}",
            )  # fmt: skip
        ax.axhline(0 if col.endswith("gap") else 1, color="#444", lw=0.9, ls="--")
        ax.set_xlabel(axis_label("N", log=True))
        ax.set_ylabel(label)
        value_ticks(ax, "x", m["hidden_size"].unique(), log2=True)
        ax.grid(True, alpha=0.3)
    legend_below(fig, axes[0], ncol=len(depths))
    fig.suptitle("The rank ceiling of the spectrum-adaptive proxy")
    return save(
        fig,
        out_dir,
        "rank_ceiling",
        "The rank ceiling against N",
        "Left: log10 of the rank ceiling sum sqrt(r N) + sqrt(L) minus log10 of the "
        "spectrum-adaptive proxy (dashed: 0, the proxy is its rank count); right: the share of "
        "matrices at p* = 0 (dashed: 1). Where the share reaches 1 the gap is 0 and the "
        "proxy's growth is the growth of the rank count.",
    )


def study_figures(study: Study, out_dir: Path) -> list[Figure]:
    """The paper's growth figures (vs N at fixed L, vs L at fixed N), the rank ceiling against
    N, then absolute values."""
    figs = [
        growth_figure(study, "hidden_size", out_dir),
        growth_figure(study, "num_layers", out_dir),
        ceiling_figure(study, out_dir),
        absolute_figure(study, out_dir),
    ]
    return [f for f in figs if f is not None]


@styled
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
    fig, axes = plt.subplots(1, 3, figsize=(WIDTH, 3.6), layout="constrained")
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
        ax.set_xlabel(axis_label("N", log=True))
        ax.set_title(label)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel(axis_label("mean norm", log=True))
    axes[0].legend(frameon=False)
    fig.suptitle(f"Norms against N at L = {L} (mean per matrix)")
    return save(
        fig,
        out_dir,
        f"norm_scaling_L{L}",
        f"Norms against N at L = {L}",
        "Mean over the matrices of each type; log-log axes.",
    )
