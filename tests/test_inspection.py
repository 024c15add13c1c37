"""``specbound inspect``: roles per tensor and ignored tensors, for built-in adapters."""

from __future__ import annotations

import json

import pytest

from specbound.inspection import format_inspection, inspect_model

transformers = pytest.importorskip("transformers")


def test_inspect_albert_shared(tmp_path):
    cfg = transformers.AlbertConfig(
        hidden_size=32,
        num_attention_heads=4,
        num_hidden_layers=4,
        intermediate_size=48,
        embedding_size=16,
        vocab_size=50,
    )
    transformers.AlbertForMaskedLM(cfg).save_pretrained(tmp_path)
    info = inspect_model(str(tmp_path))
    roles = {t["name"]: t["role"] for t in info["tensors"]}
    p = "albert.encoder.albert_layer_groups.0.albert_layers.0."
    assert roles[p + "attention.query.weight"] == "query @ layers 0-3"
    assert roles[p + "ffn_output.weight"] == "ffn_out @ layers 0-3"
    assert p + "attention.query.bias" in info["ignored"]
    assert "albert.encoder.embedding_hidden_mapping_in.weight" in info["ignored"]
    assert info["spec"]["num_layers"] == 4 and not info["missing"]
    assert any("ALBERT" in a for a in info["adaptations"])
    text = format_inspection(info)
    assert "query @ layers 0-3" in text and "(ignored)" in text


def test_inspect_t5_cross_attention_ignored(tmp_path):
    cfg = transformers.T5Config(
        d_model=32,
        num_heads=4,
        d_kv=8,
        num_layers=2,
        d_ff=48,
        vocab_size=50,
        decoder_start_token_id=0,
    )
    transformers.T5ForConditionalGeneration(cfg).save_pretrained(tmp_path)
    info = inspect_model(str(tmp_path))
    roles = {t["name"]: t["role"] for t in info["tensors"]}
    assert roles["encoder.block.1.layer.0.SelfAttention.q.weight"] == "query @ layer 1"
    assert roles["decoder.block.0.layer.0.SelfAttention.q.weight"] == "query @ layer 2"
    assert roles["decoder.block.1.layer.2.DenseReluDense.wo.weight"] == "ffn_out @ layer 3"
    assert roles["decoder.block.0.layer.1.EncDecAttention.q.weight"] is None
    assert "decoder.block.0.layer.1.EncDecAttention.o.weight" in info["ignored"]


def test_cli_inspect_gpt2_and_unknown(tmp_path):
    from typer.testing import CliRunner

    from specbound.cli import app

    cfg = transformers.GPT2Config(
        n_embd=32,
        n_head=4,
        n_layer=2,
        vocab_size=50,
        n_positions=16,
        bos_token_id=0,
        eos_token_id=0,
    )
    transformers.GPT2LMHeadModel(cfg).save_pretrained(tmp_path)
    runner = CliRunner()
    r = runner.invoke(app, ["inspect", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    roles = {t["name"]: t["role"] for t in info["tensors"]}
    assert roles["transformer.h.1.attn.c_attn.weight"] == "query+key+value @ layer 1"
    assert roles["transformer.h.0.mlp.c_fc.weight"] == "ffn_in @ layer 0"
    assert "transformer.wte.weight" in info["ignored"]

    conf = json.loads((tmp_path / "config.json").read_text())
    conf["model_type"] = "mystery"
    (tmp_path / "config.json").write_text(json.dumps(conf))
    r = runner.invoke(app, ["inspect", str(tmp_path)])
    assert r.exit_code == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "mapping file" in r.stderr
