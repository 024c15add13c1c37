"""specbound against the naive dense method, whole processes, side by side, in one run.

    python benchmarks/run.py [--reps 3] [--big] [--naive-threads default,1]

Needs the checkpoints from ``benchmarks/make_checkpoints.py bert-base`` (and ``big`` for
``--big``) under benchmarks/_data/. For each of MiniLM (bundled all-MiniLM-L6-v2) and the
BERT-base-shaped random checkpoint it runs, alternately, ``specbound analyze CKPT --no-cache -q
--json`` and ``python benchmarks/naive_dense.py CKPT`` (per ``--naive-threads``: the default
BLAS threads and/or OPENBLAS_NUM_THREADS=1), measuring each whole process (wall time, Python
start included; peak RSS from wait4). Then it checks that the numbers agree: both proxies, and
every per-matrix norm, rank, p*, contribution of specbound's matrices.csv against the naive
table; cached vs uncached vs torch (``--device cpu``) spectra; and times a warm-cache
re-analysis with another ``--l-phi``. ``--big`` adds the 1.2B bf16 checkpoint (wall, peak RSS).
Results: printed as a table and written to benchmarks/_data/results.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data"
PY = sys.executable


def specbound_cmd() -> list[str]:
    exe = Path(PY).parent / "specbound"
    return [str(exe)] if exe.exists() else [PY, "-m", "specbound.cli"]


def run(cmd: list[str], env: dict | None = None, stdout: bool = False) -> dict:
    """Run one whole process; wall seconds, peak RSS (MiB) of that process, its stdout."""
    e = {**os.environ, **(env or {})}
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
    out = p.stdout.read() if p.stdout else b""
    err = p.stderr.read() if p.stderr else b""
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err.decode()[-2000:]}")
    return {
        "wall_s": wall,
        "rss_mib": ru.ru_maxrss / 1024,
        "stdout": out.decode() if stdout else None,
    }


def machine() -> dict:
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    import numpy
    from threadpoolctl import threadpool_info

    blas = [
        f"{i['internal_api']} {i['version']} ({i.get('architecture')}, {i['num_threads']} threads)"
        for i in threadpool_info()
        if i["user_api"] == "blas"
    ]
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "numpy": numpy.__version__,
        "blas": "; ".join(blas),
        "python": platform.python_version(),
        "load_avg_at_start": os.getloadavg(),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", "(unset)"),
    }


def rel(a: float, b: float) -> float:
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(b), 1e-300)


def compare_tables(sb_csv: Path, naive_csv: Path) -> dict:
    """Max relative difference per column; exact match required for rank and p*."""
    with open(sb_csv) as f1, open(naive_csv) as f2:
        a, b = list(csv.DictReader(f1)), list(csv.DictReader(f2))
    assert len(a) == len(b), (len(a), len(b))
    cols = [
        "spectral_norm",
        "frobenius_norm",
        "nuclear_norm",
        "norm_21",
        "norm_11",
        "stable_rank",
        "log10_alpha",
        "log10_scale",
        "log10_contribution",
    ]
    worst = {c: 0.0 for c in cols}
    mismatches = {"rank": 0, "p_star": 0, "key": 0}
    for x, y in zip(a, b, strict=True):
        if (x["layer"], x["head"], x["matrix_type"]) != (y["layer"], y["head"], y["matrix_type"]):
            mismatches["key"] += 1
        for c in ("rank", "p_star"):
            if float(x[c]) != float(y[c]):
                mismatches[c] += 1
        for c in cols:
            worst[c] = max(worst[c], rel(float(x[c]), float(y[c])))
    return {"max_rel": worst, "mismatches": mismatches, "rows": len(a)}


def compare_spectra(p: Path, q: Path) -> float:
    """Max relative difference between two spectra.npz (singular values above threshold,
    norms); structure must be identical."""
    import numpy as np

    from specbound.linalg.spectra import Spectra, rank_threshold

    s, t = Spectra.load(p), Spectra.load(q)
    for f in ("layer", "head", "matrix_type", "rows", "cols", "sv_offsets"):
        assert np.array_equal(getattr(s, f), getattr(t, f)), f
    assert np.array_equal(s.rank, t.rank)
    worst = 0.0
    for f in ("frobenius_norm", "nuclear_norm", "norm_21", "norm_11"):
        x, y = getattr(s, f), getattr(t, f)
        worst = max(worst, float(np.max(np.abs(x - y) / np.maximum(np.abs(y), 1e-300))))
    k = np.minimum(s.rows, s.cols)
    for i in range(len(s)):
        y = t.singular_values(i)
        keep = y > rank_threshold(int(k[i]), y[0]) if y.size else y.astype(bool)
        x = s.singular_values(i)[keep]
        if x.size:
            worst = max(worst, float(np.max(np.abs(x - y[keep]) / y[keep])))
    return worst


def bound_rel(j1: dict, j2: dict) -> float:
    return max(
        rel(j1["bounds"][k]["log10"], j2["bounds"][k]["log10"])
        for k in ("spectrum_adaptive", "norm_based")
    )


def summarize(xs: list[float]) -> dict:
    return {"min": min(xs), "median": statistics.median(xs), "all": xs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--big", action="store_true", help="also the 1.2B bf16 checkpoint")
    ap.add_argument(
        "--naive-threads",
        default="default,1",
        help="BLAS thread settings for the naive method: default and/or 1",
    )
    a = ap.parse_args()

    from specbound.demo import minilm_path

    models = {
        "MiniLM-L6 (real)": Path(minilm_path()),
        "BERT-base-shaped (random)": DATA / "random-bert-base",
    }
    for path in models.values():
        if not (path / "config.json").is_file():
            raise SystemExit(f"{path} missing: python benchmarks/make_checkpoints.py bert-base")
    tmp = Path(tempfile.mkdtemp(prefix="specbound-bench-"))
    env = {"SPECBOUND_CACHE_DIR": str(tmp / "cache")}
    sb = specbound_cmd()
    results: dict = {"machine": machine(), "models": {}}
    print("machine:", json.dumps(results["machine"]))
    naive_cfgs = [c.strip() for c in a.naive_threads.split(",") if c.strip()]

    for name, path in models.items():
        r: dict = {"specbound": [], **{f"naive[{c}]": [] for c in naive_cfgs}}
        sb_json = naive_json = None
        for rep in range(a.reps):
            x = run([*sb, "analyze", str(path), "--no-cache", "-q", "--json"], env, stdout=True)
            r["specbound"].append(x)
            sb_json = json.loads(x["stdout"])
            for c in naive_cfgs:
                e = dict(env) if c == "default" else {**env, "OPENBLAS_NUM_THREADS": c}
                table = tmp / f"naive-{rep}.csv"
                y = run(
                    [PY, str(HERE / "naive_dense.py"), str(path), "--table", str(table)],
                    e,
                    stdout=True,
                )
                r[f"naive[{c}]"].append(y)
                naive_json = json.loads(y["stdout"])
            print(
                f"  {name} rep {rep}: specbound {x['wall_s']:.2f}s; "
                + ", ".join(
                    f"naive[{c}] {r[f'naive[{c}]'][-1]['wall_s']:.2f}s" for c in naive_cfgs
                ),
                flush=True,
            )
        out = tmp / "sb-out"
        run([*sb, "analyze", str(path), "--no-cache", "-q", "--out", str(out)], env)
        rec = {
            k: {
                "wall_s": summarize([v["wall_s"] for v in vs]),
                "rss_mib": max(v["rss_mib"] for v in vs),
            }
            for k, vs in r.items()
        }
        rec["bounds_rel_diff_vs_naive"] = bound_rel(sb_json, naive_json)
        rec["table_vs_naive"] = compare_tables(out / "matrices.csv", tmp / "naive-0.csv")
        for c in naive_cfgs:
            rec[f"ratio_median[{c}]"] = (
                rec[f"naive[{c}]"]["wall_s"]["median"] / rec["specbound"]["wall_s"]["median"]
            )
        # cached vs uncached vs torch
        run([*sb, "analyze", str(path), "-q"], env)  # fill the cache
        run([*sb, "analyze", str(path), "-q", "--out", str(tmp / "cached")], env)
        run(
            [
                *sb,
                "analyze",
                str(path),
                "--no-cache",
                "-q",
                "--device",
                "cpu",
                "--out",
                str(tmp / "torch"),
            ],
            env,
        )
        rec["cached_vs_uncached_rel"] = compare_spectra(
            tmp / "cached" / "spectra.npz", out / "spectra.npz"
        )
        rec["torch_vs_numpy_rel"] = compare_spectra(
            tmp / "torch" / "spectra.npz", out / "spectra.npz"
        )
        warm = [
            run([*sb, "analyze", str(path), "-q", "--l-phi", "1.0"], env)["wall_s"]
            for _ in range(a.reps)
        ]
        rec["warm_cache_l_phi_wall_s"] = summarize(warm)
        results["models"][name] = rec

    if a.big:
        big = DATA / "random-big"
        if not (big / "config.json").is_file():
            raise SystemExit(f"{big} missing: python benchmarks/make_checkpoints.py big")
        x = run([*sb, "analyze", str(big), "--no-cache", "-q", "--json"], env, stdout=True)
        size = sum(f.stat().st_size for f in big.glob("*.safetensors"))
        results["big"] = {
            "wall_s": x["wall_s"],
            "rss_mib": x["rss_mib"],
            "disk_gb": size / 1e9,
            "bounds": json.loads(x["stdout"])["bounds"],
        }
    results["load_avg_at_end"] = os.getloadavg()

    print()
    print(
        "| model | specbound --no-cache (s) | naive dense (s) | ratio | peak RSS sb / naive "
        "(MiB) | warm --l-phi (s) |"
    )
    print("|---|---|---|---|---|---|")
    for name, rec in results["models"].items():
        for c in naive_cfgs:
            print(
                f"| {name} | {rec['specbound']['wall_s']['median']:.2f} | "
                f"{rec[f'naive[{c}]']['wall_s']['median']:.2f} (BLAS threads: {c}) | "
                f"{rec[f'ratio_median[{c}]']:.1f}x | {rec['specbound']['rss_mib']:.0f} / "
                f"{rec[f'naive[{c}]']['rss_mib']:.0f} | "
                f"{rec['warm_cache_l_phi_wall_s']['median']:.2f} |"
            )
    print()
    for name, rec in results["models"].items():
        t = rec["table_vs_naive"]
        print(
            f"{name}: bounds vs naive {rec['bounds_rel_diff_vs_naive']:.1e} rel; table "
            f"max rel {max(t['max_rel'].values()):.1e} over {t['rows']} matrices, "
            f"mismatches {t['mismatches']}; cached vs uncached "
            f"{rec['cached_vs_uncached_rel']:.1e}; "
            f"torch vs numpy {rec['torch_vs_numpy_rel']:.1e}"
        )
        ok = (
            rec["bounds_rel_diff_vs_naive"] <= 1e-10
            and max(t["max_rel"].values()) <= 1e-10
            and not any(t["mismatches"].values())
            and rec["cached_vs_uncached_rel"] <= 1e-10
            and rec["torch_vs_numpy_rel"] <= 1e-10
        )
        print(f"  numbers agree to 1e-10: {'yes' if ok else 'NO'}")
        rec["agree_1e-10"] = ok
    if "big" in results:
        b = results["big"]
        print(
            f"1.2B bf16 ({b['disk_gb']:.2f} GB): wall {b['wall_s']:.1f} s, peak RSS "
            f"{b['rss_mib']:.0f} MiB"
        )
    DATA.mkdir(exist_ok=True)
    (DATA / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    if any(
        not math.isfinite(r["ratio_median[" + naive_cfgs[0] + "]"])
        for r in results["models"].values()
    ):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
