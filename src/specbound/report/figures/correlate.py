"""Figures of a correlation study: each measure against the gap (small multiples, coloured by
the architecture when the measure forms one stripe per architecture, else by the axis with the
largest |psi_i|), and the sorted tau / Psi / tau_fixed_n chart with its intervals. They draw the
Correlation's tables (models.csv, correlation.csv) as they are; labels are plain text."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...measures import get_measure, measure_names
from ...naming import natural_key
from ...studies.correlate.ceiling import (
    ARCHITECTURE_COLUMNS,
    CEILING_THRESHOLD,
    at_ceiling,
    stripes_share,
)
from ..numbers import as_float, interval, is_undefined
from .style import (
    SMALL,
    WIDTH,
    Figure,
    plain_log_axis,
    plottable,
    require_matplotlib,
    save,
    styled,
)

if TYPE_CHECKING:
    from ...studies.correlate.result import Correlation


def color_axis(row: Any, axes: list[str]) -> str | None:
    """The axis with the largest |psi_i| of a correlation row (None when no psi_i is defined)."""
    best, best_axis = -1.0, None
    for a in axes:
        v = as_float(row.get(f"psi_{a}"))
        if not math.isnan(v) and abs(v) > best:
            best, best_axis = abs(v), a
    return best_axis


def colouring(result: Correlation, measure: str) -> tuple[str | None, str]:
    """(what colours the scatter: "architecture", an axis name or None; why, in words)."""
    r2 = stripes_share(result.models, measure)
    if r2 is not None:
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


def value_key(v: Any) -> tuple[Any, ...]:
    """Sort key of an axis value: numbers (or text that parses as one) in numeric order first
    (train_size 75 < 200 < 600, lr 0.001 < 0.01), then other text in natural order."""
    if v is None:
        return (2, ())
    try:
        f = float(v)
    except (TypeError, ValueError):
        return (1, natural_key(str(v)))
    return (0, f) if not math.isnan(f) else (2, ())


def ordered_groups(frame: Any) -> tuple[np.ndarray, list[str]]:
    """(code of each row, the label of each code) for the rows of ``frame`` (one or more
    columns), codes in numeric order of the values (:func:`value_key`, column by column);
    labels ``a x b`` for several columns."""
    rows = [tuple(None if is_undefined(x) else x for x in r) for r in frame.itertuples(index=False)]
    uniq = sorted(set(rows), key=lambda t: tuple(value_key(x) for x in t))
    index = {t: i for i, t in enumerate(uniq)}
    codes = np.array([index[t] for t in rows], dtype=int)
    return codes, [" x ".join(str(x) for x in t) for t in uniq]


#: A linear measure spanning more decades than this (positive values) gets a log axis.
LOG_DECADES = 2.0


def wants_log(values: np.ndarray) -> tuple[float, float] | None:
    """(lo, hi) of the finite values when all are positive and span more than LOG_DECADES
    decades (the axis is then logarithmic), else None."""
    v = values[np.isfinite(values)]
    if v.size < 2 or float(v.min()) <= 0:
        return None
    lo, hi = float(v.min()), float(v.max())
    return (lo, hi) if math.log10(hi / lo) > LOG_DECADES else None


def ceiling_marks(result: Correlation, measure: str) -> np.ndarray:
    """Which models a scatter of ``measure`` marks as at the rank ceiling (studies'
    ``ceiling.at_ceiling``): only in a scatter of a spectrum-adaptive measure, none elsewhere
    or without the column."""
    at = at_ceiling(result.models) if measure.startswith("spectrum_adaptive") else None
    return at if at is not None else np.zeros(len(result.models), dtype=bool)


@dataclass
class _Colours:
    """How a scatter is coloured: the code of each model, the label of each code, the legend's
    title, and whether the codes take the ten tab10 colours (else a viridis ramp)."""

    by: str | None
    codes: np.ndarray
    values: list[str]
    title: str

    @property
    def few(self) -> bool:
        return len(self.values) <= 10

    def color(self, cmap: Any, k: int) -> Any:
        if self.by is None:
            return "#3b6fb6"
        return cmap(k if self.few else k / max(len(self.values) - 1, 1))


def _colours(result: Correlation, by: str | None) -> _Colours:
    """The colouring of a scatter ``by`` the architecture cells, an axis or nothing (None)."""
    m = result.models
    if by is None:
        return _Colours(by, np.zeros(len(m), dtype=int), [""], "")
    cols = [c for c in ARCHITECTURE_COLUMNS if c in m.columns] if by == "architecture" else [by]
    codes, values = ordered_groups(m[cols])
    return _Colours(by, codes, values, " x ".join(cols))


def _scatter(ax: Any, plt: Any, x: np.ndarray, y: np.ndarray, col: _Colours, at: Any) -> None:
    """The points, one colour per code; models at the rank ceiling (``at``) as crosses."""
    cmap = plt.get_cmap("tab10" if col.few else "viridis")
    for k, v in enumerate(col.values):
        color = col.color(cmap, k)
        sel = (col.codes == k) & ~at
        ax.scatter(x[sel], y[sel], s=24, color=color, label=str(v) if col.by is not None else None)
        if at.any():
            sel = (col.codes == k) & at
            ax.scatter(x[sel], y[sel], s=46, color=color, marker="x", linewidths=1.6)
    if at.any():
        ax.scatter([], [], s=46, color="#333", marker="x", label="at the rank ceiling")
    if ax.get_legend_handles_labels()[1] and (col.few or at.any()):
        ax.legend(  # outside the axes, right of them: never over a point
            title=col.title if col.by is not None and col.few else None,
            fontsize=9,
            title_fontsize=9,
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
            frameon=False,
        )


def _marks_note(clipped: int, at: Any, col: _Colours) -> str:
    """The caption's notes on what the marks mean: values clipped for drawing, the crosses at
    the rank ceiling, a colour ramp."""
    why = ""
    if clipped:
        why += (
            f"; {clipped} values beyond ±1e300 are drawn at ±1e300 (clipped for "
            "drawing only: models.csv holds them)"
        )
    if at.any():
        why += (
            f"; x: {int(at.sum())} models at the rank ceiling (ceiling gap < "
            f"{CEILING_THRESHOLD:g}: the proxy is a rank count there)"
        )
    if col.by is not None and not col.few:
        why += (
            f"; colour over the {len(col.values)} values of {col.title}: dark = low, light = high"
        )
    return why


def _x_axis(ax: Any, measure: str, x: np.ndarray, clipped: bool) -> tuple[bool, str]:
    """The x axis: log when a linear measure spans more than LOG_DECADES decades (not when
    values were clipped). (Whether it is log, the caption's note on it.)"""
    logged = x_label(measure).endswith("(log10)")
    span = wants_log(x) if not logged and not clipped else None  # clipped: stays linear
    if span is not None:
        plain_log_axis(ax, "x", *span, max_ticks=5)
    ax.set_xlabel(x_label(measure) if span is None else f"{measure} (log scale)")
    if span is None:
        return False, ""
    return True, f"; log x axis (the values span more than {LOG_DECADES:g} decades)"


def _tau_text(row: Any) -> tuple[float, str]:
    """(Kendall tau of a correlation row, its interval in words or "")."""
    tau, lo, hi = (
        as_float(row.get(k)) for k in ("kendall_tau", "kendall_tau_low", "kendall_tau_high")
    )
    return tau, ("" if math.isnan(lo) or math.isnan(hi) else f" {interval(lo, hi)}")


@styled
def measure_figure(result: Correlation, measure: str, out_dir: Path) -> Figure:
    """The measure against the gap (``colouring`` decides the colours)."""
    import pandas as pd

    plt = require_matplotlib()
    m = result.models
    row = result.correlation.set_index("measure").loc[measure]
    by, why = colouring(result, measure)
    x, clipped = plottable(pd.to_numeric(m[measure], errors="coerce").to_numpy(float))
    y, clipped_y = plottable(pd.to_numeric(m["gap"], errors="coerce").to_numpy(float))
    fig, ax = plt.subplots(figsize=(SMALL, 3.8), layout="constrained")
    at = ceiling_marks(result, measure)
    col = _colours(result, by)
    _scatter(ax, plt, x, y, col, at)
    why += _marks_note(clipped + clipped_y, at, col)
    log_x, note = _x_axis(ax, measure, x, bool(clipped))
    why += note
    ax.set_ylabel(f"gap ({result.gap})")
    tau, iv = _tau_text(row)
    ax.set_title(f"{measure}\ntau {tau:.2f}{iv}" if not math.isnan(tau) else measure, fontsize=12)
    ax.grid(alpha=0.3)
    if not log_x:
        ax.locator_params(axis="x", nbins=5)
    said = f", τ {tau:.2f}{iv}" if not math.isnan(tau) else ""
    title = f"{measure} against the gap ({result.gap}), one point per model{said}"
    return save(fig, out_dir, f"measure_{measure}", title, why)


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
    c["_t"] = c["kendall_tau"].map(as_float)
    c = c.sort_values("_t", ascending=True, na_position="first", kind="stable")
    names = [str(n) for n in c["measure"]]
    y = np.arange(len(names))
    stats = [(s, lab) for s, lab in STATS if s in c.columns and c[s].map(as_float).notna().any()]
    fig, axs = plt.subplots(
        1,
        len(stats),
        figsize=(WIDTH, 0.36 * len(names) + 1.8),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    for ax, (col, label) in zip(axs[0], stats, strict=True):
        v = c[col].map(as_float).to_numpy(float)
        lo = c.get(f"{col}_low", c[col]).map(as_float).to_numpy(float)
        hi = c.get(f"{col}_high", c[col]).map(as_float).to_numpy(float)
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
