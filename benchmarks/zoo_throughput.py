"""Zoo training throughput: one grid trained by whole ``specbound zoo train`` processes, one
mode after the other in one run: the default (``--ensemble auto`` = 1 on the CPU, ``--workers``
= one process per usable CPU), ``--ensemble 16`` in one process (what ``auto`` did before issue
36: it grouped up to 16) and ``--ensemble 1`` in one process (one model at a time).

Per mode: CPU seconds (user + system of the process and its children, from ``wait4``), wall
seconds, peak RSS (of the largest process), models per wall-second, the wall speed-up against
``--ensemble 16`` (the old default) and the models' agreement with ``--ensemble 1`` (checkpoints
and zoo.csv identical bit for bit, wall_s aside; same converged set, mean |test-accuracy
difference|, mean |steps difference|).

    python benchmarks/zoo_throughput.py              # 16 models of the standard digits preset
    python benchmarks/zoo_throughput.py --full       # the whole standard preset (144 models)
    python benchmarks/zoo_throughput.py --task modular-addition --custom --width 64 --max-steps 300
    python benchmarks/zoo_throughput.py --json results.json

The default grid is the standard preset's 16 models of its first architecture (depth 1, width
32 for digits), its two learning rates and weight decays, its two smallest training sizes and
first two seeds, with the preset's stopping rule (500 steps, target 0.01): all of one
architecture, so ``--ensemble 16`` batches all 16 (its best case). ``--custom`` keeps the
earlier synthetic grid (``--depth``, ``--width``, ``--max-steps``).

The machine's load is not controlled: run it on a quiet machine, or read the numbers as
"under load" (the CPU model, its vector extensions and the load averages are printed with them).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZE = {"modular-addition": ("train_fraction", [0.3, 0.6]), "digits": ("train_size", [75, 150])}
SIZE["sparse-parity"] = ("train_size", [128, 256])


def cpu_info() -> str:
    model, flags = platform.processor() or "unknown", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    ext = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if f in flags]
    return f"{model} ({os.cpu_count()} CPUs visible; {', '.join(ext) or 'no avx2'})"


def grid(task: str, depth: int, width: int, max_steps: int) -> dict:
    axis, sizes = SIZE[task]
    return {
        "axes": {
            "depth": [depth],
            "width": [width],
            "lr": [3e-3, 1e-2],
            "weight_decay": [0.0, 0.1],
            axis: sizes,
            "seed": [0, 1],
        },
        "max_steps": max_steps,
    }


#: mode name -> its ``zoo train`` flags (the first mode run is the agreement reference)
MODES = {
    "ensemble-1": ["--ensemble", "1", "--workers", "1"],
    "ensemble-16": ["--ensemble", "16", "--workers", "1"],
    "default": [],
}


def standard_subset(task: str) -> dict:
    """16 models of the task's standard preset: its first architecture, two of each other axis."""
    from specbound.studies.zoo import plan

    p = plan(task, preset="standard")
    axes = {k: (v[:1] if k in ("depth", "width") else v[:2]) for k, v in p.axes.items()}
    return {"axes": axes, "max_steps": p.max_steps, "target_loss": p.target_loss}


def run(task: str, grid_file: Path | None, out: Path, mode: str, threads: int) -> dict:
    where = ["--preset", "standard"] if grid_file is None else ["--grid", str(grid_file)]
    cmd = [sys.executable, "-m", "specbound", "zoo", "train", task, *where,
           "--out", str(out), *MODES[mode], "--threads", str(threads), "--quiet"]  # fmt: skip
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"ensemble {mode} failed: {err.strip()}")
    cpu = ru.ru_utime + ru.ru_stime
    return {"mode": mode, "cpu_s": cpu, "wall_s": wall, "peak_rss_mib": ru.ru_maxrss / 1024,
            "load_before": load}  # fmt: skip


def same_files(a: Path, b: Path) -> bool:
    """Checkpoints (and every other model file but metrics.json's wall_s) and zoo.csv (wall_s
    aside) identical bit for bit."""
    import pandas as pd

    def files(root: Path) -> dict[str, object]:
        out: dict[str, object] = {}
        for p in sorted((root / "models").rglob("*")):
            if p.is_file():
                rel = str(p.relative_to(root))
                if p.name == "metrics.json":
                    m = json.loads(p.read_text())
                    m.pop("wall_s")
                    out[rel] = m
                else:
                    out[rel] = p.read_bytes()
        csv = pd.read_csv(root / "zoo.csv", dtype=str).drop(columns="wall_s")
        out["zoo.csv"] = csv.to_csv(index=False)
        return out

    return files(a) == files(b)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="digits", choices=sorted(SIZE))
    ap.add_argument("--full", action="store_true", help="the whole standard preset")
    ap.add_argument("--custom", action="store_true", help="the synthetic grid of --depth etc.")
    ap.add_argument("--depth", type=int, default=1)
    ap.add_argument("--width", type=int, default=32)
    ap.add_argument("--max-steps", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--modes", default=",".join(MODES))  # the first is the reference
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    import pandas as pd

    if args.full:
        g = None
    elif args.custom:
        g = grid(args.task, args.depth, args.width, args.max_steps)
    else:
        g = standard_subset(args.task)
    modes = args.modes.split(",")
    rows = []
    print(f"CPU: {cpu_info()}; usable CPUs {len(os.sched_getaffinity(0))}")
    with tempfile.TemporaryDirectory(prefix="zoo-throughput-") as tmp:
        gf = None
        if g is not None:
            gf = Path(tmp) / "grid.json"
            gf.write_text(json.dumps(g))
        zoos = {}
        for mode in modes:
            out = Path(tmp) / f"zoo-{mode}"
            r = run(args.task, gf, out, mode, args.threads)
            zoos[mode] = pd.read_csv(out / "zoo.csv")
            r["models"] = len(zoos[mode])
            r["models_per_wall_s"] = r["models"] / r["wall_s"]
            rows.append(r)
            print(f"  {mode}: {r['wall_s']:.1f} s wall", flush=True)
        ref = zoos[modes[0]]
        old = next((r for r in rows if r["mode"] == "ensemble-16"), rows[0])
        for r in rows:
            z = zoos[r["mode"]]
            r["identical"] = same_files(
                Path(tmp) / f"zoo-{modes[0]}", Path(tmp) / f"zoo-{r['mode']}"
            )
            r["same_converged"] = bool((z["converged"] == ref["converged"]).all())
            r["converged"] = int(z["converged"].sum())
            r["mean_abs_test_acc_diff"] = float((z["test_acc"] - ref["test_acc"]).abs().mean())
            r["mean_abs_steps_diff"] = float((z["steps"] - ref["steps"]).abs().mean())
            r["speedup_wall_vs_ensemble_16"] = old["wall_s"] / r["wall_s"]
    print(f"load average after: {os.getloadavg()}")
    what = "the standard preset" if g is None else f"{len(ref)} models of {json.dumps(g)}"
    print(f"grid: {args.task}, {what}, --threads {args.threads}")
    cols = "mode cpu_s wall_s peak_rss_mib load_before models_per_wall_s"
    cols += " speedup_wall_vs_ensemble_16 converged identical same_converged"
    cols += " mean_abs_test_acc_diff mean_abs_steps_diff"
    cols = cols.split()
    print(pd.DataFrame(rows)[cols].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    if args.json:
        args.json.write_text(json.dumps({"cpu": cpu_info(), "grid": g, "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
