"""GPT-2, GPT-NeoX, OPT and LLaMA-family adapters against the models' own forward."""

from __future__ import annotations

import pytest

from tests.support.adapter_harness import (  # noqa: F401  (seeded_torch: autouse fixture)
    EAGER,
    Family,
    check_family,
    seeded_torch,
    text_inputs,
    torch,
    transformers,
)


def test_gpt2_conv1d_fused_c_attn(tmp_path):
    cfg = transformers.GPT2Config(
        n_embd=32,
        n_head=4,
        n_layer=2,
        vocab_size=50,
        n_positions=32,
        bos_token_id=0,
        eos_token_id=0,
        **EAGER,
    )
    model = transformers.GPT2LMHeadModel(cfg)
    blocks = lambda m: m.transformer.h  # noqa: E731
    fam = Family(
        attn=lambda m: [b.attn for b in blocks(m)],
        x_from="c_attn",
        y_from="c_proj",
        ffn=lambda m: [(b.mlp.c_fc, b.mlp.c_proj) for b in blocks(m)],
        inputs=text_inputs(50),
    )
    rep = check_family(model, fam, tmp_path)
    rep.assert_ok()
    s = rep.spec
    assert (s.activation, s.intermediate_size) == ("gelu_new", 128)
    assert any("c_attn" in a for a in s.adaptations)
    assert rep.analysis.l_phi == pytest.approx(1.13)


def test_gpt_neox_interleaved_qkv(tmp_path):
    cfg = transformers.GPTNeoXConfig(
        hidden_size=32,
        num_attention_heads=4,
        num_hidden_layers=2,
        intermediate_size=48,
        vocab_size=50,
        rotary_pct=0.5,
        bos_token_id=0,
        eos_token_id=0,
        **EAGER,
    )
    model = transformers.GPTNeoXForCausalLM(cfg)
    blocks = lambda m: m.gpt_neox.layers  # noqa: E731
    fam = Family(
        attn=lambda m: [b.attention for b in blocks(m)],
        x_from="query_key_value",
        y_from="dense",
        ffn=lambda m: [(b.mlp.dense_h_to_4h, b.mlp.dense_4h_to_h) for b in blocks(m)],
        inputs=text_inputs(50),
    )
    rep = check_family(model, fam, tmp_path)
    rep.assert_ok()
    assert any("interleaved per head" in a for a in rep.spec.adaptations)


def test_opt(tmp_path):
    cfg = transformers.OPTConfig(
        hidden_size=32,
        num_attention_heads=4,
        num_hidden_layers=2,
        ffn_dim=48,
        vocab_size=50,
        word_embed_proj_dim=32,
        max_position_embeddings=64,
        **EAGER,
    )
    model = transformers.OPTForCausalLM(cfg)
    blocks = lambda m: m.model.decoder.layers  # noqa: E731
    fam = Family(
        attn=lambda m: [b.self_attn for b in blocks(m)],
        x_from="q_proj",
        y_from="out_proj",
        ffn=lambda m: [(b.fc1, b.fc2) for b in blocks(m)],
        inputs=text_inputs(50),
        q_scale=8**-0.5,  # OPT multiplies q_proj's output by 1/sqrt(d_h)
    )
    rep = check_family(model, fam, tmp_path)
    rep.assert_ok()
    assert rep.spec.activation == "relu" and rep.analysis.l_phi == 1.0


LLAMA_CASES = [
    # model_type, config class, model class, heads, kv heads, explicit head_dim
    ("llama", "LlamaConfig", "LlamaForCausalLM", 4, 2, None),
    ("llama", "LlamaConfig", "LlamaModel", 4, 4, 12),
    ("mistral", "MistralConfig", "MistralForCausalLM", 4, 1, None),
    ("qwen2", "Qwen2Config", "Qwen2ForCausalLM", 4, 2, 16),
    ("gemma", "GemmaConfig", "GemmaForCausalLM", 4, 1, 16),
]


@pytest.mark.parametrize(
    ("model_type", "cfg_cls", "model_cls", "heads", "kv", "head_dim"), LLAMA_CASES
)
def test_llama_family_gqa_gated(tmp_path, model_type, cfg_cls, model_cls, heads, kv, head_dim):
    extra = {"head_dim": head_dim} if head_dim else {}
    cfg = getattr(transformers, cfg_cls)(
        hidden_size=32,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        num_hidden_layers=2,
        intermediate_size=40,
        vocab_size=50,
        max_position_embeddings=64,
        **extra,
        **EAGER,
    )
    model = getattr(transformers, model_cls)(cfg)
    base = model.model if hasattr(model, "model") else model
    fam = Family(
        attn=lambda m: [b.self_attn for b in base.layers],
        x_from="q_proj",
        y_from="o_proj",
        ffn=lambda m: [(b.mlp.gate_proj, b.mlp.down_proj) for b in base.layers],
        inputs=text_inputs(50),
    )
    rep = check_family(model, fam, tmp_path)
    rep.assert_ok()
    s = rep.spec
    assert s.architecture == model_type
    assert (s.num_heads, s.kv_heads, s.head_dim) == (heads, kv, head_dim or 32 // heads)
    if model_type == "gemma":
        assert s.activation == "gelu_pytorch_tanh" and rep.analysis.l_phi == 1.13
    else:
        assert s.activation == "silu" and rep.analysis.l_phi == pytest.approx(1.0999)
    notes = rep.analysis.summary()["adaptations"]
    assert any(n.startswith("gated MLP") for n in notes)
    assert any(n.startswith("grouped-query attention") for n in notes) == (kv != heads)
    assert rep.analysis.matrices.query("matrix_type == 'M_in'").cols.unique().tolist() == [80]


def test_phi3_fused_qkv_and_gate_up(tmp_path):
    cfg = transformers.Phi3Config(
        hidden_size=32,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_hidden_layers=2,
        intermediate_size=40,
        vocab_size=50,
        max_position_embeddings=64,
        pad_token_id=0,
        bos_token_id=0,
        eos_token_id=0,
        **EAGER,
    )
    model = transformers.Phi3ForCausalLM(cfg)
    layers = lambda m: m.model.layers  # noqa: E731
    fam = Family(
        attn=lambda m: [b.self_attn for b in layers(m)],
        x_from="qkv_proj",
        y_from="o_proj",
        ffn=lambda m: [(b.mlp.gate_up_proj, b.mlp.down_proj) for b in layers(m)],
        inputs=text_inputs(50),
    )
    rep = check_family(model, fam, tmp_path)
    rep.assert_ok()
    s = rep.spec
    assert (s.architecture, s.num_heads, s.kv_heads) == ("phi3", 4, 2)
    assert any("qkv_proj" in a for a in s.adaptations)
