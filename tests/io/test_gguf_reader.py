"""specbound's own GGUF header reader (io/gguf.py) against the reference, ``gguf.GGUFReader``
(llama.cpp's Python reader), on every kind of file the tests write and on the real SmolLM2 Q4_1
file: the same keys, scalar values and array types and lengths, the same tensor names, dims,
types, offsets and sizes, and bit-identical float64 arrays (the reference's data decoded the way
specbound decoded it before: numpy for F64/F32/F16, ``gguf.quants.dequantize`` for the rest).
Then the hostile headers, built byte by byte here: each is one line naming the file and the
field or tensor, exit 2, nothing written."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

import specbound  # noqa: E402
from specbound.errors import CheckpointError  # noqa: E402
from specbound.io.gguf import GGML_TYPES, MAX_KV, GGUFFile  # noqa: E402
from tests.io.test_gguf import SMOL, _smol, _weights, _write_llama  # noqa: E402
from tests.support.cli_runner import run_cli  # noqa: E402

VT = gguf.GGUFValueType
QT = gguf.GGMLQuantizationType


def test_type_table_is_ggmls():
    """Every ggml type: the same id, name, block size and block bytes as the gguf package."""
    theirs = {int(t): (t.name, *gguf.GGML_QUANT_SIZES[t]) for t in QT if t in gguf.GGML_QUANT_SIZES}
    ours = {code: tuple(t) for code, t in GGML_TYPES.items()}
    assert ours == theirs


# --- the reference ------------------------------------------------------------------------


def _reference_array(t) -> np.ndarray | None:
    """What specbound's former GGUFReader-based path returned for tensor ``t`` (None: refused)."""
    if t.tensor_type in (QT.F64, QT.F32, QT.F16):
        data = np.asarray(t.data)
    else:
        try:
            data = gguf.quants.dequantize(t.data, t.tensor_type)
        except (NotImplementedError, KeyError):
            return None
        if np.dtype(data.dtype).kind != "f":
            return None
    return np.array(data, dtype=np.float64).reshape(tuple(int(d) for d in reversed(t.shape)))


def assert_same_as_gguf_reader(path: Path, arrays: bool = True) -> GGUFFile:
    ours = GGUFFile(path)
    theirs = gguf.GGUFReader(path)
    fields = {k: f for k, f in theirs.fields.items() if not k.startswith("GGUF.")}
    assert list(ours.value_types) == list(fields)
    assert ours.version == theirs.fields["GGUF.version"].contents()
    for key, f in fields.items():
        assert ours.value_types[key] == f.types[0], key
        if f.types[0] == VT.ARRAY:
            a = ours.arrays[key]
            assert key not in ours.metadata
            assert (a.item_type, a.length) == (f.types[-1], len(f.data)), key
            # the skipped bytes are exactly the reference's element parts
            head = sum(int(p.nbytes) for p in f.parts[:5])
            assert a.start == f.offset + head, key
            assert a.nbytes == sum(int(p.nbytes) for p in f.parts[5:]), key
        else:
            want = f.contents()
            got = ours.field(key)
            assert type(got) is type(want), key
            assert got == want or (want != want and got != got), key  # NaN equals NaN here
    assert ours.alignment == theirs.alignment
    assert ours.data_start == theirs.data_offset
    assert ours.names() == [t.name for t in theirs.tensors]
    for t in theirs.tensors:
        info = ours.info(t.name)
        assert info.dims == tuple(int(d) for d in t.shape), t.name
        assert ours.dtype(t.name) == t.tensor_type.name, t.name
        assert ours.data_start + info.offset == t.data_offset, t.name
        assert info.nbytes == t.n_bytes, t.name
        assert ours.shape(t.name) == tuple(int(d) for d in reversed(t.shape))
        if not arrays:
            continue
        want = _reference_array(t)
        if want is None:
            with pytest.raises(CheckpointError, match=f"'{t.name}'.*{t.tensor_type.name}"):
                ours.get(t.name)
            continue
        got = ours.get(t.name)
        assert got.dtype == np.float64 and got.shape == want.shape, t.name
        np.testing.assert_array_equal(got, want, err_msg=t.name)
    return ours


# --- the files ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["F32", "F16", "Q8_0"])
def test_llama_files_match_gguf_reader(tmp_path, kind):
    _write_llama(tmp_path / "m.gguf", _weights(0), kind)
    assert_same_as_gguf_reader(tmp_path / "m.gguf")


