"""``specbound layers`` (issue 36 item 2): AlphaPruning sparsities and TempBalance factors
against hand computations, the parameter-weighted mean against the target, tensor names against
the checkpoint's, failed fits unmapped."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from specbound.errors import SpecboundError
from specbound.layerwise import (
    ALPHAPRUNING_COLUMNS,
    alphapruning_sparsities,
    layerwise,
    tempbalance_factors,
)
from tests.support.cli_runner import run_cli, run_cli_process


def test_alphapruning_by_hand():
    """metrics 2, 3, 4 and one failed fit, 100/200/300/400 parameters, S = 0.5, eps = 0.2:
    r = 0.8, 1.0, 1.2; eta = 0.5 * 600 / (80 + 200 + 360) = 0.46875."""
    ratio, s = alphapruning_sparsities([2.0, 3.0, 4.0, np.nan], [100, 200, 300, 400], 0.5, 0.2)
    np.testing.assert_allclose(ratio[:3], [0.8, 1.0, 1.2], rtol=0, atol=1e-15)
    assert np.isnan(ratio[3])
    np.testing.assert_allclose(s, [0.375, 0.46875, 0.5625, 0.5], rtol=0, atol=1e-15)
    assert abs(np.dot(s, [100, 200, 300, 400]) / 1000 - 0.5) <= 1e-15


def test_alphapruning_equal_metrics_and_limits():
    _, s = alphapruning_sparsities([3.0, 3.0], [10, 30], 0.6, 0.3)
    np.testing.assert_allclose(s, [0.6, 0.6], rtol=0, atol=1e-15)
    with pytest.raises(SpecboundError, match=">= 1"):
        alphapruning_sparsities([1.0, 9.0], [1, 1], 0.95, 0.5)
    with pytest.raises(SpecboundError):
        alphapruning_sparsities([1.0], [1], 1.0, 0.1)
    with pytest.raises(SpecboundError):
        alphapruning_sparsities([1.0], [1], 0.5, 1.0)


def test_tempbalance_by_hand():
    f = tempbalance_factors([2.0, 3.0, 4.0, np.nan], 0.5, 1.5)
    np.testing.assert_allclose(f, [0.5, 1.0, 1.5, 1.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(tempbalance_factors([5.0, 5.0], 0.6, 1.2), [0.9, 0.9], atol=1e-15)
    with pytest.raises(SpecboundError, match=r"^lr_max must be >= lr_min=1\.5, got 0\.5$"):
        tempbalance_factors([1.0], 1.5, 0.5)


def test_cli_names_flags_not_parameters(tmp_path):
    """``--lr-max must be >= lr_min`` named a Python parameter on the command line; --for and
    --granularity are choices (refused before the model is read)."""
    from specbound.layerwise import GRANULARITIES, METHODS

    r = run_cli("layers", tmp_path / "none", "--for", "tempbalance", "--lr-min", "2")
    assert r.one_error_line() == "error: --lr-max must be >= --lr-min 2, got 1.5"
    r = run_cli("layers", tmp_path / "none", "--for", "nope")
    assert "'nope' is not one of " + ", ".join(f"'{m}'" for m in METHODS) in r.one_error_line()
    r = run_cli("layers", tmp_path / "none", "--for", "alphapruning", "--granularity", "x")
    assert "is not one of " + ", ".join(f"'{g}'" for g in GRANULARITIES) in r.one_error_line()


@pytest.fixture(scope="module")
def minilm(minilm_dir):
    from specbound.analysis import analyze

    return analyze(minilm_dir, measures=["htsr_alpha"], cache=False)


def _checkpoint_weights(minilm_dir) -> dict[str, tuple[int, ...]]:
    from tests.support.safetensors_np import load_file

    sd = load_file(str(minilm_dir / "model.safetensors"))
    return {k: v.shape for k, v in sd.items()}


def test_minilm_alphapruning_against_hand_formula(minilm_dir, minilm):
    df = layerwise(minilm, "alphapruning", sparsity=0.7, epsilon=0.2)
    assert list(df.columns) == ALPHAPRUNING_COLUMNS and len(df) == 36
    shapes = _checkpoint_weights(minilm_dir)
    assert set(df["tensor"]) <= set(shapes)  # the checkpoint's own tensor names
    assert all(df["parameters"][i] == np.prod(shapes[t]) for i, t in enumerate(df["tensor"]))
    w = df["parameters"].to_numpy(dtype=float)
    assert abs(float(np.dot(w, df["sparsity"]) / w.sum()) - 0.7) <= 1e-12
    # by hand: the layer's metric is the mean alpha of its ok fits, mapped to [0.8, 1.2]
    weights = minilm.weights
    ok = weights[weights["htsr_fit"] == "ok"]
    q = ok.groupby("layer")["htsr_alpha"].mean()
    r = 0.8 + (q - q.min()) / (q.max() - q.min()) * 0.4
    per_layer = weights.groupby("layer")["rows"].count()
    params = (weights["rows"] * weights["cols"]).groupby(weights["layer"]).sum()
    eta = 0.7 * params.sum() / float((params * r).sum())
    for row in df.itertuples():
        assert row.sparsity == pytest.approx(eta * r[row.layer], rel=1e-12)
    assert set(per_layer) == {6}
    # the failed fits are flagged in the export, their layer's value from the ok fits
    assert (df["htsr_fit"] != "ok").sum() == 5
    assert df.loc[df["layer"] == 4, "sparsity"].nunique() == 1


def test_minilm_per_matrix_and_tempbalance_skip_failed_fits(minilm):
    ap = layerwise(minilm, "alphapruning", sparsity=0.5, epsilon=0.1, granularity="matrix")
    failed = ap["htsr_fit"] != "ok"
    assert failed.sum() == 5 and not ap.loc[failed, "mapped"].any()
    assert (ap.loc[failed, "sparsity"] == 0.5).all()
    w = ap["parameters"].to_numpy(dtype=float)
    assert abs(float(np.dot(w, ap["sparsity"]) / w.sum()) - 0.5) <= 1e-12
    tb = layerwise(minilm, "tempbalance", lr_min=0.5, lr_max=1.5)
    assert (tb.loc[tb["htsr_fit"] != "ok", "lr_factor"] == 1.0).all()
    ok = tb[tb["mapped"]]
    a = ok["htsr_alpha"]
    expect = 0.5 + (a - a.min()) / (a.max() - a.min())
    np.testing.assert_allclose(ok["lr_factor"], expect, rtol=1e-12)
    assert ok["lr_factor"].min() == 0.5 and ok["lr_factor"].max() == 1.5


def test_no_ok_fit_gets_the_target(tiny_bert):
    """hidden 8: every weight has < 20 eigenvalues, so no fit: sparsity S and factor 1."""
    path = tiny_bert()
    ap = layerwise(path, "alphapruning", sparsity=0.6, cache=False)
    assert (ap["htsr_fit"] == "short_tail").all() and (ap["sparsity"] == 0.6).all()
    assert not ap["mapped"].any()
    tb = layerwise(path, "tempbalance", cache=False)
    assert (tb["lr_factor"] == 1.0).all()


def test_gated_mlp_rows_split_into_gate_and_up(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        num_hidden_layers=1,
        hidden_size=32,
        num_attention_heads=4,
        num_key_value_heads=4,
        intermediate_size=48,
        vocab_size=40,
        max_position_embeddings=16,
    )
    LlamaForCausalLM(cfg).save_pretrained(tmp_path / "m", safe_serialization=True)
    df = layerwise(tmp_path / "m", "tempbalance", cache=False)
    gate = df[df["tensor"].str.endswith("gate_proj.weight")]
    up = df[df["tensor"].str.endswith("up_proj.weight")]
    assert len(gate) == len(up) == 1
    assert gate["parameters"].item() == up["parameters"].item() == 32 * 48
    assert gate["lr_factor"].item() == up["lr_factor"].item()
    assert "+" not in "".join(df["tensor"])


def test_cli_layers_csv_json_and_refusals(minilm_dir, tmp_path):
    out = tmp_path / "ap.csv"
    r = run_cli_process(
        "layers", str(minilm_dir), "--for", "alphapruning", "--sparsity", "0.6", "--out", str(out)
    )
    assert r.code == 0, r.err
    assert "parameter-weighted mean sparsity 0.6" in r.out
    csv = pd.read_csv(out)
    w = csv["parameters"].to_numpy(dtype=float)
    assert abs(float(np.dot(w, csv["sparsity"]) / w.sum()) - 0.6) <= 1e-12
    # the same export again: replaces the file it wrote
    r = run_cli("layers", str(minilm_dir), "--for", "alphapruning", "--out", str(out), "--json")
    assert r.code == 0, r.err
    rows = json.loads(r.out)["rows"]
    assert [x["tensor"] for x in rows] == list(pd.read_csv(out)["tensor"])
    # a file it did not write, another method's export, bad options: one line, nothing written
    foreign = tmp_path / "mine.csv"
    foreign.write_text("a,b\n1,2\n")
    r = run_cli("layers", str(minilm_dir), "--for", "tempbalance", "--out", str(foreign))
    assert r.code == 2 and "never overwrites" in r.one_error_line()
    assert foreign.read_text() == "a,b\n1,2\n"
    r = run_cli("layers", str(minilm_dir), "--for", "tempbalance", "--out", str(out))
    assert r.code == 2 and "not a specbound layers export" in r.one_error_line()
    for args in (
        ["--for", "nope"],
        ["--for", "alphapruning", "--sparsity", "1.5"],
        ["--for", "alphapruning", "--sparsity", "0.95", "--epsilon", "0.5"],
        ["--for", "tempbalance", "--lr-min", "2"],
        ["--for", "alphapruning", "--granularity", "head"],
    ):
        r = run_cli("layers", str(minilm_dir), *args, "--out", str(tmp_path / "x.csv"))
        assert r.code == 2, args
        r.one_error_line()
        assert not (tmp_path / "x.csv").exists()
