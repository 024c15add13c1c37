"""Local engine vs the Ray engine (1 and 2 workers) on a sweep of random BERT-shaped models.

    python benchmarks/ray_sweep.py                       # 8 BERT-base-shaped models (L=12, N=768)
    python benchmarks/ray_sweep.py --models 4 --layers 4 # smaller, when time is short

Writes the checkpoints (fp32 safetensors, different seeds) under ``--data`` (gitignored
``benchmarks/_data/``), then times, in this one process, with the spectra cache off:

- ``local``: ``specbound.studies.scale.scale`` with the default engine (block jobs on a
  thread pool);
- ``local 1 CPU``: the same held to one CPU (BLAS 1 thread, jobs sequential), the fair
  baseline for one Ray worker;
- ``ray 1 worker`` / ``ray 2 workers``: ``engines.ray.analyze_models`` on a fresh local Ray
  runtime with ``num_cpus`` 1 / 2 (one task per model, each held to one CPU). The runtime's
  start (``ray.init``) is timed separately; the sweep times include worker start-up.

One model is analyzed first, untimed (imports, page cache). Prints one table side by
side (seconds and ratios to ``local``) and checks that every engine gives the same
``spectrum_adaptive`` (exactly) for every model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_checkpoints import tensors, write_shard


def make_models(data: Path, n: int, layers: int, hidden: int) -> list[str]:
    cfg = dict(
        num_hidden_layers=layers,
        hidden_size=hidden,
        num_attention_heads=hidden // 64,
        intermediate_size=4 * hidden,
    )
    out = []
    for i in range(n):
        d = data / f"bert-L{layers}-N{hidden}-seed{i}"
        if not (d / "model.safetensors").is_file():
            d.mkdir(parents=True, exist_ok=True)
            (d / "config.json").write_text(
                json.dumps({"model_type": "bert", "hidden_act": "gelu", **cfg}, indent=1) + "\n"
            )
            write_shard(d / "model.safetensors", tensors(cfg), "F32", np.random.default_rng(i))
        out.append(str(d))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=8)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--data", type=Path, default=Path(__file__).parent / "_data" / "ray_sweep")
    args = ap.parse_args()

    import ray
    from threadpoolctl import threadpool_limits

    from specbound.engines.ray import analyze_models
    from specbound.studies.scale import scale

    models = make_models(args.data, args.models, args.layers, args.hidden)
    gb = sum(Path(m, "model.safetensors").stat().st_size for m in models) / 1e9
    print(
        f"{len(models)} models, L={args.layers} N={args.hidden} fp32, {gb:.2f} GB on disk; "
        f"{os.cpu_count()} CPUs; ray {ray.__version__}"
    )
    rows: list[tuple[str, float, float | None]] = []
    values: dict[str, list[float]] = {}

    scale(models[:1], cache=False)  # warm-up (imports, page cache), not timed
    t = time.perf_counter()
    study = scale(models, names=models, cache=False)
    rows.append(("local", time.perf_counter() - t, None))
    values["local"] = [a.bounds.spectrum_adaptive.log10 for a in study.analyses]
    order = [a.model for a in study.analyses]

    os.environ["SPECBOUND_PARALLEL"] = "blas"
    with threadpool_limits(limits=1):
        t = time.perf_counter()
        study = scale(models, names=models, cache=False)
        rows.append(("local 1 CPU", time.perf_counter() - t, None))
    del os.environ["SPECBOUND_PARALLEL"]
    values["local 1 CPU"] = [a.bounds.spectrum_adaptive.log10 for a in study.analyses]

    import logging

    for workers in (1, 2):
        t = time.perf_counter()
        ray.init(
            num_cpus=workers,
            include_dashboard=False,
            logging_level=logging.ERROR,
            log_to_driver=False,
        )
        start = time.perf_counter() - t
        t = time.perf_counter()
        analyses, skipped = analyze_models(models, names=models, analyze_kwargs={"cache": False})
        label = f"ray {workers} worker" + ("s" if workers > 1 else "")
        rows.append((label, time.perf_counter() - t, start))
        ray.shutdown()
        assert not skipped, skipped
        by_name = {a.model: a.bounds.spectrum_adaptive.log10 for a in analyses}
        values[label] = [by_name[m] for m in order]

    base = rows[0][1]
    print("\n| engine | sweep (s) | ratio to local | ray.init (s) |\n|---|---|---|---|")
    for label, secs, start in rows:
        print(
            f"| {label} | {secs:.1f} | {secs / base:.2f} | "
            f"{'' if start is None else f'{start:.1f}'} |"
        )
    local1 = rows[1][1]
    ray1 = rows[2][1]
    print(
        f"\nRay overhead at 1 worker vs local 1 CPU: {ray1 / local1 - 1:+.0%} "
        f"({(ray1 - local1) / len(models):+.2f} s per model), plus {rows[2][2]:.1f} s ray.init"
    )
    same = all(v == values["local"] for v in values.values())
    print(f"spectrum_adaptive identical across engines: {same}")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
