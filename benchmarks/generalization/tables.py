"""Print the markdown tables of README.md from results/<task>/ (correlate output) and zoos/.

Usage: python benchmarks/generalization/tables.py   (reads only; writes nothing)
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent


def f(x: float, nd: int = 2) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.{nd}f}"


def zoo_summary(task: str) -> str:
    z = pd.read_csv(HERE / "zoos" / task / "zoo.csv")
    meta = json.loads((HERE / "zoos" / task / "zoo.json").read_text())
    conv = z[z["converged"]]
    gap = conv["train_acc"] - conv["test_acc"]
    return (
        f"{len(z)} of {meta['num_models']} grid models trained, {len(conv)} converged "
        f"(train CE <= {meta['target_loss']}); gap (train - test accuracy) of the converged: "
        f"min {gap.min():.3f}, median {gap.median():.3f}, max {gap.max():.3f}; "
        f"training wall time {z['wall_s'].sum() / 60:.1f} min summed over models"
    )


def correlation_table(task: str) -> str:
    c = pd.read_csv(HERE / "results" / task / "correlation.csv")
    psi_cols = [k for k in c.columns if k.startswith("psi_") and k not in ("psi_low", "psi_high")]
    head = [
        "measure",
        "n",
        "tau [95%]",
        "Psi [95%]",
        *[k.removeprefix("psi_") for k in psi_cols],
        "CMI (S)",
        "sign-err",
        "robust",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in c.to_dict("records"):
        row = [
            f"`{r['measure']}`",
            str(r["n_models"]),
            f"{f(r['kendall_tau'])} [{f(r['tau_low'])}, {f(r['tau_high'])}]",
            f"{f(r['psi'])} [{f(r['psi_low'])}, {f(r['psi_high'])}]",
            *[f(r[k]) for k in psi_cols],
            f"{r['cmi']:.3f} ({r['cmi_axes'] if isinstance(r['cmi_axes'], str) else '-'})"
            if not pd.isna(r["cmi"])
            else "",
            f"{r['sign_error']:.2f}" if not pd.isna(r["sign_error"]) else "",
            (
                f"{r['sign_error_robust']:.2f} ({r['sign_error_robust_axis']})"
                if not pd.isna(r["sign_error_robust"])
                else ""
            ),
        ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    for task in sorted(p.name for p in (HERE / "results").iterdir() if p.is_dir()):
        print(f"## {task}\n\n{zoo_summary(task)}\n\n{correlation_table(task)}\n")