def _finite_bytes(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random bytes below 0x7C: every float16 scale (high byte < 0x7C) and every E8M0/E4M3
    exponent byte decodes finite, so a random block is a valid quantized block."""
    return rng.integers(0, 0x7C, size=n, dtype=np.uint8)


def _kitchen_sink(path: Path, alignment: int | None = None) -> None:
    """Every scalar value type, arrays of every element type (strings with non-ASCII UTF-8 and
    empty strings included), 1- to 4-d tensors of every ggml type the writer accepts, the
    quantized ones random but finite bytes."""
    rng = np.random.default_rng(11)
    w = gguf.GGUFWriter(str(path), "llama")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    w.add_name("kitchen sink – Ünïcode ✓")
    for vt, v in [
        (VT.UINT8, 200),
        (VT.INT8, -100),
        (VT.UINT16, 60000),
        (VT.INT16, -30000),
        (VT.UINT32, 4_000_000_000),
        (VT.INT32, -2_000_000_000),
        (VT.FLOAT32, 0.1),
        (VT.UINT64, 2**63 + 5),
        (VT.INT64, -(2**62)),
        (VT.FLOAT64, math.pi),
        (VT.BOOL, True),
        (VT.STRING, "x"),
    ]:
        w.add_key_value(f"test.scalar.{vt.name.lower()}", v, vt)
    w.add_key_value("test.nan", float("nan"), VT.FLOAT32)
    w.add_bool("test.false", False)
    for vt, v in [
        (VT.UINT8, [1, 2, 255]),
        (VT.INT8, [-1, 2]),
        (VT.UINT16, [7] * 5),
        (VT.INT16, [-7]),
        (VT.UINT32, list(range(1000))),
        (VT.INT32, [-3, 3]),
        (VT.FLOAT32, [0.5, -1.25]),
        (VT.UINT64, [2**64 - 1]),
        (VT.INT64, [-(2**63)]),
        (VT.FLOAT64, [1e300, -0.0]),
        (VT.BOOL, [True, False, True]),
        (VT.STRING, ["", "a", "é✓", "<0x0A>", "x" * 300] * 2000),
    ]:
        w.add_key_value(f"test.array.{vt.name.lower()}", v, VT.ARRAY, sub_type=vt)
    w.add_tensor("f32.4d", rng.standard_normal((2, 3, 4, 5)).astype(np.float32))
    w.add_tensor("f16.1d", rng.standard_normal(7).astype(np.float16))
    w.add_tensor("f64.2d", rng.standard_normal((3, 5)))
    w.add_tensor("bf16.2d", _finite_bytes(rng, 2 * 6 * 8).reshape(6, 16), raw_dtype=QT.BF16)
    for it in (np.int8, np.int16, np.int32, np.int64):
        w.add_tensor(f"int.{np.dtype(it).name}", np.arange(6, dtype=it).reshape(2, 3))
    for t in QT:
        if t in (QT.F32, QT.F16, QT.F64, QT.BF16, QT.I8, QT.I16, QT.I32, QT.I64):
            continue
        if t not in gguf.GGML_QUANT_SIZES:
            continue
        size = gguf.GGML_QUANT_SIZES[t][1]
        rows, blocks = 3, 2
        raw = _finite_bytes(rng, rows * blocks * size).reshape(rows, blocks * size)
        w.add_tensor(f"q.{t.name}", raw, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.mark.parametrize("alignment", [None, 64, 8])
def test_every_type_matches_gguf_reader(tmp_path, alignment):
    path = tmp_path / "sink.gguf"
    _kitchen_sink(path, alignment)
    ours = assert_same_as_gguf_reader(path)
    assert ours.alignment == (alignment or 32)
    assert ours.arrays["test.array.string"].length == 10_000
    assert ours.field("general.name") == "kitchen sink – Ünïcode ✓"
    # every quantized type gguf.quants decodes was decoded (not refused) above
    decoded = [n for n in ours.names() if n.startswith("q.") and n[2:] in dir(gguf.quants)]
    assert len(decoded) >= 20


def test_version_2_matches_gguf_reader(tmp_path):
    """Version 2 has version 3's little-endian layout; both are read."""
    _kitchen_sink(tmp_path / "v3.gguf")
    data = bytearray((tmp_path / "v3.gguf").read_bytes())
    assert data[4:8] == struct.pack("<I", 3)
    data[4:8] = struct.pack("<I", 2)
    (tmp_path / "v2.gguf").write_bytes(bytes(data))
    assert assert_same_as_gguf_reader(tmp_path / "v2.gguf").version == 2


def test_gpt2_file_matches_gguf_reader(tmp_path):
    from tests.io.test_gguf import test_gpt2_fused_qkv_matches_dense_reference as write_gpt2

    write_gpt2(tmp_path)
    assert_same_as_gguf_reader(tmp_path / "g.gguf")


@pytest.mark.slow
def test_smollm2_q4_1_matches_gguf_reader():
    """The real file: 49,152 tokenizer strings and 48,900 merges skipped, 272 tensors."""
    ours = assert_same_as_gguf_reader(_smol())
    assert ours.arrays["tokenizer.ggml.tokens"].length == 49152
    assert len(ours.names()) == 272


@pytest.mark.slow
def test_smollm2_q4_1_analysis_unchanged(tmp_path):
    """The proxies of the real file through the new reader equal those through GGUFReader's
    data, decoded as before: same matrices to the last bit for two layers."""
    from specbound.adapters import get_adapter
    from specbound.io.checkpoint import load_checkpoint

    path = _smol()
    theirs = {t.name: t for t in gguf.GGUFReader(path).tensors}
    ad = get_adapter(load_checkpoint(str(path)))
    for l in (0, 29):
        lay = ad.layer(l)
        for attr, stem in [("wv", "attn_v"), ("wo", "attn_output"), ("w_out", "ffn_down")]:
            want = _reference_array(theirs[f"blk.{l}.{stem}.weight"])
            np.testing.assert_array_equal(getattr(lay, attr), want)
    assert SMOL in str(path)


# --- hostile headers, byte by byte ---------------------------------------------------------


def _s(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def _kv(key: bytes, vtype: int, payload: bytes) -> bytes:
    return _s(key) + struct.pack("<I", vtype) + payload


def _u32(key: bytes, v: int) -> bytes:
    return _kv(key, int(VT.UINT32), struct.pack("<I", v))


def _text(key: bytes, v: bytes) -> bytes:
    return _kv(key, int(VT.STRING), _s(v))


def _info(name: bytes, dims: list[int], ttype: int, offset: int) -> bytes:
    return (
        _s(name)
        + struct.pack("<I", len(dims))
        + b"".join(struct.pack("<Q", d) for d in dims)
        + struct.pack("<IQ", ttype, offset)
    )


def _llama_kvs(arch: bytes = b"llama", name: bytes = b"tiny") -> list[bytes]:
    return [
        _text(b"general.architecture", arch),
        _text(b"general.name", name),
        _u32(b"llama.block_count", 1),
        _u32(b"llama.embedding_length", 32),
        _u32(b"llama.attention.head_count", 4),
        _u32(b"llama.feed_forward_length", 32),
        _kv(
            b"tokenizer.ggml.tokens",
            int(VT.ARRAY),
            struct.pack("<IQ", int(VT.STRING), 3) + _s(b"a") + _s(b"") + _s("é".encode()),
        ),
    ]


STEMS = ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"]


def _file(
    kvs: list[bytes] | None = None,
    infos: list[bytes] | None = None,
    data: bytes | None = None,
    *,
    version: int = 3,
    n_kv: int | None = None,
    n_tensors: int | None = None,
    alignment: int = 32,
) -> bytes:
    """A GGUF file: by default a valid one-block llama, seven 32x32 F32 matrices of 4096 bytes
    each at offsets 0, 4096, ... (written here, not by the gguf package)."""
    rng = np.random.default_rng(5)
    kvs = _llama_kvs() if kvs is None else kvs
    if infos is None:
        infos = [
            _info(f"blk.0.{s}.weight".encode(), [32, 32], 0, i * 4096) for i, s in enumerate(STEMS)
        ]
        data = (rng.standard_normal(7 * 1024) / 8).astype("<f4").tobytes()
    head = b"GGUF" + struct.pack(
        "<IQQ",
        version,
        len(infos) if n_tensors is None else n_tensors,
        len(kvs) if n_kv is None else n_kv,
    )
    head += b"".join(kvs) + b"".join(infos)
    head += b"\0" * (-len(head) % alignment)
    return head + (data or b"")


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


def test_hand_built_file_is_valid(tmp_path):
    """The builder's default is a good file (so each hostile variant below differs by one field)."""
    p = tmp_path / "ok.gguf"
    p.write_bytes(_file())
    assert_same_as_gguf_reader(p)
    res = specbound.analyze(str(p), cache=False)
    assert res.spec.num_layers == 1 and res.spec.hidden_size == 32


@pytest.mark.parametrize(
    ("field", "kvs"),
    [
        ("general.name", _llama_kvs(name=b"tiny\xff\xfe")),
        ("general.architecture", _llama_kvs(arch=b"llam\xe9")),
        ("test.license", [*_llama_kvs(), _text(b"test.license", b"\xc3(")]),
    ],
)
def test_text_field_not_utf8(tmp_path, field, kvs):
    """Formerly "internal error (UnicodeDecodeError)", exit 1."""
    p = tmp_path / "bad.gguf"
    p.write_bytes(_file(kvs))
    _gguf_error(p, f"metadata '{field}' is not UTF-8 text")


def test_key_and_tensor_name_not_utf8(tmp_path):
    p = tmp_path / "key.gguf"
    p.write_bytes(_file([*_llama_kvs(), _u32(b"bad.\xff", 1)]))
    _gguf_error(p, "metadata key 7 is not UTF-8 text")
    p = tmp_path / "name.gguf"
    p.write_bytes(_file(infos=[_info(b"blk.\xff", [32], 0, 0)], data=b"\0" * 128))
    _gguf_error(p, "the name of tensor 0 is not UTF-8 text")


def _patched_offsets(tmp_path: Path, offsets: dict[str, int], extra: int = 0) -> Path:
    infos = []
    for i, s in enumerate(STEMS):
        name = f"blk.0.{s}.weight"
        infos.append(_info(name.encode(), [32, 32], 0, offsets.get(name, i * 4096)))
    data = np.ones(7 * 1024 + extra // 4, "<f4").tobytes()
    p = tmp_path / "m.gguf"
    p.write_bytes(_file(infos=infos, data=data))
    return p


def test_misaligned_offset(tmp_path):
    """The last tensor moved by 16 bytes into 16 extra bytes: inside the file, overlapping
    nothing, but not on the 32-byte alignment (formerly analyzed)."""
    p = _patched_offsets(tmp_path, {"blk.0.ffn_down.weight": 6 * 4096 + 16}, extra=16)
    _gguf_error(p, "tensor 'blk.0.ffn_down.weight' has data offset 24592", "alignment 32")
    assert gguf.GGUFReader(p).tensors[-1].data_offset % 32 == 16  # the reference reads it


def test_overlapping_offsets(tmp_path):
    """W_K stored at W_Q's offset: aligned, in the file, but the same bytes (formerly analyzed
    as if W_K were W_Q)."""
    p = _patched_offsets(tmp_path, {"blk.0.attn_k.weight": 0})
    _gguf_error(p, "tensor 'blk.0.attn_q.weight' overlaps tensor 'blk.0.attn_k.weight'")
    p = _patched_offsets(tmp_path, {"blk.0.attn_v.weight": 4096 + 2048})
    _gguf_error(p, "tensor 'blk.0.attn_v.weight' overlaps tensor 'blk.0.attn_k.weight'")


def test_old_reader_analyzed_the_overlap(tmp_path):
    """Why the check matters: the reference reader hands out the same bytes for both tensors."""
    p = _patched_offsets(tmp_path, {"blk.0.attn_k.weight": 0})
    t = {x.name: x for x in gguf.GGUFReader(p).tensors}
    assert t["blk.0.attn_k.weight"].data_offset == t["blk.0.attn_q.weight"].data_offset


def test_gguf_wording_for_metadata_errors(tmp_path):
    """A GGUF has no config.json: config-derived errors name the GGUF metadata key, the file's
    tensor names, and say to re-convert the file."""
    kvs = _llama_kvs()
    kvs[2] = _u32(b"llama.block_count", 2)
    p = tmp_path / "blocks.gguf"
    p.write_bytes(_file(kvs))
    r = run_cli("inspect", p)
    line = r.one_error_line()
    assert r.code == 2 and "config.json" not in line
    assert f"the GGUF metadata of {p} says llama.block_count = 2" in line
    assert "no tensor 'blk.1.attn_q.weight'" in line and "re-convert the file" in line

    kvs = [*_llama_kvs(), _u32(b"llama.attention.head_count_kv", 3)]
    p = tmp_path / "kv.gguf"
    p.write_bytes(_file(kvs))
    line = run_cli("inspect", p).one_error_line()
    assert "config.json" not in line
    assert (
        "llama.attention.head_count 4 is not a multiple of llama.attention.head_count_kv 3" in line
    )

    kvs = _llama_kvs()
    kvs[3] = _u32(b"llama.embedding_length", 64)
    p = tmp_path / "shape.gguf"
    p.write_bytes(_file(kvs))
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
    (path / "config.json").write_text(__import__("json").dumps(cfg))
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
        (lambda: _file(n_kv=2**60), ["key/value count is 1152921504606846976"]),
        (  # a file large enough to hold that many
            lambda: _file(n_kv=MAX_KV + 1) + b"\0" * (14 * MAX_KV),
            [f"specbound reads at most {MAX_KV}"],
        ),
        (lambda: _file(n_tensors=2**60), ["tensor count is 1152921504606846976"]),
        (lambda: _file(version=1), ["GGUF version 1"]),
        (lambda: _file(version=99), ["GGUF version 99"]),
        (lambda: _file(version=3 << 24), ["big-endian"]),
        (lambda: _file([struct.pack("<Q", 2**60) + b"key"]), ["metadata key 0"]),
        (
            lambda: _file([_kv(b"a", int(VT.ARRAY), struct.pack("<IQ", int(VT.STRING), 2**60))]),
            ["the length of metadata 'a' is 1152921504606846976"],
        ),
        (
            lambda: _file([_kv(b"a", int(VT.ARRAY), struct.pack("<IQ", int(VT.UINT64), 2**61))]),
            ["the length of metadata 'a' is 2305843009213693952"],
        ),
        (
            lambda: _file(
                [
                    _kv(
                        b"tok",
                        int(VT.ARRAY),
                        struct.pack("<IQ", int(VT.STRING), 3) + _s(b"a") + struct.pack("<Q", 2**60),
                    )
                ]
            ),
            ["string 1 of metadata 'tok' runs past the end"],
        ),
        (
            lambda: _file([_kv(b"a", int(VT.ARRAY), struct.pack("<IQ", int(VT.ARRAY), 1))]),
            ["metadata 'a' is an array of arrays"],
        ),
        (lambda: _file([_kv(b"a", 13, b"\0" * 8)]), ["metadata 'a' has unknown value type 13"]),
        (
            lambda: _file([_kv(b"a", int(VT.ARRAY), struct.pack("<IQ", 99, 1))]),
            ["metadata 'a' has unknown element type 99"],
        ),
        (lambda: _file([_u32(b"a", 1), _u32(b"a", 2)]), ["metadata key 'a' appears twice"]),
        (
            lambda: _file([*_llama_kvs(), _u32(b"general.alignment", 48)]),
            ["'general.alignment' is 48, not a power of 2"],
        ),
        (
            lambda: _file(
                [*_llama_kvs(), _kv(b"general.alignment", int(VT.UINT64), struct.pack("<Q", 32))]
            ),
            ["'general.alignment' is not a UINT32"],
        ),
        (
            lambda: _file(
                infos=[_info(b"t", [32], 0, 0), _info(b"t", [32], 0, 128)], data=b"\0" * 256
            ),
            ["tensor 't' appears twice"],
        ),
        (
            lambda: _file(infos=[_info(b"t", [2] * 5, 0, 0)], data=b"\0" * 128),
            ["tensor 't' has 5 dimensions"],
        ),
        (
            lambda: _file(infos=[_s(b"t") + struct.pack("<I", 2**31)], data=b"\0" * 64),
            ["tensor 't' has 2147483648 dimensions"],
        ),
        (
            lambda: _file(infos=[_info(b"t", [2**40, 2**40], 0, 0)], data=b"\0" * 128),
            ["tensor 't' runs to byte", "past the end of the file"],
        ),
        (
            lambda: _file(infos=[_info(b"t", [2**63, 1], 0, 0)], data=b"\0" * 128),
            ["tensor 't' has dimensions [9223372036854775808, 1], not counts"],
        ),
        (
            lambda: _file(infos=[_info(b"t", [32], 4, 0)], data=b"\0" * 128),
            ["tensor 't' has unknown ggml type 4"],
        ),
        (
            lambda: _file(infos=[_info(b"t", [16], int(QT.Q8_0), 0)], data=b"\0" * 128),
            ["tensor 't' of type Q8_0 has a first dimension of 16, not a multiple of its block"],
        ),
        (
            lambda: _file(infos=[_info(b"t", [32], 0, 2**63)], data=b"\0" * 128),
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
    data = _file()
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
    (d / "a.gguf").write_bytes(_file())
    (d / "b.GGUF").write_bytes(_file())
    r = run_cli("analyze", d, "--out", tmp_path / "o", "--no-cache")
    line = r.one_error_line()
    assert r.code == 2 and "holds 2 GGUF files (a.gguf, b.GGUF)" in line and str(d) in line
    assert not (tmp_path / "o").exists()


def test_upper_case_gguf_alone_and_given_directly(tmp_path):
    d = tmp_path / "models"
    d.mkdir()
    (d / "M.GGUF").write_bytes(_file())
    assert run_cli("inspect", d).code == 0  # found by the case-insensitive scan
    assert run_cli("inspect", d / "M.GGUF").code == 0
