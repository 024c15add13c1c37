"""Figures of a correlation study: each measure against the gap (small multiples, coloured by
the architecture when the measure forms one stripe per architecture, else by the axis with the
largest |psi_i|), and the sorted tau / Psi / tau_fixed_n chart with its intervals. They draw the
Correlation's tables (models.csv, correlation.csv) as they are; labels are plain text."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...measures import get_measure, measure_names
from ...studies.correlate.stats import cell_r2
from .style import SMALL, WIDTH, Figure, plottable, require_matplotlib, save, styled

if TYPE_CHECKING:
    from ...studies.correlate.result import Correlation

#: A measure forms stripes when architecture cells explain at least this share of its variance.
STRIPES = 0.9
ARCHITECTURE_COLUMNS = ("depth", "width")


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def color_axis(row: Any, axes: list[str]) -> str | None:
    """The axis with the largest |psi_i| of a correlation row (None when no psi_i is defined)."""
    best, best_axis = -1.0, None
    for a in axes:
        v = _float(row.get(f"psi_{a}"))
        if not math.isnan(v) and abs(v) > best:
            best, best_axis = abs(v), a
    return best_axis


def architecture_share(result: Correlation, measure: str) -> float:
    """R^2 of the measure on the architecture cells (``stats.cell_r2``); NaN without them."""
    import pandas as pd

    m = result.models
    cells = [c for c in ARCHITECTURE_COLUMNS if c in m.columns]
    if not cells or measure not in m.columns:
        return math.nan
    ids = np.stack([pd.factorize(m[c], use_na_sentinel=False)[0] for c in cells], 1)
    return cell_r2(pd.to_numeric(m[measure], errors="coerce").to_numpy(float), ids)


def colouring(result: Correlation, measure: str) -> tuple[str | None, str]:
    """(what colours the scatter: "architecture", an axis name or None; why, in words)."""
    r2 = architecture_share(result, measure)
    if not math.isnan(r2) and r2 >= STRIPES:
        return "architecture", (
            f"coloured by architecture: depth x width cells explain {100 * r2:.0f}% of its "
            "variance (one stripe per architecture)"
        )
    row = result.correlation.set_index("measure").loc[measure].to_dict()
    axis = color_axis(row, result.axes)
    return axis, (f"coloured by {axis} (largest |psi_i|)" if axis else "")


#: Suffixes of measures whose values are already log10 (the bound forms and margin forms).
_LOG10_SUFFIXES = ("_per_sqrt_n", "_per_margin_sqrt_n", "_over_margin")


def x_label(measure: str) -> str:
    """``measure (log10)`` when the measure's values are log10 (SPEC 9's ``log10`` measures,
    their n- and margin-normalized forms, ``sample_size_only``), else ``measure (linear)``."""
    logged = (
        (measure in measure_names() and get_measure(measure).log10)
        or measure.endswith(_LOG10_SUFFIXES)
        or measure == "sample_size_only"
    )
    return f"{measure} ({'log10' if logged else 'linear'})"


@styled
def measure_figure(result: Correlation, measure: str, out_dir: Path) -> Figure:
    """The measure against the gap (``colouring`` decides the colours)."""
    import pandas as pd

    plt = require_matplotlib()
    m = result.models
    row = result.correlation.set_index("measure").loc[measure]
    by, why = colouring(result, measure)
    x = pd.to_numeric(m[measure], errors="coerce").to_numpy(float)
    y = pd.to_numeric(m["gap"], errors="coerce").to_numpy(float)
    x, clipped = plottable(x)
    y, clipped_y = plottable(y)
    if clipped + clipped_y:
        why += (
            f"; {clipped + clipped_y} values beyond ±1e300 are drawn at ±1e300 (clipped for "
            "drawing only: models.csv holds them)"
        )
    fig, ax = plt.subplots(figsize=(SMALL, 3.8), layout="constrained")
    if by is None:
        ax.scatter(x, y, s=24, color="#3b6fb6")
    else:
        if by == "architecture":
            cells = [c for c in ARCHITECTURE_COLUMNS if c in m.columns]
            keys = m[cells].astype(str).agg(" x ".join, axis=1)
            title = " x ".join(cells)
        else:
            keys, title = m[by].astype(str), by
        codes, values = pd.factorize(keys, sort=True, use_na_sentinel=False)
        few = len(values) <= 10
        cmap = plt.get_cmap("tab10" if few else "viridis")
        for k, v in enumerate(values):
            sel = codes == k
            color = cmap(k if few else k / max(len(values) - 1, 1))
            ax.scatter(x[sel], y[sel], s=24, color=color, label=str(v))
        if few:
            ax.legend(title=title, fontsize=9, title_fontsize=9, loc="best", frameon=False)
        else:
            why += f"; colour over the {len(values)} values of {title}: dark = low, light = high"
    ax.set_xlabel(x_label(measure))
    ax.set_ylabel(f"gap ({result.gap})")
    tau, lo, hi = (
        _float(row.get(k)) for k in ("kendall_tau", "kendall_tau_low", "kendall_tau_high")
    )
    iv = "" if math.isnan(lo) or math.isnan(hi) else f" [{lo:.2f}, {hi:.2f}]"
    ax.set_title(f"{measure}\ntau {tau:.2f}{iv}" if not math.isnan(tau) else measure, fontsize=12)
    ax.grid(alpha=0.3)
    ax.locator_params(axis="x", nbins=5)
    return save(fig, out_dir, f"measure_{measure}", measure, why)


STATS = (
    ("kendall_tau", "Kendall tau"),
    ("psi", "granulated Psi"),
    ("tau_fixed_n", "tau at fixed n"),
)


@styled
def tau_psi_figure(result: Correlation, out_dir: Path) -> Figure:
    """tau, Psi and tau at fixed n of every measure with their bootstrap intervals, measures
    sorted by tau (largest on top)."""
    plt = require_matplotlib()
    c = result.correlation.copy()
    c["_t"] = c["kendall_tau"].map(_float)
    c = c.sort_values("_t", ascending=True, na_position="first", kind="stable")
    names = [str(n) for n in c["measure"]]
    y = np.arange(len(names))
    stats = [(s, lab) for s, lab in STATS if s in c.columns and c[s].map(_float).notna().any()]
    fig, axs = plt.subplots(
        1,
        len(stats),
        figsize=(WIDTH, 0.36 * len(names) + 1.8),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    for ax, (col, label) in zip(axs[0], stats, strict=True):
        v = c[col].map(_float).to_numpy(float)
        lo = c.get(f"{col}_low", c[col]).map(_float).to_numpy(float)
        hi = c.get(f"{col}_high", c[col]).map(_float).to_numpy(float)
        err = np.nan_to_num(np.vstack([v - lo, hi - v]))
        ax.errorbar(v, y, xerr=np.maximum(err, 0), fmt="o", color="#3b6fb6", capsize=3, ms=5)
        ax.axvline(0, color="#888", lw=0.9)
        ax.set_xlabel(label)
        ax.set_xlim(-1.05, 1.05)
        ax.grid(alpha=0.3, axis="x")
    axs[0][0].set_yticks(y)
    axs[0][0].set_yticklabels(names, fontsize=10)
    fig.suptitle("Rank correlation with the gap, sorted by tau (bars: 95% bootstrap intervals)")
    return save(
        fig,
        out_dir,
        "tau_psi",
        "Kendall tau, granulated Psi and tau at fixed n of every measure",
        "Points: values over all models; bars: 95% intervals over "
        f"{result.bootstrap:,} bootstrap draws of the configurations (seed {result.seed}); a "
        "bar that crosses 0 means the sign is not established."
        + (
            ""
            if len(stats) == len(STATS)
            else " A statistic undefined for every measure is not drawn."
        ),
    )
