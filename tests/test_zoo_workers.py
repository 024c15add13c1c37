"""`zoo train` defaults that use the machine (issue 36 item 4): `--ensemble auto` is one model
at a time on the CPU; `--workers N` trains models in parallel spawned processes (one torch
thread each) with the same files as one at a time, resumes, reports a failed model while the
others finish, and on Ctrl-C stops its workers and exits 130 leaving no half-written model."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specbound.studies.zoo import train_zoo  # noqa: E402

GRID = {
    "axes": {
        "depth": [1],
        "width": [8],
        "lr": [1e-2],
        "weight_decay": [0.0, 0.1],
        "train_fraction": [0.3],
        "seed": [0, 1],
    },
    "max_steps": 3,
}


def contents(root: Path) -> dict[str, object]:
    """Every file of a zoo, bytes for bytes, but wall_s (a time) out of metrics and zoo.csv."""
    out: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.name in (".specbound-manifest.json", ".specbound-zoo.lock"):
            continue
        rel = str(p.relative_to(root))
        if p.name == "metrics.json":
            m = json.loads(p.read_text())
            m.pop("wall_s")
            out[rel] = m
        elif p.name == "zoo.csv":
            out[rel] = pd.read_csv(p, dtype=str).drop(columns="wall_s").to_csv(index=False)
        else:
            out[rel] = p.read_bytes()
    return out


def test_auto_is_one_at_a_time_on_cpu_and_grouping_on_cuda(tmp_path):
    one = train_zoo("modular-addition", tmp_path / "one", preset="tiny", grid=GRID, ensemble=1)
    auto = train_zoo("modular-addition", tmp_path / "auto", preset="tiny", grid=GRID)
    assert len(auto) == len(one) == 4
    for name in auto["model"]:
        m = json.loads((tmp_path / "auto" / name / "metrics.json").read_text())
        assert m["ensemble"] == 1
    assert contents(tmp_path / "auto") == contents(tmp_path / "one")
    from specbound.studies.zoo.ensemble import auto_mode

    assert auto_mode("cpu") == 1 and auto_mode("cuda") == "auto" and auto_mode("cuda:1") == "auto"
