"""Cost of SPEC 12's data measures per zoo model, extrapolated to a 128-model standard digits zoo.

    python benchmarks/data_measures.py ZOO_DIR            # a zoo from `specbound zoo train digits`
    python benchmarks/data_measures.py ZOO_DIR --standard # + the standard grid's model sizes
    python benchmarks/data_measures.py ZOO_DIR --workers 16  # correlate's path, 1 vs 2 workers

For every model of ZOO_DIR: all data measures on its own training data
(``specbound.studies.zoo.training_data``), one progress line per model. With ``--standard``:
one freshly initialized model per (depth, width) of the standard digits grid on its largest
training set (600 images): an untrained model cannot lose 0.1 accuracy, so every bisection
runs its 15 steps -- the slowest case. The standard zoo's estimate is then
sum over its 128 models of (time of its (depth, width) at 600 examples) x train_size / 600.
With ``--workers K``: the first K models of ZOO through ``correlate --data-measures``'s own
path (``studies.correlate.data.compute_columns``, no cache) with 1 worker (this process, one
torch thread) and then with 2 spawned workers, side by side in one run; the values must be
equal bit for bit, and the wall-clock ratio is printed.
The figures and the CPU go to stdout (and ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STANDARD = {"depth": [1, 2], "width": [32, 64], "train_size": [75, 150, 300, 600]}
STANDARD_MODELS = 128  # x lr (2) x weight_decay (2) x seed (2)
BUDGET_S = 15 * 60


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def batches_of(x: Any, y: Any, size: int = 256) -> list[tuple[Any, Any]]:
    return [(x[i : i + size], y[i : i + size]) for i in range(0, len(y), size)]


def time_model(model: Any, x: Any, y: Any) -> tuple[float, Any]:
    import specbound

    start = time.perf_counter()
    r = specbound.data_measures(model, batches_of(x, y))
    return time.perf_counter() - start, r


def zoo_models(zoo: Path) -> list[Path]:
    return sorted(p.parent for p in (zoo / "models").glob("*/config.json"))


def bench_zoo(zoo: Path, progress: Callable[[int, int, str, float], None]) -> list[dict]:
    from transformers import AutoModelForImageClassification

    from specbound.studies.zoo import training_data

    out = []
    dirs = zoo_models(zoo)
    for i, d in enumerate(dirs, start=1):
        model = AutoModelForImageClassification.from_pretrained(d)
        x, y = training_data(d)
        took, r = time_model(model, x, y)
        steps = {k: v.get("steps") for k, v in r.details.items() if "steps" in v}
        out.append({"model": d.name, "examples": r.examples, "seconds": took, "steps": steps})
        progress(i, len(dirs), d.name, took)
    return out


def bench_standard(progress: Callable[[int, int, str, float], None]) -> list[dict]:
    import torch

    from specbound.studies.zoo.tasks import get_task

    task = get_task("digits")
    data = task.data()
    x, y = data.x[:600], data.y[:600]
    out = []
    combos = [(d, w) for d in STANDARD["depth"] for w in STANDARD["width"]]
    for i, (depth, width) in enumerate(combos, start=1):
        torch.manual_seed(0)
        model = task.build(depth, width, data.num_classes)
        took, _ = time_model(model, x, y)
        out.append({"depth": depth, "width": width, "examples": 600, "seconds": took})
        progress(i, len(combos), f"standard depth={depth} width={width} (untrained)", took)
    return out


def bench_workers(zoo: Path, k: int) -> dict:
    from specbound.studies.correlate import data as D

    jobs = [(i, str(d), None) for i, d in enumerate(zoo_models(zoo)[:k])]
    out: dict[str, Any] = {"models": len(jobs)}
    values = {}
    for workers in (1, 2):
        start = time.perf_counter()
        cols = D.compute_columns(jobs, cache=False, workers=workers)
        out[f"workers_{workers}_s"] = time.perf_counter() - start
        values[workers] = cols.values
        print(f"{len(jobs)} models, {workers} worker(s): {out[f'workers_{workers}_s']:.1f} s")
    out["same_values"] = values[1] == values[2]
    out["ratio"] = out["workers_1_s"] / out["workers_2_s"]
    print(f"ratio 1 / 2 workers: {out['ratio']:.2f}x; same values: {out['same_values']}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("zoo", type=Path)
    ap.add_argument("--standard", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--workers", type=int, metavar="K", help="1 vs 2 workers on K models")
    args = ap.parse_args()
    import torch

    def progress(i: int, n: int, name: str, took: float) -> None:
        print(f"[{i}/{n}] {name}: {took:.2f} s", flush=True)

    report: dict[str, Any] = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }
    if args.workers:
        report["workers"] = bench_workers(args.zoo, args.workers)
        print(f"cpu: {report['cpu']}, {report['cores']} cores")
        if args.json:
            args.json.write_text(json.dumps(report, indent=1) + "\n")
        return
    report["zoo"] = bench_zoo(args.zoo, progress)
    secs = [m["seconds"] for m in report["zoo"]]
    if secs:
        print(
            f"zoo {args.zoo}: {len(secs)} models, mean {sum(secs) / len(secs):.2f} s, "
            f"max {max(secs):.2f} s per model"
        )
    if args.standard:
        report["standard"] = bench_standard(progress)
        per_config = {(m["depth"], m["width"]): m["seconds"] for m in report["standard"]}
        share = sum(STANDARD["train_size"]) / len(STANDARD["train_size"]) / 600
        per_model = sum(per_config.values()) / len(per_config) * share
        total = per_model * STANDARD_MODELS
        report["standard_estimate_s"] = total
        print(
            f"standard digits zoo estimate: {STANDARD_MODELS} models x {per_model:.2f} s = "
            f"{total / 60:.1f} min (budget {BUDGET_S / 60:.0f} min; upper estimate: untrained "
            "models run every bisection step)"
        )
    print(f"cpu: {report['cpu']}, {report['cores']} cores, torch threads {report['torch_threads']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
