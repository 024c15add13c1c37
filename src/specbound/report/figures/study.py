"""The forest plot of a multi-zoo study (``specbound study``): one row per primary contrast,
point = delta, line = its 95% paired bootstrap interval, colour = the verdict, a vertical line
at 0. The family rows (independent folders, Holm over them) are drawn in the upper panel, the
secondary rows (folders sharing trained models with the family) in a separate panel below,
never mixed with them. Labels are ``folder · contrast``, plain text."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..numbers import as_float
from .style import WIDTH, Figure, legend_below, require_matplotlib, save, styled

if TYPE_CHECKING:
    import pandas as pd

#: The colour of each verdict word (studies.correlate.verdicts.VERDICTS); others are grey.
VERDICT_COLORS = {
    "better": "#2e7d32",
    "worse": "#c62828",
    "borderline": "#e08600",
    "undetermined": "#6b6b6b",
    "insufficient evidence": "#a9a9a9",
    "not comparable": "#a9a9a9",
}
OTHER_COLOR = "#a9a9a9"


def forest_rows(primary: pd.DataFrame) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows the forest plot draws, (family, secondary), each in the table's order: a dict
    with ``label`` (``folder name · contrast``), ``delta``, ``low``, ``high`` (NaN when
    undefined) and ``verdict``. A table without ``independence`` (protocol v3) is all family."""
    family: list[dict[str, Any]] = []
    secondary: list[dict[str, Any]] = []
    for r in primary.to_dict("records"):
        row = {
            "label": f"{Path(str(r.get('folder', ''))).name} · {r.get('contrast', '')}",
            "delta": as_float(r.get("delta")),
            "low": as_float(r.get("low")),
            "high": as_float(r.get("high")),
            "verdict": str(r.get("verdict", "")),
        }
        (secondary if str(r.get("independence", "family")) == "secondary" else family).append(row)
    return family, secondary


def _panel(ax: Any, rows: list[dict[str, Any]], title: str) -> None:
    y = np.arange(len(rows))[::-1]  # the table's first row on top
    for yi, r in zip(y, rows, strict=True):
        color = VERDICT_COLORS.get(r["verdict"], OTHER_COLOR)
        if math.isfinite(r["low"]) and math.isfinite(r["high"]):
            ax.plot([r["low"], r["high"]], [yi, yi], color=color, lw=2, solid_capstyle="butt")
        if math.isfinite(r["delta"]):
            ax.plot([r["delta"]], [yi], "o", color=color, ms=6, label=r["verdict"])
    ax.axvline(0, color="#444", lw=0.9)
    ax.set_yticks(y)
    ax.set_yticklabels([r["label"] for r in rows], fontsize=10)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_title(title, fontsize=12, loc="left")
    ax.grid(alpha=0.3, axis="x")


@styled
def forest_figure(primary: pd.DataFrame, out_dir: Path) -> Figure | None:
    """The forest plot of :func:`forest_rows` (None without primary rows): the family panel,
    then the secondary panel when there are secondary rows; the verdict legend below both."""
    family, secondary = forest_rows(primary)
    if not family and not secondary:
        return None
    plt = require_matplotlib()
    panels = [(rows, t) for rows, t in (
        (family, "Independent zoos: the study's family (Holm over these rows)"),
        (secondary, "Secondary folders (share trained models with the family; not counted)"),
    ) if rows]  # fmt: skip
    heights = [len(rows) + 1.5 for rows, _ in panels]
    fig, axs = plt.subplots(
        len(panels),
        1,
        figsize=(WIDTH, 0.32 * sum(heights) + 1.6),
        sharex=True,
        squeeze=False,
        height_ratios=heights,
        layout="constrained",
    )
    for ax, (rows, title) in zip(axs[:, 0], panels, strict=True):
        _panel(ax, rows, title)
    axs[-1, 0].set_xlabel("delta = statistic(first measure) − statistic(second measure)")
    legend_below(fig, axs[:, 0], ncol=5)
    n_undef = sum(1 for rows, _ in panels for r in rows if not math.isfinite(r["delta"]))
    return save(
        fig,
        out_dir,
        "forest",
        "Primary contrasts: delta with its 95% interval, by verdict",
        "One row per primary contrast (folder · contrast); point: delta, line: the 95% paired "
        "bootstrap interval, colour: the verdict; positive delta = the first measure ranks the "
        "gap better. Secondary folders are drawn in their own panel and are not part of the "
        "study's tally."
        + (
            f" {n_undef} rows without a defined delta are labelled but not drawn."
            if n_undef
            else ""
        ),
    )
