"""specbound's own GGUF header reader (io/gguf.py) against the reference, ``gguf.GGUFReader``
(llama.cpp's Python reader), on every kind of file the tests write and on the real SmolLM2 Q4_1
file: the same keys, scalar values and array types and lengths, the same tensor names, dims,
types, offsets and sizes, and bit-identical float64 arrays (the reference's data decoded the way
specbound decoded it before: numpy for F64/F32/F16, ``gguf.quants.dequantize`` for the rest).
The hostile headers are in tests/io/test_gguf_hostile.py (no gguf package needed)."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from specbound.errors import CheckpointError  # noqa: E402
from specbound.io.gguf_file import GGML_TYPES, GGUFFile  # noqa: E402
from tests.io.test_gguf import SMOL, _smol, _weights, _write_llama  # noqa: E402
from tests.support.gguf_bytes import build_file, patched_offsets  # noqa: E402

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


@pytest.mark.slow(
    reason="reads every tensor and key of the real 94 MB SmolLM2 GGUF with both readers"
)
def test_smollm2_q4_1_matches_gguf_reader():
    """The real file: 49,152 tokenizer strings and 48,900 merges skipped, 272 tensors."""
    ours = assert_same_as_gguf_reader(_smol())
    assert ours.arrays["tokenizer.ggml.tokens"].length == 49152
    assert len(ours.names()) == 272


@pytest.mark.slow(reason="decodes two layers of the real SmolLM2 GGUF through both readers")
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


# --- the reference reads what specbound refuses ---------------------------------------------


def test_hand_built_file_matches_gguf_reader(tmp_path):
    p = tmp_path / "ok.gguf"
    p.write_bytes(build_file())
    assert_same_as_gguf_reader(p)


def test_reference_reads_misaligned_and_overlapping_offsets(tmp_path):
    """Why specbound checks them (tests/io/test_gguf_hostile.py): GGUFReader hands out a
    misaligned tensor, and the same bytes for two overlapping tensors."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    p = patched_offsets(tmp_path / "a", {"blk.0.ffn_down.weight": 6 * 4096 + 16}, extra=16)
    assert gguf.GGUFReader(p).tensors[-1].data_offset % 32 == 16
    p = patched_offsets(tmp_path / "b", {"blk.0.attn_k.weight": 0})
    t = {x.name: x for x in gguf.GGUFReader(p).tensors}
    assert t["blk.0.attn_k.weight"].data_offset == t["blk.0.attn_q.weight"].data_offset
