"""The forest plot of a multi-zoo study (``specbound study``): one row per primary contrast,
point = delta, line = its 95% paired bootstrap interval, marker and colour = the verdict
(Okabe-Ito, a shape per verdict), a vertical line at 0, the legend on top. The family rows
(independent folders, Holm over them) are drawn in the upper panels, one per statistic (τ_n,
τ_arch), the secondary rows (folders sharing trained models with the family) in panels below,
never mixed with them. Labels are ``folder: measure − versus``, plain text."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..numbers import as_float
from .style import WIDTH, Figure, require_matplotlib, save, styled

if TYPE_CHECKING:
    import pandas as pd

#: The colour and marker of each verdict word (studies.protocol.verdicts.VERDICTS): the
#: Okabe-Ito palette (told apart under the common colour-vision deficiencies) and a shape per
#: verdict, so no verdict is told by colour alone; others grey dots.
VERDICT_STYLE = {
    "better": ("#0072B2", "^"),  # blue, triangle up
    "worse": ("#D55E00", "v"),  # vermilion, triangle down
    "borderline": ("#E69F00", "D"),  # orange, diamond
    "undetermined": ("#555555", "o"),  # dark grey, circle
    "insufficient evidence": ("#999999", "s"),  # grey, square
    "not comparable": ("#999999", "x"),
}
OTHER_STYLE = ("#999999", "o")
#: The statistics of the primary contrasts, each on its own panels, in this order.
STATISTIC_LABELS = {
    "tau_fixed_n": "τ_n (strata of equal n)",
    "tau_arch": "τ_arch (cells of equal depth, width and n)",
}


def forest_rows(primary: pd.DataFrame) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows the forest plot draws, (family, secondary), each in the table's order: a dict
    with ``label`` (``folder: measure − versus``, the two measures compared), ``statistic``,
    ``delta``, ``low``, ``high`` (NaN when undefined) and ``verdict``. A table without
    ``independence`` (protocol v3) is all family."""
    family: list[dict[str, Any]] = []
    secondary: list[dict[str, Any]] = []
    for r in primary.to_dict("records"):
        row = {
            "label": f"{Path(str(r.get('folder', ''))).name}: "
            f"{r.get('measure', '')} − {r.get('versus', '')}",
            "statistic": str(r.get("statistic", "")),
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
        color, marker = VERDICT_STYLE.get(r["verdict"], OTHER_STYLE)
        if math.isfinite(r["low"]) and math.isfinite(r["high"]):
            ax.plot([r["low"], r["high"]], [yi, yi], color=color, lw=2, solid_capstyle="butt")
        if math.isfinite(r["delta"]):
            ax.plot([r["delta"]], [yi], marker, color=color, ms=7, label=r["verdict"])
    ax.axvline(0, color="#444", lw=0.9)
    ax.set_yticks(y)
    ax.set_yticklabels([r["label"] for r in rows], fontsize=9)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_title(title, fontsize=10.5, loc="left")
    ax.grid(alpha=0.3, axis="x")
    ax.tick_params(labelbottom=True)


def _by_statistic(rows: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """``rows`` split by statistic (τ_n first, then τ_arch, then any other), each in order."""
    order = [*STATISTIC_LABELS, *dict.fromkeys(r["statistic"] for r in rows)]
    return [
        (st, [r for r in rows if r["statistic"] == st])
        for st in dict.fromkeys(order)
        if any(r["statistic"] == st for r in rows)
    ]


@styled
def forest_figure(primary: pd.DataFrame, out_dir: Path) -> Figure | None:
    """The forest plot of :func:`forest_rows` (None without primary rows): one panel per
    statistic of the family, then one per statistic of the secondary rows; each panel its own
    x axis with numbers; the verdict legend (colour and marker) above all panels."""
    family, secondary = forest_rows(primary)
    if not family and not secondary:
        return None
    plt = require_matplotlib()
    panels = []
    for rows, who in (
        (family, "Independent zoos (the study's family)"),
        (secondary, "Secondary folders (share trained models; not counted)"),
    ):
        for st, part in _by_statistic(rows):
            panels.append((part, f"{who}\ndelta of {STATISTIC_LABELS.get(st, st)}"))
    heights = [len(rows) + 3.0 for rows, _ in panels]
    fig, axs = plt.subplots(
        len(panels),
        1,
        figsize=(WIDTH, 0.3 * sum(heights) + 1.4),
        squeeze=False,
        height_ratios=heights,
        layout="constrained",
    )
    for ax, (rows, title) in zip(axs[:, 0], panels, strict=True):
        _panel(ax, rows, title)
        ax.set_xlabel("delta = statistic(first measure) − statistic(second measure)", fontsize=9)
    handles = [
        plt.Line2D([], [], color=c, marker=m, lw=2, ms=7, label=v)
        for v, (c, m) in VERDICT_STYLE.items()
        if any(r["verdict"] == v for r in family + secondary)
    ]
    fig.legend(
        handles=handles, loc="outside upper center", frameon=False, ncol=min(len(handles), 5)
    )
    n_undef = sum(1 for rows, _ in panels for r in rows if not math.isfinite(r["delta"]))
    return save(
        fig,
        out_dir,
        "forest",
        "Primary contrasts: delta with its 95% interval, by verdict",
        "One row per primary contrast, named by its folder and the two measures compared "
        "(first − second); point: delta, line: the 95% paired bootstrap interval; the verdict "
        "by marker and colour (legend at the top); positive delta = the first measure ranks "
        "the gap better. τ_n and τ_arch rows are on separate panels, each with its own axis. "
        "Secondary folders are drawn in their own panels and are not part of the study's tally."
        + (
            f" {n_undef} rows without a defined delta are labelled but not drawn."
            if n_undef
            else ""
        ),
    )
