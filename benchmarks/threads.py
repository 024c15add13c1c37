"""How to use the cores: BLAS threads vs parallel matrices, measured (whole processes).

    python benchmarks/threads.py [--reps 3] [--big]

Configurations of ``specbound analyze CKPT --no-cache -q --json``:
- ``pool``: the block's QK, OV, M_in, M_out jobs on a pool of one thread per core, each BLAS
  call single-threaded (threadpoolctl) -- specbound's default;
- ``blas x2``: jobs in turn, OpenBLAS with 2 threads (``SPECBOUND_PARALLEL=blas``);
- ``blas x1``: jobs in turn, one thread (``SPECBOUND_PARALLEL=blas OPENBLAS_NUM_THREADS=1``).
Runs are interleaved so that machine noise hits every configuration alike.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from run import DATA, run, specbound_cmd

CONFIGS = {
    "pool": {"SPECBOUND_PARALLEL": "pool"},
    "blas x2": {"SPECBOUND_PARALLEL": "blas"},
    "blas x1": {"SPECBOUND_PARALLEL": "blas", "OPENBLAS_NUM_THREADS": "1"},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--big", action="store_true")
    a = ap.parse_args()
    from specbound.demo import minilm_path

    models = {"MiniLM": Path(minilm_path()), "BERT-base-shaped": DATA / "random-bert-base"}
    if a.big:
        models["1.2B bf16"] = DATA / "random-big"
    sb = specbound_cmd()
    print("| model | " + " | ".join(f"{c}: median s (RSS MiB)" for c in CONFIGS) + " |")
    print("|---|" + "---|" * len(CONFIGS))
    for name, path in models.items():
        reps = 1 if name.startswith("1.2B") else a.reps
        times: dict[str, list[float]] = {c: [] for c in CONFIGS}
        rss: dict[str, float] = {c: 0.0 for c in CONFIGS}
        for _ in range(reps):
            for c, env in CONFIGS.items():
                r = run([*sb, "analyze", str(path), "--no-cache", "-q", "--json"], env)
                times[c].append(r["wall_s"])
                rss[c] = max(rss[c], r["rss_mib"])
        print(
            f"| {name} | "
            + " | ".join(f"{statistics.median(times[c]):.2f} ({rss[c]:.0f})" for c in CONFIGS)
            + " |",
            flush=True,
        )


if __name__ == "__main__":
    main()
