"""Print the markdown tables of README.md from results/<task>/ (correlate output) and zoos/.

Usage:
    python benchmarks/generalization/tables.py              # the committed tables as they are
    python benchmarks/generalization/tables.py --recompute  # protocol v2 from models.csv
    python benchmarks/generalization/tables.py --check README.md
        # exit 1 unless every measure row of README.md's tables is a row printed here

Reads only; writes nothing. A results folder written by protocol v2 (correlation.csv with
``kendall_tau_low``, differences.csv) is printed as v2 tables: tau, Psi, tau_fixed_n and
psi_fixed_n with their intervals, each psi_i with its groups and pairs, the per-axis sign-errors
with their pairs, the verdict, and the paired differences against the baselines. An older
(protocol v1) folder is printed as it was. ``--recompute`` evaluates protocol v2 on the
committed models.csv (no model is analyzed again: the measures are read from the file), with
the axes of correlate.json less ``seed`` (seeds are replicates).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent


def f(x: float | None, nd: int = 2) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.{nd}f}"


def iv(r: dict, stat: str) -> str:
    """``point [low, high]`` of a statistic."""
    if pd.isna(r.get(stat)):
        return "undefined"
    return f"{f(r[stat])} [{f(r.get(f'{stat}_low'))}, {f(r.get(f'{stat}_high'))}]"


def zoo_of(folder: Path) -> str:
    """The zoo a results folder was computed on: its correlate.json's manifest folder (e.g.
    results/digits-v2-data/ is on zoos/digits-v2), else the folder name up to "-include"."""
    meta = json.loads((folder / "correlate.json").read_text())
    manifest = Path(str(meta.get("manifest", "")))
    if manifest.name == "zoo.csv" and (HERE / "zoos" / manifest.parent.name).is_dir():
        return manifest.parent.name
    return folder.name.split("-include")[0]


def zoo_summary(base: str) -> str:
    z = pd.read_csv(HERE / "zoos" / base / "zoo.csv")
    meta = json.loads((HERE / "zoos" / base / "zoo.json").read_text())
    conv = z[z["converged"]]
    gap = conv["train_acc"] - conv["test_acc"]
    return (
        f"{len(z)} of {meta['num_models']} grid models trained, {len(conv)} converged "
        f"(train CE <= {meta['target_loss']}); gap (train - test accuracy) of the converged: "
        f"min {gap.min():.3f}, median {gap.median():.3f}, max {gap.max():.3f}; "
        f"training wall time {z['wall_s'].sum() / 60:.1f} min summed over models"
    )


def table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def correlation_table_v1(c: pd.DataFrame) -> str:
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
    rows = []
    for r in c.to_dict("records"):
        rows.append(
            [
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
        )
    return table(head, rows)


def correlation_tables_v2(c: pd.DataFrame, axes: list[str]) -> str:
    """Three tables: rank statistics, psi_i with evidence, sign-errors with pairs + verdict."""
    rank = [
        [
            f"`{r['measure']}`",
            f"{r['n_models']} ({r['n_configurations']})",
            iv(r, "kendall_tau"),
            iv(r, "psi"),
            iv(r, "tau_fixed_n"),
            iv(r, "psi_fixed_n"),
            f"{r['cmi']:.3f} ({r['cmi_axes']})" if not pd.isna(r["cmi"]) else "undefined",
        ]
        for r in c.to_dict("records")
    ]
    out = [
        table(
            ["measure", "models (configs)", "tau", "Psi", "tau_n", "Psi_n", "CMI (S)"],
            rank,
        )
    ]
    psi_rows = [
        [f"`{r['measure']}`"]
        + [
            f"{f(r[f'psi_{a}'])} ({int(r[f'psi_{a}_groups'])} g, {int(r[f'psi_{a}_pairs'])} p)"
            for a in axes
        ]
        for r in c.to_dict("records")
    ]
    out.append(table(["measure", *[f"psi_{a} (groups, pairs)" for a in axes]], psi_rows))
    sign_rows = []
    for r in c.to_dict("records"):
        cells = [f"{iv(r, f'sign_error_{a}')} ({int(r[f'sign_error_{a}_pairs'])} p)" for a in axes]
        robust = (
            f"{r['sign_error_robust']:.2f} ({r['sign_error_robust_axis']})"
            if not pd.isna(r["sign_error_robust"])
            else str(r["sign_error_robust_axis"])
        )
        sign_rows.append([f"`{r['measure']}`", *cells, robust, str(r["verdict"])])
    out.append(
        table(
            ["measure", *[f"sign-err {a} [95%] (pairs)" for a in axes], "robust", "verdict"],
            sign_rows,
        )
    )
    return "\n\n".join(out)


def differences_table(d: pd.DataFrame, statistic: str) -> str:
    """Paired differences of one statistic: delta [low, high] and whether it is shown."""
    sub = d[d["statistic"] == statistic]
    rows = []
    for r in sub.to_dict("records"):
        if pd.isna(r["delta"]):
            continue
        shown = "better" if r["low"] > 0 else "worse" if r["high"] < 0 else "not shown"
        rows.append(
            [
                f"`{r['measure']}`",
                f"`{r['versus']}`",
                f"{f(r['delta'])} [{f(r['low'])}, {f(r['high'])}]",
                shown,
            ]
        )
    return table(["measure", "versus", f"delta {statistic} [95%]", "difference"], rows)


def recompute(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, list[str], dict]:
    """Protocol v2 on the committed models.csv (axes of correlate.json less seed)."""
    from specbound.studies.correlate import ceiling
    from specbound.studies.correlate import table as T

    meta = json.loads((folder / "correlate.json").read_text())
    models = pd.read_csv(folder / "models.csv")
    axes = [a for a in meta["axes"] if a != "seed"]
    tabs = T.correlation_study(models, meta["measures"], axes, bootstrap=meta["bootstrap"])
    return tabs.correlation, tabs.differences, axes, ceiling.rank_ceiling(models)


def measure_names() -> set[str]:
    """Every measure of every committed correlation.csv."""
    names: set[str] = set()
    for c in (HERE / "results").glob("*/correlation.csv"):
        names |= set(pd.read_csv(c)["measure"])
    return names


def unbacked_rows(readme: str, printed: str) -> list[str]:
    """The table rows of ``readme`` that name a measure in their first cell (``| `name` |``) and
    are not, character for character, a row of ``printed`` (this script's output)."""
    rows = set(printed.splitlines())
    names = measure_names()
    out = []
    for line in readme.splitlines():
        cells = line.split("|")
        if len(cells) > 2 and cells[1].strip().strip("`") in names and line not in rows:
            out.append(line)
    return out


def render(again: bool = False) -> str:
    """Every table, as printed: the committed statistics, or (``again``) protocol v2 recomputed
    from the committed models.csv."""
    parts = []
    for folder in sorted(p for p in (HERE / "results").iterdir() if p.is_dir()):
        parts.append(f"## {folder.name}\n\n{zoo_summary(zoo_of(folder))}\n")
        c = pd.read_csv(folder / "correlation.csv")
        meta = json.loads((folder / "correlate.json").read_text())
        if again:
            c, d, axes, ceil = recompute(folder)
            parts.append("(protocol v2, recomputed from the committed models.csv)\n")
        elif "kendall_tau_low" in c.columns:
            d = pd.read_csv(folder / "differences.csv")
            axes, ceil = list(meta["axes"]), meta.get("rank_ceiling", {})
        else:
            parts.append(correlation_table_v1(c) + "\n")
            continue
        parts.append(correlation_tables_v2(c, axes) + "\n")
        if ceil.get("statement"):
            parts.append(f"Rank ceiling: {ceil['statement']}\n")
        for st in ("tau_fixed_n", "psi_fixed_n", "kendall_tau", "psi"):
            parts.append(differences_table(d, st) + "\n")
    return "\n".join(parts)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--check"] and len(argv) == 2:
        bad = unbacked_rows(Path(argv[1]).read_text(), render())
        for line in bad:
            print(f"not in the committed tables: {line}", file=sys.stderr)
        sys.exit(1 if bad else 0)
    print(render(again="--recompute" in argv))


if __name__ == "__main__":
    main(sys.argv[1:])
