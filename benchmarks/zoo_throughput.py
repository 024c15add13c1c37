"""Zoo training throughput: one 16-model same-architecture grid, ``--ensemble 1`` vs ``16`` vs
``auto``, each a whole ``specbound zoo train`` process, run one after the other in one run.

Per mode: CPU seconds (user + system of the process and its children, from ``wait4``), wall
seconds, peak RSS, models per CPU-second, and the models' agreement with ``--ensemble 1``
(same converged set, mean |test-accuracy difference|, mean |steps difference|).

    python benchmarks/zoo_throughput.py                     # digits, depth 1, width 32
    python benchmarks/zoo_throughput.py --task modular-addition --width 64 --max-steps 300
    python benchmarks/zoo_throughput.py --json results.json

The machine's load is not controlled: run it on a quiet machine, or read the numbers as
"under load" (the CPU model and its vector extensions are printed with them).
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


def run(task: str, grid_file: Path, out: Path, mode: str, threads: int) -> dict:
    cmd = [sys.executable, "-m", "specbound", "zoo", "train", task, "--preset", "tiny",
           "--grid", str(grid_file), "--out", str(out), "--ensemble", mode,
           "--threads", str(threads), "--quiet"]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"ensemble {mode} failed: {err.strip()}")
    cpu = ru.ru_utime + ru.ru_stime
    return {"mode": mode, "cpu_s": cpu, "wall_s": wall, "peak_rss_mib": ru.ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="digits", choices=sorted(SIZE))
    ap.add_argument("--depth", type=int, default=1)
    ap.add_argument("--width", type=int, default=32)
    ap.add_argument("--max-steps", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--modes", default="1,16,auto")  # the first is the reference
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    import pandas as pd

    g = grid(args.task, args.depth, args.width, args.max_steps)
    rows = []
    with tempfile.TemporaryDirectory(prefix="zoo-throughput-") as tmp:
        gf = Path(tmp) / "grid.json"
        gf.write_text(json.dumps(g))
        zoos = {}
        for mode in args.modes.split(","):
            out = Path(tmp) / f"zoo-{mode}"
            r = run(args.task, gf, out, mode, args.threads)
            zoos[mode] = pd.read_csv(out / "zoo.csv")
            r["models"] = len(zoos[mode])
            r["models_per_cpu_s"] = r["models"] / r["cpu_s"]
            rows.append(r)
        ref = zoos[rows[0]["mode"]]
        for r in rows:
            z = zoos[r["mode"]]
            r["same_converged"] = bool((z["converged"] == ref["converged"]).all())
            r["converged"] = int(z["converged"].sum())
            r["mean_abs_test_acc_diff"] = float((z["test_acc"] - ref["test_acc"]).abs().mean())
            r["mean_abs_steps_diff"] = float((z["steps"] - ref["steps"]).abs().mean())
            r["speedup_cpu"] = rows[0]["cpu_s"] / r["cpu_s"]
    print(f"CPU: {cpu_info()}; load average before: {os.getloadavg()[0]:.2f}")
    print(f"grid: {args.task} depth {args.depth} width {args.width}, 16 models, "
          f"max_steps {args.max_steps}, --threads {args.threads}")  # fmt: skip
    cols = "mode cpu_s wall_s peak_rss_mib models_per_cpu_s speedup_cpu converged"
    cols += " same_converged mean_abs_test_acc_diff mean_abs_steps_diff"
    cols = cols.split()
    print(pd.DataFrame(rows)[cols].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    if args.json:
        args.json.write_text(json.dumps({"cpu": cpu_info(), "grid": g, "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
