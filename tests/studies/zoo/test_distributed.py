"""`zoo train --engine ray` on a local Ray runtime: with --ensemble 1 the zoo equals the local
zoo bit for bit (wall times aside); a re-run resumes; ensembles run as one task each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("ray")

from specbound.studies.zoo import train_zoo
from tests.support.cli_runner import run_cli_process

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
RAY = {"num_cpus": 2}


def contents(root: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.name == ".specbound-manifest.json":
            continue
        rel = str(p.relative_to(root))
        if p.name == "metrics.json":
            m = json.loads(p.read_text())
            m.pop("wall_s")
            out[rel] = m
        elif p.name == "zoo.csv":
            import pandas as pd

            out[rel] = pd.read_csv(p).drop(columns="wall_s").to_dict("list")
        else:
            out[rel] = p.read_bytes()
    return out


@pytest.mark.slow(reason="trains one zoo on a Ray cluster it starts, again locally, then resumes")
def test_ray_zoo_equals_local_zoo_and_resumes(tmp_path):
    local = train_zoo("modular-addition", tmp_path / "local", preset="tiny", grid=GRID, ensemble=1)
    seen = []
    ray_df = train_zoo(
        "modular-addition",
        tmp_path / "ray",
        preset="tiny",
        grid=GRID,
        ensemble=1,
        engine="ray",
        engine_options=RAY,
        on_model=lambda i, n, name, m: seen.append((name, m is None)),
    )
    assert list(ray_df["model"]) == list(local["model"])
    assert contents(tmp_path / "ray") == contents(tmp_path / "local")
    assert len(seen) == 4 and not any(skipped for _, skipped in seen)
    # resume: nothing retrained, every model reported as done before
    seen.clear()
    train_zoo(
        "modular-addition",
        tmp_path / "ray",
        preset="tiny",
        grid=GRID,
        ensemble=1,
        engine="ray",
        engine_options=RAY,
        on_model=lambda i, n, name, m: seen.append((name, m is None)),
    )
    assert len(seen) == 4 and all(skipped for _, skipped in seen)
    assert contents(tmp_path / "ray") == contents(tmp_path / "local")


def test_ray_ensemble_is_one_task_and_matches_local_ensemble(tmp_path):
    train_zoo("modular-addition", tmp_path / "a", preset="tiny", grid=GRID, ensemble=4)
    b = train_zoo(
        "modular-addition",
        tmp_path / "b",
        preset="tiny",
        grid=GRID,
        ensemble=4,
        engine="ray",
        engine_options=RAY,
    )
    assert contents(tmp_path / "a") == contents(tmp_path / "b")
    assert (b["steps"] == 3).all()
    for name in b["model"]:
        assert json.loads((tmp_path / "b" / name / "metrics.json").read_text())["ensemble"] == 4


@pytest.mark.slow(
    reason="two CLI subprocesses train the same zoo, one starting its own Ray cluster"
)
def test_cli_engine_ray_equals_local_zoo(tmp_path):
    """``specbound zoo train ... --engine ray`` (the command line, not only the API) trains on a
    local Ray runtime and writes the local zoo's files."""
    import yaml

    g = tmp_path / "grid.yaml"
    g.write_text(yaml.safe_dump(GRID))
    common = ("zoo", "train", "modular-addition", "--grid", g, "--ensemble", "1", "-q")
    local = run_cli_process(*common, "--out", tmp_path / "local", timeout=600)
    ray = run_cli_process(*common, "--engine", "ray", "--out", tmp_path / "ray", timeout=600)
    assert local.code == 0, local.err
    assert ray.code == 0, ray.err
    assert contents(tmp_path / "ray") == contents(tmp_path / "local")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--ray-address", "10.0.0.5:6379"), "--ray-address"),
        (("--engine", "nope"), "unknown engine 'nope'"),
    ],
)
def test_cli_bad_engine_is_one_line_and_writes_nothing(tmp_path, args, needle):
    z = tmp_path / "z"
    r = run_cli_process("zoo", "train", "digits", "--preset", "tiny", "--out", z, *args)
    assert r.code == 2
    assert needle in r.one_error_line()
    assert not z.exists()
