"""Bootstrap of SPEC 10 (tau and Psi intervals): vectorized counts vs one scipy call per draw.

    python benchmarks/correlate_bootstrap.py [--models 100] [--measures 12] [--draws 1000]

A random zoo with four axes; prints the time of ``correlation_table`` (everything: tau, Psi,
CMI, sign-error, bootstrap) and of a naive bootstrap (scipy.stats.kendalltau on each resampled
list, groups by pandas) on a subset of the draws, scaled to all draws, side by side.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from specbound.studies.correlate import correlation_table


def naive_draw(df: pd.DataFrame, m: str, axes: list[str], idx: np.ndarray) -> tuple[float, float]:
    r = df.iloc[idx].reset_index(drop=True)
    tau = kendalltau(r[m], r["gap"]).statistic
    psis = []
    for a in axes:
        others = [b for b in axes if b != a]
        taus = [
            kendalltau(grp[m], grp["gap"]).statistic
            for _, grp in r.groupby(others)
            if len(grp) >= 2
        ]
        taus = [t for t in taus if not np.isnan(t)]
        if taus:
            psis.append(np.mean(taus))
    return tau, (np.mean(psis) if psis else np.nan)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--measures", type=int, default=12)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--naive-draws", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = args.models
    axes = ["depth", "width", "lr", "wd"]
    df = pd.DataFrame({a: rng.integers(0, k, n) for a, k in zip(axes, (3, 3, 4, 2), strict=True)})
    df["gap"] = rng.standard_normal(n)
    measures = [f"m{i}" for i in range(args.measures)]
    for m in measures:
        df[m] = df["gap"] + rng.standard_normal(n)
    t0 = time.perf_counter()
    correlation_table(df, measures, axes, bootstrap=args.draws, seed=0)
    fast = time.perf_counter() - t0
    idx = np.random.default_rng(0).integers(0, n, size=(args.naive_draws, n))
    t0 = time.perf_counter()
    for m in measures:
        for d in idx:
            naive_draw(df, m, axes, d)
    naive = (time.perf_counter() - t0) * args.draws / args.naive_draws
    print(f"{n} models x {args.measures} measures x {args.draws} draws")
    print(f"correlation_table (all statistics): {fast:8.2f} s")
    print(f"naive bootstrap only (extrapolated from {args.naive_draws} draws): {naive:8.1f} s")
    print(f"ratio naive / specbound: {naive / fast:.0f}x")


if __name__ == "__main__":
    main()
