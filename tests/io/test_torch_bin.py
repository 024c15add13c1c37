"""PyTorch ``.bin`` checkpoints read without torch (specbound.io.torch_files / torch_pickle).

- Same names, shapes, dtypes and values as ``torch.load(weights_only=True)`` on every
  ``pytorch_model.bin`` shipped by an installed distribution (the real corpus: rxnmapper's
  ALBERT, legacy format) and on state dicts torch.save writes here in both formats (fp64, fp32,
  fp16, bf16, int64, transposed and strided views, shared storages, offsets, Parameters,
  ``state_dict()`` with ``_metadata``, deflated members).
- ``analyze`` of a .bin in a fresh interpreter where importing torch is made to fail, its
  proxies equal to those of the same weights in safetensors (runs in the core-only venv too).
- Hostile files: one ``error:`` line, exit 2, nothing executed, nothing written.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from specbound.errors import CheckpointError
from specbound.io import torch_pickle as tp
from specbound.io.torch_files import TorchBinFile
from tests.support import torch_bin_writer as w
from tests.support.checkpoints import write_tiny_bert
from tests.support.cli_runner import run_cli, run_cli_process
from tests.support.safetensors_np import load_file

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _corpus() -> list[Path]:
    """Every pytorch_model.bin inside an installed distribution (no download)."""
    found = []
    for dist in md.distributions():
        for f in dist.files or []:
            if f.name == "pytorch_model.bin":
                found.append(Path(str(f.locate())))
    return sorted(set(found))


def _torch_values(torch, path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)


def _assert_same_as_torch(torch, path: Path, tol: float = 1e-12) -> float:
    ref = _torch_values(torch, path)
    if isinstance(ref, dict) and "state_dict" in ref and len(ref) <= 4:
        ref = ref["state_dict"]
    ref = {k: v for k, v in ref.items() if isinstance(v, torch.Tensor)}
    f = TorchBinFile(path)
    assert f.names() == list(ref)
    worst = 0.0
    for name, t in ref.items():
        assert f.shape(name) == tuple(t.shape), name
        assert f.dtype(name) == str(t.dtype), name
        if t.dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
            got = f.get(name)
            want = t.detach().to(torch.float64).numpy()
            assert got.shape == want.shape and got.dtype == np.float64
            if got.size:
                worst = max(worst, float(np.max(np.abs(got - want))))
        else:
            with pytest.raises(CheckpointError, match=rf"'{name}'.*{t.dtype}"):
                f.get(name)
    assert worst <= tol, worst
    return worst


@pytest.mark.parametrize("path", _corpus(), ids=lambda p: p.parent.name)
def test_real_corpus_same_as_torch(path):
    torch = pytest.importorskip("torch")
    _assert_same_as_torch(torch, path)


def test_corpus_is_not_empty_where_rxnmapper_is_installed():
    try:
        md.distribution("rxnmapper")
    except md.PackageNotFoundError:
        pytest.skip("rxnmapper not installed")
    assert any("rxnmapper" in str(p) for p in _corpus())


def _tricky_state(torch) -> dict:
    g = torch.Generator().manual_seed(0)
    base = torch.randn(40, generator=g, dtype=torch.float64)
    m = torch.randn(6, 8, generator=g)
    lin = torch.nn.Linear(5, 3)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(3, 5, generator=g))
    return {
        "f64": base,
        "f64_offset": base[7:19],  # shares base's storage, offset 7
        "f64_matrix_view": base[4:28].view(4, 6).t(),  # shared, offset, transposed
        "f32": m,
        "f32_t": m.t(),  # shares m's storage, strides (1, 8)
        "f32_every_other": m[:, ::2],  # non-contiguous
        "f32_row": m[3],
        "f16": torch.randn(5, 7, generator=g).half(),
        "bf16": torch.randn(9, 4, generator=g).to(torch.bfloat16),
        "bf16_t": torch.randn(4, 9, generator=g).to(torch.bfloat16).t(),
        "i64": torch.arange(12).view(3, 4),
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 4),
        "param": torch.nn.Parameter(torch.randn(2, 3, generator=g)),
        **{f"lin.{k}": v for k, v in lin.state_dict().items()},
    }


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_torch_saved_state_dicts_same_as_torch(tmp_path, legacy):
    torch = pytest.importorskip("torch")
    p = tmp_path / "m.bin"
    torch.save(_tricky_state(torch), p, _use_new_zipfile_serialization=not legacy)
    _assert_same_as_torch(torch, p)
    # a module's state_dict() (an OrderedDict with _metadata: a BUILD) and the state_dict key
    lin = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    torch.save(lin.state_dict(), p, _use_new_zipfile_serialization=not legacy)
    _assert_same_as_torch(torch, p)
    torch.save(
        {"state_dict": lin.state_dict(), "epoch": 3}, p, _use_new_zipfile_serialization=not legacy
    )
    _assert_same_as_torch(torch, p)


def test_deflated_members_same_as_torch(tmp_path):
    torch = pytest.importorskip("torch")
    src, dst = tmp_path / "stored.bin", tmp_path / "deflated.bin"
    torch.save(_tricky_state(torch), src)
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info))
    with zipfile.ZipFile(dst) as z:
        assert any(i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist())
    _assert_same_as_torch(torch, dst)


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_hand_written_files_are_torch_files(tmp_path, legacy):
    """The support writer (used where torch is absent) writes what torch reads."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    arrays = {
        "a": rng.standard_normal((3, 5)).astype(np.float32),
        "b": rng.standard_normal(4),
        "c": rng.standard_normal((2, 3)).astype(np.float16),
    }
    p = w.write_state(tmp_path / "m.bin", arrays, legacy=legacy)
    ref = torch.load(p, weights_only=True)
    assert list(ref) == list(arrays)
    for k, a in arrays.items():
        assert np.array_equal(ref[k].numpy(), a)
    _assert_same_as_torch(torch, p, tol=0.0)


