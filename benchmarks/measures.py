"""What the SPEC 9 measures cost: this code vs the code before them, whole processes, side by side.

    python benchmarks/measures.py [--reps 3] [--base REF]

Runs, alternately, ``specbound analyze CKPT --no-cache -q --json`` from a git worktree of REF
(default ``b4ab6d7``, the last commit before the measures: both proxies only) and from this
checkout (both proxies + every measure: the extra SVDs of W_Q, W_K, W_V, W_O and the power-law
fits), on MiniLM (bundled) and, when present, the BERT-base-shaped checkpoint of
``make_checkpoints.py bert-base``; and this checkout again with ``SPECBOUND_LAPACK=numpy`` (every
SVD through numpy.linalg, which holds the GIL, so the worker threads take turns). Also times a
warm-cache re-analysis of this checkout. Prints the medians and the ratio new / base; the target
is <= 1.5x for MiniLM ``--no-cache``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import DATA, PY, run

ROOT = Path(__file__).resolve().parent.parent


def checkpoints() -> list[tuple[str, Path]]:
    from specbound.demo import minilm_path

    out = [("MiniLM-L6 (real)", minilm_path())]
    base = DATA / "random-bert-base"
    if (base / "config.json").is_file():
        out.append(("BERT-base-shaped (random)", base))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--base", default="b4ab6d7")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="specbound-base-"))
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(work / "tree"), a.base],
        check=True,
        capture_output=True,
    )
    try:
        cache = work / "cache"
        env_new = {"SPECBOUND_CACHE_DIR": str(cache)}
        env_base = {"PYTHONPATH": str(work / "tree" / "src"), "SPECBOUND_CACHE_DIR": str(cache)}
        cmd = [PY, "-m", "specbound.cli", "analyze"]
        rows = []
        for label, ckpt in checkpoints():
            base_t, new_t, numpy_t = [], [], []
            env_numpy = {**env_new, "SPECBOUND_LAPACK": "numpy"}
            for _ in range(a.reps):
                base_t.append(
                    run([*cmd, str(ckpt), "--no-cache", "-q", "--json"], env_base)["wall_s"]
                )
                r = run([*cmd, str(ckpt), "--no-cache", "-q", "--json"], env_new, stdout=True)
                new_t.append(r["wall_s"])
                numpy_t.append(
                    run([*cmd, str(ckpt), "--no-cache", "-q", "--json"], env_numpy)["wall_s"]
                )
            measures = json.loads(r["stdout"])["measures"]
            run([*cmd, str(ckpt), "-q", "--json"], env_new)  # fill the cache
            warm = statistics.median(
                run([*cmd, str(ckpt), "-q", "--json"], env_new)["wall_s"] for _ in range(a.reps)
            )
            b, n = statistics.median(base_t), statistics.median(new_t)
            npy = statistics.median(numpy_t)
            rows.append((label, b, n, n / b, npy, warm, len(measures)))
            print(
                f"{label}: base {b:.2f} s  new {n:.2f} s  ratio {n / b:.2f}x  "
                f"new with SPECBOUND_LAPACK=numpy {npy:.2f} s ({npy / b:.2f}x)  "
                f"warm {warm:.2f} s  ({len(measures)} measures; base runs "
                f"{', '.join(f'{x:.2f}' for x in base_t)}; new runs "
                f"{', '.join(f'{x:.2f}' for x in new_t)})"
            )
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
        print(
            "| model | before measures (s) | with every measure (s) | ratio "
            "| same, SPECBOUND_LAPACK=numpy (s) | ratio | warm cache (s) |"
        )
        print("|---|---|---|---|---|---|---|")
        for label, b, n, ratio, npy, warm, _ in rows:
            print(
                f"| {label} | {b:.2f} | {n:.2f} | {ratio:.2f}x | {npy:.2f} | {npy / b:.2f}x "
                f"| {warm:.2f} |"
            )
    finally:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(work / "tree")],
            capture_output=True,
        )


if __name__ == "__main__":
    main()
