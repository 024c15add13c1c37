"""Does an SVD on a worker thread run in parallel? numpy.linalg vs specbound.linalg.lapack,
side by side.

    python benchmarks/lapack_threads.py [--reps 3]

The raw-weight SVDs of SPEC 9 (W_Q, W_K, W_V, W_O) run on the thread pool of
``spectra.run_jobs``. numpy.linalg holds the GIL during LAPACK, so threads take turns;
``specbound.linalg.lapack`` calls the same gesdd of numpy's OpenBLAS through ctypes, which
releases it.
Times 24 values-only SVDs (MiniLM: 6 blocks x 4) of 384 x 384 and 48 of 768 x 768 (BERT-base:
12 x 4), BLAS held at one thread, medians of ``--reps``: in turn with numpy, on a pool of one
thread per core with numpy, on the same pool with specbound.linalg.lapack.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

from specbound.linalg import lapack


def timed(fn, mats, reps: int) -> float:
    fn(mats[:2])
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn(mats)
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = max(1, min(4, workers or 1))
    print(f"{workers} worker threads; specbound.linalg.lapack GIL-free path: {lapack.available()}")
    print(
        "| matrices | numpy, in turn (s) | numpy, pool (s) | lapack, pool (s) "
        "| pool speedup numpy / lapack |"
    )
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(0)

    def numpy_svd(m):
        return np.linalg.svd(m, compute_uv=False)

    with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(workers) as pool:
        for count, n in ((24, 384), (48, 768)):
            mats = [rng.standard_normal((n, n)) for _ in range(count)]
            serial = timed(lambda ms: [numpy_svd(m) for m in ms], mats, a.reps)
            pool_np = timed(lambda ms: list(pool.map(numpy_svd, ms)), mats, a.reps)
            pool_lp = timed(lambda ms: list(pool.map(lapack.svdvals, ms)), mats, a.reps)
            print(
                f"| {count} x {n}^2 | {serial:.3f} | {pool_np:.3f} | {pool_lp:.3f} "
                f"| {serial / pool_np:.2f}x / {serial / pool_lp:.2f}x |"
            )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