def test_values_without_torch(tmp_path):
    """Exact values in any environment: float16/32/64 as float64, storage views, bf16."""
    rng = np.random.default_rng(2)
    a32, a16 = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal(5).astype("<f2")
    bf = np.array([1.0, -2.5, 3.140625, 2.0**-10], dtype=np.float32)
    bf_bits = (bf.view(np.uint32) >> 16).astype("<u2")  # exact bf16 values (truncated float32)
    pkl = w.state_pickle(
        [
            ("a32", w.tensor("FloatStorage", "0", 24, 0, (4, 6), (6, 1))),
            ("a32_t", w.tensor("FloatStorage", "0", 24, 0, (6, 4), (1, 6))),
            ("a32_tail", w.tensor("FloatStorage", "0", 24, 10, (2, 7), (7, 1))),
            ("a16", w.tensor("HalfStorage", "1", 5, 0, (5,), (1,))),
            ("bf", w.tensor("BFloat16Storage", "2", 4, 0, (2, 2), (2, 1))),
        ]
    )
    for legacy in (False, True):
        raws = {"0": (24, a32.tobytes()), "1": (5, a16.tobytes()), "2": (4, bf_bits.tobytes())}
        if legacy:
            pkl_l = w.state_pickle(
                [
                    (n, w.tensor(st, k, numel, off, sh, sd, legacy=True))
                    for n, st, k, numel, off, sh, sd in (
                        ("a32", "FloatStorage", "0", 24, 0, (4, 6), (6, 1)),
                        ("a32_t", "FloatStorage", "0", 24, 0, (6, 4), (1, 6)),
                        ("a32_tail", "FloatStorage", "0", 24, 10, (2, 7), (7, 1)),
                        ("a16", "HalfStorage", "1", 5, 0, (5,), (1,)),
                        ("bf", "BFloat16Storage", "2", 4, 0, (2, 2), (2, 1)),
                    )
                ]
            )
            p = w.write_legacy(tmp_path / "l.bin", pkl_l, raws)
        else:
            p = w.write_zip(tmp_path / "z.bin", pkl, {k: r for k, (_, r) in raws.items()})
        f = TorchBinFile(p)
        assert np.array_equal(f.get("a32"), a32.astype(np.float64))
        assert np.array_equal(f.get("a32_t"), a32.T.astype(np.float64))
        assert np.array_equal(
            f.get("a32_tail"), a32.ravel()[10:24].reshape(2, 7).astype(np.float64)
        )
        assert np.array_equal(f.get("a16"), a16.astype(np.float64))
        assert np.array_equal(f.get("bf"), bf.reshape(2, 2).astype(np.float64))
        assert f.dtype("bf") == "torch.bfloat16" and f.shape("a32_t") == (6, 4)


