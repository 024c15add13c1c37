"""Figures of a trajectory (track.csv): the training metrics (train/test accuracy or loss, the
gap) and the mean p* per matrix type, then one panel per measure; every panel has its y label,
the grokking phase (when one is detected) is shaded in every panel. They draw the table's
columns as they are."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .style import WIDTH, Figure, clipped_note, plottable, require_matplotlib, save, styled

if TYPE_CHECKING:
    import pandas as pd

MATRIX_TYPES = ("QK", "OV", "M_in", "M_out")
PHASE_COLOR = "#f2c14e"


#: The unit of a measure whose track.csv value is a log10 (SPEC 9); others are plain values.
LOG10_UNITS = {
    "spectrum_adaptive": "log10 B",
    "norm_based": "log10 B",
    "log_spectral_product": "log10",
    "log_frobenius_product": "log10",
}


def measure_ylabel(name: str) -> str:
    """A measure panel's y label: the name, with "(log10 B)" / "(log10)" when its values are
    log10 values (so no reader takes 2.8 for B itself)."""
    unit = LOG10_UNITS.get(name)
    return f"{name}\n({unit})" if unit else name


def _mark(ax: Any, phase: tuple[float, float] | None) -> None:
    if phase is not None:
        ax.axvspan(phase[0], phase[1], color=PHASE_COLOR, alpha=0.25, lw=0)


def _metric_pairs(df: pd.DataFrame, gap: Any) -> list[tuple[str, list[str], str]]:
    """(title, columns, y label) of the metric panels."""
    panels = []
    accs = [c for c in df.columns if c.endswith(("_acc", "_accuracy"))]
    losses = [c for c in df.columns if c.endswith("_loss") or c == "loss"]
    if accs:
        panels.append(("Accuracy", accs, "accuracy [fraction]"))
    if losses:
        panels.append(("Loss", losses, "loss"))
    return panels


@styled
def metrics_figure(
    df: pd.DataFrame, out_dir: Path, gap: Any, phase: tuple[float, float] | None
) -> Figure | None:
    """Train/test accuracy, loss, the gap and mean p* per matrix type against step."""
    plt = require_matplotlib()
    steps = df["step"].to_numpy(dtype=float)
    panels: list[tuple[str, list[str], str]] = _metric_pairs(df, gap)
    if gap is not None:
        panels.append(("Generalization gap", ["__gap__"], gap.label.replace("gap = ", "gap: ")))
    ptypes = [f"{t}_mean_p_star" for t in MATRIX_TYPES if f"{t}_mean_p_star" in df.columns]
    if ptypes:
        panels.append(("Mean p*", ptypes, "mean p* per matrix type"))
    if not panels:
        return None
    cols = 2 if len(panels) > 1 else 1
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(WIDTH, 3.0 * rows + 0.4), squeeze=False, layout="constrained"
    )
    clipped = 0
    for ax, (title, columns, ylabel) in zip(axes.flat, panels, strict=False):
        for k, c in enumerate(columns):
            y, n = plottable(gap.values(df) if c == "__gap__" else df[c].to_numpy(dtype=float))
            clipped += n
            label = c.replace("_mean_p_star", "") if c != "__gap__" else None
            ax.plot(steps, y, lw=1.6, color=f"C{k}" if c != "__gap__" else "#c0392b", label=label)
        _mark(ax, phase)
        ax.set_title(title, loc="left")
        ax.set_ylabel(ylabel)
        ax.set_xlabel("step")
        ax.grid(True, alpha=0.3)
        if len(columns) > 1:  # above the axes, right of the title: never over a curve
            ax.legend(
                frameon=False,
                fontsize=9,
                ncol=len(columns),
                loc="lower right",
                bbox_to_anchor=(1.0, 1.0),
                borderaxespad=0.1,
                handlelength=1.2,
                columnspacing=0.8,
            )
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.suptitle("Training metrics" + (" (shaded: grokking phase)" if phase else ""))
    cap = "Train and test metrics, the gap and the mean p* of each matrix type against step."
    if phase:
        cap += (
            f" Shaded: the grokking phase, from step {phase[0]:,.0f} (train accuracy "
            f"reached) to step {phase[1]:,.0f} (test accuracy's half-change step)."
        )
    cap += clipped_note(clipped, "track.csv")
    return save(fig, out_dir, "metrics", "Training metrics and mean p*", cap)


@styled
def trajectory_figure(
    df: pd.DataFrame,
    out_dir: Path,
    names: Sequence[str],
    phase: tuple[float, float] | None = None,
    test_step: float | None = None,
) -> Figure:
    """One panel per measure against step (y label: the measure), two columns; the grokking
    phase shaded and the test metric's half-change step drawn as a dashed line."""
    import numpy as np

    plt = require_matplotlib()
    constant = [
        n for n in names if np.nanmax(df[n].to_numpy(float)) == np.nanmin(df[n].to_numpy(float))
    ]
    names = [n for n in names if n not in constant] or list(names)
    cols = 2 if len(names) > 1 else 1
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(WIDTH, 2.5 * rows + 0.5), squeeze=False, layout="constrained"
    )
    steps = df["step"].to_numpy(dtype=float)
    clipped = 0
    for ax, name in zip(axes.flat, names, strict=False):
        y, n = plottable(df[name].to_numpy(dtype=float))
        clipped += n
        ax.plot(steps, y, color="#3b6fb6", lw=1.5)
        _mark(ax, phase)
        if test_step is not None:
            ax.axvline(test_step, color="#c0392b", lw=1.0, ls="--")
        ax.set_ylabel(measure_ylabel(name), fontsize=11)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    for ax in axes[-1, :]:
        ax.set_xlabel("step")
    if len(names) % cols and rows > 1:
        axes[-2, -1].set_xlabel("step")
    fig.suptitle("Measures during training")
    cap = "Each measure (y label, with its unit) against step."
    if constant and names != constant:
        cap += f" Constant over the run (not drawn): {', '.join(constant)}."
    if test_step is not None:
        cap += f" Dashed red: the test metric's half-change step ({test_step:,.0f})."
    if phase:
        cap += " Shaded: the grokking phase."
    cap += clipped_note(clipped, "track.csv")
    return save(fig, out_dir, "trajectory", "Measures during training", cap)
