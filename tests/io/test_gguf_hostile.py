"""Hostile GGUF headers, built byte by byte (tests/support/gguf_bytes.py; no gguf package, so
these run in the core-only environment too): each is one line naming the file and the field or
tensor, exit 2, nothing written, never a hang or a MemoryError. Also: an F32 GGUF analyzed
without the gguf package against the dense reference, the folder scan, and the wording of
config-derived errors (GGUF metadata keys for a GGUF, config.json unchanged for a folder)."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

import specbound
from specbound.errors import CheckpointError
from specbound.io.gguf_file import MAX_KV, GGUFFile
from tests.support.cli_runner import run_cli
from tests.support.gguf_bytes import (
    ARRAY,
    Q8_0,
    STRING,
    UINT64,
    build_file,
    default_weights,
    enc,
    info,
    kv,
    llama_kvs,
    patched_offsets,
    text,
    u32,
)
from tests.support.reference import reference_blocks

L_PHI_SILU = 1.0999


def _gguf_error(path: Path, *words: str) -> str:
    """Both ways in: GGUFFile raises a CheckpointError, and the CLI says one line, exit 2."""
    with pytest.raises(CheckpointError) as exc:
        GGUFFile(path)
    msg = str(exc.value)
    assert str(path) in msg and "\n" not in msg
    for w in words:
        assert w in msg, msg
    r = run_cli("analyze", path, "--out", path.parent / "out", "--no-cache")
    assert r.code == 2, r.err
    assert r.one_error_line() == f"error: {msg}"
    assert not (path.parent / "out").exists()
    return msg


def _reference(weights: dict[str, np.ndarray]) -> dict:
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    block = {"wq": w["attn_q"], "wk": w["attn_k"], "wv": w["attn_v"], "wo": w["attn_output"]}
    block |= {"w_in": np.vstack([w["ffn_gate"], w["ffn_up"]]), "w_out": w["ffn_down"]}
    return reference_blocks([block], 32, 4, l_phi=L_PHI_SILU)


def test_hand_built_file_without_gguf_package(tmp_path, monkeypatch):
    """The builder's default is a good file (so each hostile variant below differs from a valid
    one by one field): with the gguf package hidden, specbound reads its header and its F32
    tensors itself, and the proxies equal the dense reference of the weights written."""
    monkeypatch.setitem(sys.modules, "gguf", None)
    p = tmp_path / "ok.gguf"
    p.write_bytes(build_file())
    res = specbound.analyze(str(p), cache=False)
    assert res.spec.num_layers == 1 and res.spec.hidden_size == 32 and res.l_phi == L_PHI_SILU
    ref = _reference(default_weights())
    for c in ("spectral_norm", "frobenius_norm", "nuclear_norm", "rank"):
        np.testing.assert_allclose(
            res.matrices[c], [r[c] for r in ref["rows"]], rtol=1e-9, err_msg=c
        )
    assert res.bounds.spectrum_adaptive.value == pytest.approx(ref["spectrum_adaptive"], 1e-9)
    assert res.bounds.norm_based.value == pytest.approx(ref["norm_based"], rel=1e-9)


def test_quantized_tensor_without_gguf_package(tmp_path, monkeypatch):
    """A Q8_0 tensor without the gguf package: the file opens, reading the tensor is one line
    naming it and the extra."""
    monkeypatch.setitem(sys.modules, "gguf", None)
    p = tmp_path / "q.gguf"
    p.write_bytes(
        build_file(infos=[info(b"blk.0.attn_q.weight", [32, 2], Q8_0, 0)], data=b"\0" * 96)
    )
    f = GGUFFile(p)
    assert f.dtype("blk.0.attn_q.weight") == "Q8_0" and f.shape("blk.0.attn_q.weight") == (2, 32)
    with pytest.raises(CheckpointError, match=r"'blk.0.attn_q.weight'.*specbound\[gguf\]"):
        f.get("blk.0.attn_q.weight")


@pytest.mark.parametrize(
    ("field", "kvs"),
    [
        ("general.name", llama_kvs(name=b"tiny\xff\xfe")),
        ("general.architecture", llama_kvs(arch=b"llam\xe9")),
        ("test.license", [*llama_kvs(), text(b"test.license", b"\xc3(")]),
    ],
)
def test_text_field_not_utf8(tmp_path, field, kvs):
    """Formerly "internal error (UnicodeDecodeError)", exit 1."""
    p = tmp_path / "bad.gguf"
    p.write_bytes(build_file(kvs))
    _gguf_error(p, f"metadata '{field}' is not UTF-8 text")


def test_key_and_tensor_name_not_utf8(tmp_path):
    p = tmp_path / "key.gguf"
    p.write_bytes(build_file([*llama_kvs(), u32(b"bad.\xff", 1)]))
    _gguf_error(p, "metadata key 7 is not UTF-8 text")
    p = tmp_path / "name.gguf"
    p.write_bytes(build_file(infos=[info(b"blk.\xff", [32], 0, 0)], data=b"\0" * 128))
    _gguf_error(p, "the name of tensor 0 is not UTF-8 text")


def test_misaligned_offset(tmp_path):
    """The last tensor moved by 16 bytes into 16 extra bytes: inside the file, overlapping
    nothing, but not on the 32-byte alignment (formerly analyzed)."""
    p = patched_offsets(tmp_path, {"blk.0.ffn_down.weight": 6 * 4096 + 16}, extra=16)
    _gguf_error(p, "tensor 'blk.0.ffn_down.weight' has data offset 24592", "alignment 32")


def test_overlapping_offsets(tmp_path):
    """W_K stored at W_Q's offset: aligned, in the file, but the same bytes (formerly analyzed
    as if W_K were W_Q)."""
    p = patched_offsets(tmp_path, {"blk.0.attn_k.weight": 0})
    _gguf_error(p, "tensor 'blk.0.attn_q.weight' overlaps tensor 'blk.0.attn_k.weight'")
    p = patched_offsets(tmp_path, {"blk.0.attn_v.weight": 4096 + 2048})
    _gguf_error(p, "tensor 'blk.0.attn_v.weight' overlaps tensor 'blk.0.attn_k.weight'")


def test_gguf_wording_for_metadata_errors(tmp_path):
    """A GGUF has no config.json: config-derived errors name the GGUF metadata key, the file's
    tensor names, and say to re-convert the file."""
    kvs = llama_kvs()
    kvs[2] = u32(b"llama.block_count", 2)
    p = tmp_path / "blocks.gguf"
    p.write_bytes(build_file(kvs))
    r = run_cli("inspect", p)
    line = r.one_error_line()
    assert r.code == 2 and "config.json" not in line
    assert f"the GGUF metadata of {p} says llama.block_count = 2" in line
    assert "no tensor 'blk.1.attn_q.weight'" in line and "re-convert the file" in line

    kvs = [*llama_kvs(), u32(b"llama.attention.head_count_kv", 3)]
    p = tmp_path / "kv.gguf"
    p.write_bytes(build_file(kvs))
    line = run_cli("inspect", p).one_error_line()
    assert "config.json" not in line
    assert (
        "llama.attention.head_count 4 is not a multiple of llama.attention.head_count_kv 3" in line
    )

    kvs = llama_kvs()
    kvs[3] = u32(b"llama.embedding_length", 64)
    p = tmp_path / "shape.gguf"
    p.write_bytes(build_file(kvs))
    r = run_cli("analyze", p, "--out", tmp_path / "o", "--no-cache")
    line = r.one_error_line()
    assert r.code == 2 and "config.json" not in line and not (tmp_path / "o").exists()
    assert "tensor 'blk.0." in line and f"the GGUF metadata of {p} implies" in line


def _hf_llama(path: Path, **config) -> Path:
    """The same one-block llama as a Hugging Face folder (config.json + safetensors)."""
    from tests.support.safetensors_np import save_file

    path.mkdir()
    cfg = {"model_type": "llama", "num_hidden_layers": 1, "hidden_size": 32}
    cfg |= {"num_attention_heads": 4, "intermediate_size": 32, **config}
    (path / "config.json").write_text(json.dumps(cfg))
    mods = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"]
    mods += ["mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]
    w = {f"model.layers.0.{m}.weight": np.ones((32, 32), np.float32) for m in mods}
    save_file(w, str(path / "model.safetensors"))
    return path


def test_config_json_wording_unchanged(tmp_path):
    """The same inconsistencies in a Hugging Face folder read exactly as before."""
    d = _hf_llama(tmp_path / "blocks", num_hidden_layers=2)
    assert run_cli("inspect", d).one_error_line() == (
        f"error: config.json of {d} says num_hidden_layers = 2, but the weights have no block 1 "
        "(no tensor 'model.layers.1.self_attn.q_proj.weight'); set num_hidden_layers to the "
        "number of stored blocks"
    )
    d = _hf_llama(tmp_path / "kv", num_key_value_heads=3)
    assert run_cli("inspect", d).one_error_line() == (
        f"error: num_attention_heads 4 is not a multiple of num_key_value_heads 3 in config.json "
        f"of {d}; fix config.json"
    )
    d = _hf_llama(tmp_path / "heads", num_attention_heads=3, num_key_value_heads=3)
    assert run_cli("inspect", d).one_error_line() == (
        f"error: hidden_size 32 is not divisible by the number of attention heads 3 in "
        f"config.json of {d}; fix config.json or set head_dim"
    )
    d = _hf_llama(tmp_path / "shape", intermediate_size=64)
    r = run_cli("analyze", d, "--out", tmp_path / "o", "--no-cache")
    assert r.one_error_line() == (
        "error: tensor 'model.layers.0.mlp.gate_proj.weight' has shape (32, 32) but config.json "
        f"of {d} implies (64, 32); check that config.json belongs to these weights"
    )


# --- absurd counts, lengths and truncations ------------------------------------------------


@pytest.mark.parametrize(
    ("blob", "words"),
    [
        (lambda: build_file(n_kv=2**60), ["key/value count is 1152921504606846976"]),
        (  # a file large enough to hold that many
            lambda: build_file(n_kv=MAX_KV + 1) + b"\0" * (14 * MAX_KV),
            [f"specbound reads at most {MAX_KV}"],
        ),
        (lambda: build_file(n_tensors=2**60), ["tensor count is 1152921504606846976"]),
        (lambda: build_file(version=1), ["GGUF version 1"]),
        (lambda: build_file(version=99), ["GGUF version 99"]),
        (lambda: build_file(version=3 << 24), ["big-endian"]),
        (lambda: build_file([struct.pack("<Q", 2**60) + b"key"]), ["metadata key 0"]),
        (
            lambda: build_file([kv(b"a", ARRAY, struct.pack("<IQ", STRING, 2**60))]),
            ["the length of metadata 'a' is 1152921504606846976"],
        ),
        (
            lambda: build_file([kv(b"a", ARRAY, struct.pack("<IQ", UINT64, 2**61))]),
            ["the length of metadata 'a' is 2305843009213693952"],
        ),
        (
            lambda: build_file(
                [
                    kv(
                        b"tok",
                        ARRAY,
                        struct.pack("<IQ", STRING, 3) + enc(b"a") + struct.pack("<Q", 2**60),
                    )
                ]
            ),
            ["string 1 of metadata 'tok' runs past the end"],
        ),
        (
            lambda: build_file([kv(b"a", ARRAY, struct.pack("<IQ", ARRAY, 1))]),
            ["metadata 'a' is an array of arrays"],
        ),
        (lambda: build_file([kv(b"a", 13, b"\0" * 8)]), ["metadata 'a' has unknown value type 13"]),
        (
            lambda: build_file([kv(b"a", ARRAY, struct.pack("<IQ", 99, 1))]),
            ["metadata 'a' has unknown element type 99"],
        ),
        (lambda: build_file([u32(b"a", 1), u32(b"a", 2)]), ["metadata key 'a' appears twice"]),
        (
            lambda: build_file([*llama_kvs(), u32(b"general.alignment", 48)]),
            ["'general.alignment' is 48, not a power of 2"],
        ),
        (
            lambda: build_file(
                [*llama_kvs(), kv(b"general.alignment", UINT64, struct.pack("<Q", 32))]
            ),
            ["'general.alignment' is not a UINT32"],
        ),
        (
            lambda: build_file(
                infos=[info(b"t", [32], 0, 0), info(b"t", [32], 0, 128)], data=b"\0" * 256
            ),
            ["tensor 't' appears twice"],
        ),
        (
            lambda: build_file(infos=[info(b"t", [2] * 5, 0, 0)], data=b"\0" * 128),
            ["tensor 't' has 5 dimensions"],
        ),
        (
            lambda: build_file(infos=[enc(b"t") + struct.pack("<I", 2**31)], data=b"\0" * 64),
            ["tensor 't' has 2147483648 dimensions"],
        ),
        (
            lambda: build_file(infos=[info(b"t", [2**40, 2**40], 0, 0)], data=b"\0" * 128),
            ["tensor 't' runs to byte", "past the end of the file"],
        ),
        (
            lambda: build_file(infos=[info(b"t", [2**63, 1], 0, 0)], data=b"\0" * 128),
            ["tensor 't' has dimensions [9223372036854775808, 1], not counts"],
        ),
        (
            lambda: build_file(infos=[info(b"t", [32], 4, 0)], data=b"\0" * 128),
            ["tensor 't' has unknown ggml type 4"],
        ),
        (
            lambda: build_file(infos=[info(b"t", [16], Q8_0, 0)], data=b"\0" * 128),
            ["tensor 't' of type Q8_0 has a first dimension of 16, not a multiple of its block"],
        ),
        (
            lambda: build_file(infos=[info(b"t", [32], 0, 2**63)], data=b"\0" * 128),
            ["tensor 't' runs to byte"],
        ),
    ],
)
def test_hostile_header(tmp_path, blob, words):
    p = tmp_path / "h.gguf"
    p.write_bytes(blob())
    _gguf_error(p, "not a readable GGUF file", *words)


def test_every_truncation_is_one_line(tmp_path):
    """The hand-built file cut after every byte of its header and at points of its data."""
    data = build_file()
    header_end = len(data) - 7 * 4096
    cuts = [*range(0, header_end + 1), *range(header_end + 1, len(data), 997)]
    for cut in cuts:
        p = tmp_path / f"c{cut}.gguf"
        p.write_bytes(data[:cut])
        with pytest.raises(CheckpointError, match="not a readable GGUF file") as exc:
            GGUFFile(p)
        assert str(p) in str(exc.value)
        p.unlink()
    # and through the CLI for a few of them
    for cut in (0, 3, 23, 30, header_end - 1, len(data) - 1):
        p = tmp_path / f"c{cut}.gguf"
        p.write_bytes(data[:cut])
        _gguf_error(p)


# --- the folder scan ------------------------------------------------------------------------


def test_folder_with_two_gguf_files_of_any_case(tmp_path):
    """a.gguf and b.GGUF: formerly a.gguf analyzed silently; now both named, exit 2."""
    d = tmp_path / "models"
    d.mkdir()
    (d / "a.gguf").write_bytes(build_file())
    (d / "b.GGUF").write_bytes(build_file())
    r = run_cli("analyze", d, "--out", tmp_path / "o", "--no-cache")
    line = r.one_error_line()
    assert r.code == 2 and "holds 2 GGUF files (a.gguf, b.GGUF)" in line and str(d) in line
    assert not (tmp_path / "o").exists()


def test_upper_case_gguf_alone_and_given_directly(tmp_path):
    d = tmp_path / "models"
    d.mkdir()
    (d / "M.GGUF").write_bytes(build_file())
    assert run_cli("inspect", d).code == 0  # found by the case-insensitive scan
    assert run_cli("inspect", d / "M.GGUF").code == 0


def test_file_changed_after_header(tmp_path):
    """Truncated between the header read and the first tensor read: one line, no SIGBUS."""
    p = tmp_path / "m.gguf"
    p.write_bytes(build_file())
    f = GGUFFile(p)
    with open(p, "r+b") as fh:
        fh.truncate(f.data_start + 100)
    with pytest.raises(CheckpointError, match="changed size since its header was read"):
        f.get("blk.0.attn_q.weight")