_BLOCK_TORCH = (
    "import sys\n"
    "class _NoTorch:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'torch' or name.startswith('torch.'):\n"
    "            raise ImportError('torch is blocked in this test')\n"
    "sys.meta_path.insert(0, _NoTorch())\n"
)


def test_analyze_bin_without_torch(tmp_path):
    """A .bin analyzed in a fresh interpreter where importing torch fails (and in the core-only
    venv, where there is none): same proxies as the same weights in safetensors."""
    d = write_tiny_bert(tmp_path / "m", prefix="bert.")
    weights = load_file(str(d / "model.safetensors"))
    import specbound

    ref = specbound.analyze(str(d), cache=False)
    (d / "model.safetensors").unlink()
    w.write_state(d / "pytorch_model.bin", weights)
    code = _BLOCK_TORCH + (
        "import json, specbound\n"
        f"a = specbound.analyze({str(d)!r}, cache=False)\n"
        "from specbound.cli import main\n"
        "try:\n"
        f"    main(['analyze', {str(d)!r}, '--out', {str(tmp_path / 'out')!r}, '--quiet'])\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "assert 'torch' not in sys.modules\n"
        "print(json.dumps([a.bounds.spectrum_adaptive.ln, a.bounds.norm_based.ln]))\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    sa, nb = json.loads(out.stdout.strip().splitlines()[-1])
    assert sa == ref.bounds.spectrum_adaptive.ln and nb == ref.bounds.norm_based.ln
    assert (tmp_path / "out").is_dir()


# -- hostile files -------------------------------------------------------------------------------

_MARKER = "/tmp/specbound_bin_pwned"
_T = w.tensor("FloatStorage", "0", 4, 0, (2, 2), (2, 1))
_RAW = {"0": np.arange(4, dtype="<f4").tobytes()}


def _zip(pkl: bytes, storages: dict | None = None, **kw):
    return lambda p: w.write_zip(p, pkl, _RAW if storages is None else storages, **kw)


def _state(*entries: tuple[str, bytes]) -> bytes:
    return w.state_pickle(list(entries))


def _system(cmd: str, module: str = "os", name: str = "system") -> bytes:
    return w.g(module, name) + w.tup(w.s(cmd)) + w.REDUCE


def _truncated(p: Path) -> Path:
    full = w.write_zip(p, _state(("x", _T)), _RAW).read_bytes()
    p.write_bytes(full[: len(full) // 2])
    return p


def _bomb(p: Path) -> Path:
    """A deflated member whose headers claim 16 bytes (the storage's size) but whose stream
    inflates to 64 MiB."""
    w.write_zip(p, _state(("x", _T)), {"0": bytes(64 * 2**20)}, compress=True)
    raw = bytearray(p.read_bytes())
    with zipfile.ZipFile(p) as z:
        info = z.getinfo("archive/data/0")
    # local header's and central directory's uncompressed size -> 16
    struct.pack_into("<I", raw, info.header_offset + 22, 16)
    cd = raw.find(b"PK\x01\x02")
    while cd >= 0:
        name_len = struct.unpack_from("<H", raw, cd + 28)[0]
        if raw[cd + 46 : cd + 46 + name_len] == b"archive/data/0":
            struct.pack_into("<I", raw, cd + 24, 16)
        cd = raw.find(b"PK\x01\x02", cd + 4)
    p.write_bytes(bytes(raw))
    return p


def _build_on(module: str, name: str, attr: str) -> bytes:
    """GLOBAL module.name, then BUILD with (None, {attr: 1}) (the slot-state form: setattr)."""
    state = w.tup(w.NONE, w.EMPTY_DICT + w.MARK + w.s(attr) + w.i(1) + w.SETITEMS)
    return w.g(module, name) + state + b"b"


HOSTILE = {
    "os.system": (_zip(_state(("x", _system(f"touch {_MARKER}")))), "code execution"),
    "posix.system": (_zip(_state(("x", _system(f"touch {_MARKER}", "posix")))), "posix.system"),
    "builtins.eval": (
        _zip(_state(("x", _system(f"open({_MARKER!r}, 'w')", "builtins", "eval")))),
        "builtins.eval",
    ),
    "torch_looking_global": (
        _zip(_state(("x", _system("x", "torch._utils", "_rebuild_tensor_v9")))),
        "torch._utils._rebuild_tensor_v9",
    ),
    "module_pickle": (
        _zip(_state(("x", w.g("__main__", "Net") + w.EMPTY_TUPLE + w.REDUCE))),
        "__main__.Net",
    ),
    "reduce_on_storage_type": (
        _zip(_state(("x", w.g("torch", "FloatStorage") + w.ints(3) + w.REDUCE))),
        "is refused",
    ),
    "reduce_rebuild_with_string": (
        _zip(
            _state(
                (
                    "x",
                    w.g("torch._utils", "_rebuild_tensor_v2")
                    + w.tup(w.s("os"), w.i(0), w.ints(2), w.ints(1), w.NEWFALSE, w.ordered_dict())
                    + w.REDUCE,
                )
            )
        ),
        "is refused",
    ),
    "torch_only_global": (
        _zip(_state(("x", w.g("torch._utils", "_rebuild_qtensor") + w.EMPTY_TUPLE + w.REDUCE))),
        "_rebuild_qtensor",
    ),
    "protocol_4": (_zip(b"\x80\x04\x95" + bytes(8) + b"}."), "FRAME"),
    "stack_global": (
        _zip(w.PROTO2 + w.s("os") + w.s("system") + b"\x93" + b"."),
        "global os.system",
    ),
    "inst_opcode": (_zip(b"(ios\nsystem\nX\x00\x00\x00\x00t."), "INST"),
    "huge_memo_index": (
        _zip(w.PROTO2 + w.EMPTY_DICT + b"r\xff\xff\xff\xff" + w.STOP),
        "memo index",
    ),
    "key_dotdot": (
        _zip(_state(("x", w.tensor("FloatStorage", "../x", 4, 0, (2, 2), (2, 1))))),
        "not a plain name",
    ),
    "key_absolute": (
        _zip(_state(("x", w.tensor("FloatStorage", "/etc/passwd", 4, 0, (2, 2), (2, 1))))),
        "not a plain name",
    ),
    "key_nested": (
        _zip(_state(("x", w.tensor("FloatStorage", "data/0", 4, 0, (2, 2), (2, 1))))),
        "not a plain name",
    ),
    "member_missing": (
        _zip(_state(("x", w.tensor("FloatStorage", "7", 4, 0, (2, 2), (2, 1))))),
        "missing",
    ),
    "truncated_zip": (_truncated, "could not be read"),
    "storage_too_short": (
        _zip(_state(("x", w.tensor("FloatStorage", "0", 5, 0, (2, 2), (2, 1))))),
        "needs 20",
    ),
    "view_past_storage": (
        _zip(_state(("x", w.tensor("FloatStorage", "0", 4, 1, (2, 2), (2, 1))))),
        "reads past its storage",
    ),
    "huge_numel": (
        _zip(_state(("x", w.tensor("FloatStorage", "0", 2**62, 0, (2, 2), (2, 1))))),
        f"needs {4 * 2**62}",
    ),
    "huge_broadcast": (
        _zip(_state(("x", w.tensor("FloatStorage", "0", 4, 0, (2**40, 2**40), (0, 0))))),
        "broadcast",
    ),
    "negative_stride": (
        _zip(_state(("x", w.tensor("FloatStorage", "0", 4, 3, (2, 2), (-1, 1))))),
        "negative",
    ),
    "negative_size": (
        _zip(_state(("x", w.tensor("FloatStorage", "0", 4, 0, (-2, 2), (2, 1))))),
        "negative",
    ),
    "unknown_storage_type": (
        _zip(_state(("x", w.tensor("EvilStorage", "0", 4, 0, (2, 2), (2, 1))))),
        "torch.EvilStorage",
    ),
    "persistent_id_not_storage": (
        _zip(_state(("x", w.tup(w.s("module"), w.s("x")) + w.BINPERSID))),
        "persistent id",
    ),
    "zip_bomb": (_bomb, "archive/data/0"),
    "big_endian": (_zip(_state(("x", _T)), byteorder=b"big"), "big"),
    "two_archives": (_zip(_state(("x", _T)), extra={"other/data.pkl": _state()}), "data.pkl"),
    "top_level_list": (_zip(w.PROTO2 + w.EMPTY_LIST + w.MARK + _T + w.APPENDS + w.STOP), "list"),
    "top_level_tensor": (_zip(w.PROTO2 + _T + w.STOP), "holds a tensor"),
    "build_on_rebuild_function": (
        _zip(_state(("x", _build_on("torch._utils", "_rebuild_tensor_v2", "__defaults__")))),
        "BUILD on torch._utils._rebuild_tensor_v2",
    ),
    "build_on_storage_type": (
        _zip(_state(("x", _build_on("torch", "FloatStorage", "itemsize")))),
        "BUILD on StorageType",
    ),
    "build_on_ordered_dict_class": (
        _zip(_state(("x", _build_on("collections", "OrderedDict", "x")))),
        "is refused",
    ),
    "build_on_tensor": (_zip(_state(("x", _T + w.EMPTY_DICT + b"b"))), "BUILD"),
    "legacy_big_endian": (
        lambda p: w.write_legacy(
            p,
            _state(("x", w.tensor("FloatStorage", "0", 4, 0, (2, 2), (2, 1), legacy=True))),
            {"0": (4, bytes(16))},
            little_endian=False,
        ),
        "big-endian",
    ),
    "legacy_truncated": (
        lambda p: w.write_legacy(
            p,
            _state(("x", w.tensor("FloatStorage", "0", 4, 0, (2, 2), (2, 1), legacy=True))),
            {"0": (4, bytes(10))},
        ),
        "past the end",
    ),
    "legacy_count_mismatch": (
        lambda p: w.write_legacy(
            p,
            _state(("x", w.tensor("FloatStorage", "0", 4, 0, (2, 2), (2, 1), legacy=True))),
            {"0": (3, bytes(16))},
        ),
        "3 elements",
    ),
    "legacy_tar": (lambda p: p.write_bytes(bytes(257) + b"ustar" + bytes(250)), "tar"),
    "not_a_checkpoint": (lambda p: p.write_bytes(b"hello"), "neither"),
    "empty_file": (lambda p: p.write_bytes(b""), "neither"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_bin_one_error_line(tmp_path, case):
    build, needle = HOSTILE[case]
    d = write_tiny_bert(tmp_path / "m")
    (d / "model.safetensors").unlink()
    build(d / "pytorch_model.bin")
    Path(_MARKER).unlink(missing_ok=True)
    out = tmp_path / "out"
    r = run_cli("analyze", str(d), "--out", str(out))
    assert r.code == 2, (r.code, r.err)
    line = r.one_error_line()
    assert "pytorch_model.bin" in line and needle in line, line
    assert not out.exists()
    assert not Path(_MARKER).exists()
    # nothing the unpickler hands out was changed for the process
    assert tp.ALLOWED["torch.FloatStorage"] == tp.StorageType("FloatStorage", 4, "float32")
    assert tp.ALLOWED["torch._utils._rebuild_tensor_v2"].fn.__defaults__ == (False, None, None)


def test_code_execution_payload_in_a_real_process(tmp_path):
    """The os.system payload through ``python -m specbound``: refused, the file never made."""
    d = write_tiny_bert(tmp_path / "m")
    (d / "model.safetensors").unlink()
    HOSTILE["os.system"][0](d / "pytorch_model.bin")
    Path(_MARKER).unlink(missing_ok=True)
    r = run_cli_process("analyze", str(d), "--out", str(tmp_path / "out"), env={"PYTHONPATH": SRC})
    assert r.code == 2
    line = r.one_error_line()
    assert "code execution" in line and "(global os.system)" in line, line
    assert not Path(_MARKER).exists()


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_torch_refuses_the_same_globals(tmp_path):
    """torch.load(weights_only=True) refuses the code-execution payloads too (so both readers
    draw the line in the same place for them)."""
    torch = pytest.importorskip("torch")
    import pickle

    for case in ("os.system", "builtins.eval", "protocol_4", "stack_global", "inst_opcode"):
        p = HOSTILE[case][0](tmp_path / f"{case}.bin")
        Path(_MARKER).unlink(missing_ok=True)
        with pytest.raises(pickle.UnpicklingError):
            torch.load(p, weights_only=True)
        assert not Path(_MARKER).exists()


@pytest.mark.parametrize("layout", ["zip", "deflated", "legacy"])
def test_corrupted_bytes_give_a_checkpoint_error(tmp_path, layout):
    """Random byte changes anywhere in a small file: it opens and reads (finite float64
    values of the right shape) or raises CheckpointError, never anything else (seeded)."""
    rng = np.random.default_rng(3)
    arrays = {"a": rng.standard_normal((3, 4)).astype(np.float32), "b": rng.standard_normal(5)}
    good = w.write_state(
        tmp_path / "good.bin", arrays, legacy=layout == "legacy", compress=layout == "deflated"
    ).read_bytes()
    p = tmp_path / "bad.bin"
    messages = []
    for trial in range(300):
        raw = bytearray(good)
        for _ in range(1 + trial % 3):
            raw[int(rng.integers(len(raw)))] = int(rng.integers(256))
        if trial % 10 == 9:
            raw = raw[: int(rng.integers(len(raw)))]
        p.write_bytes(bytes(raw))
        try:
            f = TorchBinFile(p)
            for name in f.names():
                got = f.get(name)
                assert got.dtype == np.float64 and got.shape == f.shape(name)
        except CheckpointError as exc:
            messages.append(str(exc))
    assert messages and not [m for m in messages if "\n" in m or str(p) not in m]


def test_sharded_bin_same_as_safetensors(tmp_path):
    """pytorch_model.bin.index.json over two .bin shards (one zip, one legacy): the proxies of
    the same weights in one safetensors file, exactly."""
    d = write_tiny_bert(tmp_path / "m", prefix="bert.")
    weights = load_file(str(d / "model.safetensors"))
    import specbound

    ref = specbound.analyze(str(d), cache=False)
    (d / "model.safetensors").unlink()
    names = list(weights)
    half = {n: weights[n] for n in names[: len(names) // 2]}
    rest = {n: weights[n] for n in names[len(names) // 2 :]}
    w.write_state(d / "pytorch_model-00001-of-00002.bin", half)
    w.write_state(d / "pytorch_model-00002-of-00002.bin", rest, legacy=True)
    index = {n: "pytorch_model-00001-of-00002.bin" for n in half}
    index.update({n: "pytorch_model-00002-of-00002.bin" for n in rest})
    (d / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": index}))
    a = specbound.analyze(str(d), cache=False)
    assert a.bounds.spectrum_adaptive.ln == ref.bounds.spectrum_adaptive.ln
    assert a.bounds.norm_based.ln == ref.bounds.norm_based.ln
