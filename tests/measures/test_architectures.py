"""SPEC 9's raw weight matrices on every architecture family, taken from the transformers modules.

For each family a small random model (N = 64, so every matrix has >= 20 eigenvalues and alpha
is defined) is saved with ``save_pretrained``; the reference reads W_Q, W_K, W_V, W_O, W_in,
W_out from the live modules in the family's own way (fused splits, per-head interleaving, shared
layers, Conv1D orientation) and computes every measure with numpy's SVD
(``test_against_references.ref_matrix``), sharing no code with specbound.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specbound.analysis import analyze
from tests.measures.test_against_references import _n_params, _save, check_against, ref_matrix

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

N, H, F, L = 64, 4, 96, 2


def rv(lin) -> np.ndarray:
    """nn.Linear computes x W^T: the row-vector matrix is weight.T."""
    return lin.weight.detach().double().numpy().T


def phi3():
    cfg = transformers.Phi3Config(
        num_hidden_layers=L,
        hidden_size=N,
        num_attention_heads=H,
        num_key_value_heads=2,
        intermediate_size=F,
        vocab_size=50,
        max_position_embeddings=32,
        pad_token_id=0,
    )
    model = transformers.Phi3ForCausalLM(cfg).eval()
    d, kv = N // H, 2
    mats = []
    for blk in model.model.layers:
        qkv = rv(blk.self_attn.qkv_proj)  # columns: [q (H d) | k (kv d) | v (kv d)]
        gate_up = rv(blk.mlp.gate_up_proj)  # columns: [gate (F) | up (F)]: M_in as it is
        mats += [
            qkv[:, : H * d],
            qkv[:, H * d : (H + kv) * d],
            qkv[:, (H + kv) * d :],
            rv(blk.self_attn.o_proj),
            gate_up,
            rv(blk.mlp.down_proj),
        ]
    return model, mats


def gpt_neox():
    cfg = transformers.GPTNeoXConfig(
        num_hidden_layers=L,
        hidden_size=N,
        num_attention_heads=H,
        intermediate_size=F,
        vocab_size=50,
        max_position_embeddings=32,
    )
    model = transformers.GPTNeoXForCausalLM(cfg).eval()
    d = N // H
    mats = []
    for blk in model.gpt_neox.layers:
        # fused rows interleaved per head: (H, [q, k, v], d, N)
        w = blk.attention.query_key_value.weight.detach().double().numpy().reshape(H, 3, d, N)
        mats += [
            w[:, 0].reshape(H * d, N).T,
            w[:, 1].reshape(H * d, N).T,
            w[:, 2].reshape(H * d, N).T,
            rv(blk.attention.dense),
            rv(blk.mlp.dense_h_to_4h),
            rv(blk.mlp.dense_4h_to_h),
        ]
    return model, mats


def opt():
    cfg = transformers.OPTConfig(
        num_hidden_layers=L,
        hidden_size=N,
        num_attention_heads=H,
        ffn_dim=F,
        word_embed_proj_dim=N,
        vocab_size=50,
        max_position_embeddings=32,
    )
    model = transformers.OPTForCausalLM(cfg).eval()
    mats = []
    for blk in model.model.decoder.layers:
        at = blk.self_attn
        mats += [rv(at.q_proj), rv(at.k_proj), rv(at.v_proj), rv(at.out_proj)]
        mats += [rv(blk.fc1), rv(blk.fc2)]
    return model, mats


def albert():
    cfg = transformers.AlbertConfig(
        num_hidden_layers=3,  # one shared layer applied 3 times: counted 3 times (SPEC 9)
        hidden_size=N,
        embedding_size=32,
        num_attention_heads=H,
        intermediate_size=F,
        vocab_size=50,
        max_position_embeddings=32,
    )
    model = transformers.AlbertModel(cfg).eval()
    layer = model.encoder.albert_layer_groups[0].albert_layers[0]
    at = layer.attention
    once = [rv(at.query), rv(at.key), rv(at.value), rv(at.dense)]
    once += [rv(layer.ffn), rv(layer.ffn_output)]
    return model, once * 3


def distilbert():
    cfg = transformers.DistilBertConfig(
        n_layers=L, dim=N, n_heads=H, hidden_dim=F, vocab_size=50, max_position_embeddings=32
    )
    model = transformers.DistilBertModel(cfg).eval()
    mats = []
    for blk in model.transformer.layer:
        at = blk.attention
        mats += [rv(at.q_lin), rv(at.k_lin), rv(at.v_lin), rv(at.out_lin)]
        mats += [rv(blk.ffn.lin1), rv(blk.ffn.lin2)]
    return model, mats


def vit():
    cfg = transformers.ViTConfig(
        num_hidden_layers=L,
        hidden_size=N,
        num_attention_heads=H,
        intermediate_size=F,
        image_size=8,
        patch_size=4,
    )
    model = transformers.ViTModel(cfg, add_pooling_layer=False).eval()
    mats = []
    if hasattr(model, "layers"):  # transformers >= 5 names
        for blk in model.layers:
            at = blk.attention
            mats += [rv(at.q_proj), rv(at.k_proj), rv(at.v_proj), rv(at.o_proj)]
            mats += [rv(blk.mlp.fc1), rv(blk.mlp.fc2)]
        return model, mats
    for blk in model.encoder.layer:
        at = blk.attention.attention
        mats += [rv(at.query), rv(at.key), rv(at.value), rv(blk.attention.output.dense)]
        mats += [rv(blk.intermediate.dense), rv(blk.output.dense)]
    return model, mats


def mistral():
    cfg = transformers.MistralConfig(
        num_hidden_layers=L,
        hidden_size=N,
        num_attention_heads=H,
        num_key_value_heads=2,  # W_K, W_V: 64 x 32, so >= 20 eigenvalues
        intermediate_size=F,
        vocab_size=50,
        max_position_embeddings=32,
    )
    model = transformers.MistralForCausalLM(cfg).eval()
    mats = []
    for blk in model.model.layers:
        at, mlp = blk.self_attn, blk.mlp
        mats += [rv(at.q_proj), rv(at.k_proj), rv(at.v_proj), rv(at.o_proj)]
        mats += [np.concatenate([rv(mlp.gate_proj), rv(mlp.up_proj)], axis=1), rv(mlp.down_proj)]
    return model, mats


def t5():
    cfg = transformers.T5Config(
        num_layers=L,
        num_decoder_layers=L,
        d_model=N,
        num_heads=H,
        d_kv=N // H,
        d_ff=F,
        vocab_size=50,
        feed_forward_proj="relu",
    )
    model = transformers.T5Model(cfg).eval()
    mats = []
    # encoder blocks, then decoder self-attention blocks (cross-attention is outside SPEC 9's W)
    for stack, ffn_index in ((model.encoder, 1), (model.decoder, 2)):
        for blk in stack.block:
            at = blk.layer[0].SelfAttention
            ff = blk.layer[ffn_index].DenseReluDense
            mats += [rv(at.q), rv(at.k), rv(at.v), rv(at.o), rv(ff.wi), rv(ff.wo)]
    return model, mats


FAMILIES = {
    "phi3": phi3,
    "gpt_neox": gpt_neox,
    "opt": opt,
    "albert": albert,
    "distilbert": distilbert,
    "vit": vit,
    "mistral": mistral,
    "t5": t5,
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_measures_and_weights_table_from_modules(family: str, tmp_path: Path) -> None:
    torch.manual_seed(sorted(FAMILIES).index(family))
    model, mats = FAMILIES[family]()
    path = _save(model, tmp_path / family)
    a = analyze(path, cache=False)
    check_against(a, [ref_matrix(w) for w in mats], _n_params(path))
    assert a.measure_notes.get("htsr_alpha") is None  # every matrix has >= 20 eigenvalues
