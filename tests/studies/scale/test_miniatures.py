"""``reproduce bert-miniatures``: partial local grids and an offline huggingface_hub cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from specbound.cli import app
from specbound.studies.scale import find_local_miniature, miniature_ids
from tests.support.study_helpers import write_bert

pytest.importorskip("matplotlib")
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECBOUND_CACHE_DIR", str(tmp_path / "cache"))


def test_miniature_ids() -> None:
    ids = miniature_ids()
    assert len(ids) == 24 and len(set(ids)) == 24
    assert "google/bert_uncased_L-2_H-128_A-2" in ids
    assert "google/bert_uncased_L-12_H-768_A-12" in ids
    assert "google/bert_uncased_L-8_H-512_A-8" in ids


def test_partial_local_dir(tmp_path: Path) -> None:
    d = tmp_path / "minis"
    write_bert(d / "bert_uncased_L-2_H-128_A-2", 2, 128)
    write_bert(d / "bert_uncased_L-4_H-128_A-2", 4, 128)
    write_bert(d / "google" / "bert_uncased_L-2_H-256_A-4", 2, 256)  # the other layout
    (d / "bert_uncased_L-6_H-128_A-2").mkdir()  # no config.json: counts as missing
    assert find_local_miniature(d, "google/bert_uncased_L-2_H-256_A-4") is not None
    out = tmp_path / "out"
    r = CliRunner().invoke(
        app, ["reproduce", "bert-miniatures", "--local-dir", str(d), "--out", str(out), "-q"]
    )
    assert r.exit_code == 0, r.output
    assert "21 of 24 checkpoints missing" in r.output
    assert "bert_uncased_L-12_H-768_A-12" in r.output and "bert_uncased_L-6_H-128_A-2" in r.output
    assert "bert_uncased_L-2_H-128_A-2," not in r.output.split("missing:", 1)[1]
    m = pd.read_csv(out / "models.csv")
    assert sorted(m.model) == [
        "google/bert_uncased_L-2_H-128_A-2",
        "google/bert_uncased_L-2_H-256_A-4",
        "google/bert_uncased_L-4_H-128_A-2",
    ]
    g = pd.read_csv(out / "growth.csv")
    assert {("hidden_size", 2), ("num_layers", 128)} <= {
        (r.axis, int(r.fixed_value)) for r in g[g.fit == "per_fixed"].itertuples()
    }
    figs = {p.name for p in (out / "figures").glob("*.svg")}
    assert {"growth_vs_hidden_size.svg", "growth_vs_num_layers.svg", "norm_scaling_L2.svg"} <= figs
    # L=12, N=768 is absent: the decay/contribution figures use the largest model present
    assert {"L4_N128_spectral_decay.svg", "L4_N128_contribution_vs_p.svg"} <= figs
    html = (out / "report.html").read_text()
    assert "3 of 24" in html and "bert_uncased_L-12_H-768_A-12" in html


def test_reproduce_errors(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["reproduce", "gpt-zoo", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "bert-miniatures" in r.output
    empty = tmp_path / "empty"
    empty.mkdir()
    r = CliRunner().invoke(
        app,
        [
            "reproduce",
            "bert-miniatures",
            "--local-dir",
            str(empty),
            "--out",
            str(tmp_path / "o"),
            "-q",
        ],
    )
    assert r.exit_code == 2 and "none of the 24" in r.output
    assert not (tmp_path / "o").exists()


def _fake_hub_cache(root: Path, names: list[tuple[str, int, int]]) -> Path:
    """A huggingface_hub cache laid out as the real one: models--org--name/{refs,snapshots}."""
    hub = root / "hub"
    for name, L, N in names:
        repo = hub / f"models--google--{name}"
        write_bert(repo / "snapshots" / COMMIT, L, N)
        (repo / "refs").mkdir(parents=True)
        (repo / "refs" / "main").write_text(COMMIT)
    return hub


def _offline_env(root: Path, hub: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        HF_HOME=str(root / "hf_home"),
        HF_HUB_CACHE=str(hub),
        SPECBOUND_CACHE_DIR=str(root / "sbcache"),
    )
    env.pop("HUGGINGFACE_HUB_CACHE", None)
    return env


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specbound.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_offline_hub_cache(tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    hub = _fake_hub_cache(
        tmp_path, [("bert_uncased_L-2_H-128_A-2", 2, 128), ("bert_uncased_L-4_H-128_A-2", 4, 128)]
    )
    env = _offline_env(tmp_path, hub)
    ids = ["google/bert_uncased_L-2_H-128_A-2", "google/bert_uncased_L-4_H-128_A-2"]
    p = _cli(["scale", *ids, "--out", str(tmp_path / "s"), "-q"], env)
    assert p.returncode == 0, p.stderr
    m = pd.read_csv(tmp_path / "s" / "models.csv")
    assert sorted(m.model) == ids and list(m.num_layers) == [2, 4]

    p = _cli(["reproduce", "bert-miniatures", "--out", str(tmp_path / "r"), "-q"], env)
    assert p.returncode == 0, p.stderr
    assert "22 of 24 checkpoints missing" in p.stderr
    assert len(pd.read_csv(tmp_path / "r" / "models.csv")) == 2

    p = _cli(["analyze", "google/bert_uncased_L-6_H-256_A-4", "-q"], env)
    assert p.returncode == 2
    assert p.stderr.startswith("error:") and "offline" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_ceiling_diagnosis_in_tables_and_answer(tmp_path: Path) -> None:
    """models.csv carries the rank-ceiling diagnosis (checked against the ranks), growth.csv fits
    log10 B_ceiling, and the study's answer compares the proxy's growth with the ceiling's."""
    import math

    import numpy as np

    from specbound.analysis import analyze
    from specbound.studies.scale import locate_miniatures, scale

    d = tmp_path / "minis"
    for L in (2, 4):
        for N in (128, 256):
            write_bert(d / f"bert_uncased_L-{L}_H-{N}_A-{N // 64}", L, N)
    out = tmp_path / "out"
    r = CliRunner().invoke(
        app, ["reproduce", "bert-miniatures", "--local-dir", str(d), "--out", str(out), "-q"]
    )
    assert r.exit_code == 0, r.output
    m = pd.read_csv(out / "models.csv").set_index("model")
    present, _, _ = locate_miniatures(d)
    for hub_id, path in present:
        a = analyze(path)
        ranks = a.spectra.rank.astype(float)
        N, L = a.spec.hidden_size, a.spec.num_layers
        ceiling = math.log10(float(np.sqrt(ranks * N).sum()) + math.sqrt(L))
        row = m.loc[hub_id]
        assert row["log10_spectrum_adaptive_ceiling"] == pytest.approx(ceiling, abs=1e-12)
        gap = ceiling - a.bounds.spectrum_adaptive.log10
        assert row["spectrum_adaptive_ceiling_gap"] == pytest.approx(gap, abs=1e-9)
        assert row["spectrum_adaptive_share_p0"] == pytest.approx(np.mean(a.details.p_star == 0))
    g = pd.read_csv(out / "growth.csv")
    ceil = g[g.measure == "log10_spectrum_adaptive_ceiling"]
    assert set(ceil.axis) == {"hidden_size", "num_layers"} and set(ceil.fit) == {
        "per_fixed",
        "pooled",
    }
    answer = scale([p for _, p in present], names=[h for h, _ in present]).verdict()
    text = " ".join(answer)
    assert "rank ceiling" in text and "(its rank ceiling sum sqrt(r N) + sqrt(L))" in text
    assert "rests on two points (two values of N)" in text  # a 2 x 2 grid
    assert "at the rank ceiling" in text  # how many models sit there (possibly none)
