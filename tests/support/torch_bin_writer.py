"""PyTorch checkpoints written by hand, without torch: pickle opcodes assembled byte by byte
and laid out as ``torch.save`` does (zip format, or the legacy format of torch < 1.6).

Shares no code with specbound. ``tests/io/test_torch_bin.py`` checks with torch that
``torch.load(weights_only=True)`` reads what :func:`write_state` writes, so the core-only tests
that use it (no torch there) read genuine PyTorch files. The opcode helpers also build the
hostile pickles.
"""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import numpy as np

PROTO2 = b"\x80\x02"
MARK, TUPLE, STOP, REDUCE, SETITEMS, APPENDS = b"(", b"t", b".", b"R", b"u", b"e"
EMPTY_TUPLE, EMPTY_DICT, EMPTY_LIST, NEWFALSE, NEWTRUE, NONE = (
    b")",
    b"}",
    b"]",
    b"\x89",
    b"\x88",
    b"N",
)
BINPERSID = b"Q"

STORAGE = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage"}
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


def s(text: str) -> bytes:
    """BINUNICODE."""
    raw = text.encode("utf-8")
    return b"X" + struct.pack("<I", len(raw)) + raw


def i(n: int) -> bytes:
    """BININT1 / BININT2 / BININT / LONG1, as the pickler picks."""
    if 0 <= n < 256:
        return b"K" + bytes([n])
    if 0 <= n < 65536:
        return b"M" + struct.pack("<H", n)
    if -(2**31) <= n < 2**31:
        return b"J" + struct.pack("<i", n)
    raw = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


def g(module: str, name: str) -> bytes:
    """GLOBAL."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def tup(*parts: bytes) -> bytes:
    return MARK + b"".join(parts) + TUPLE


def ints(*ns: int) -> bytes:
    return tup(*(i(n) for n in ns))


def ordered_dict() -> bytes:
    return g("collections", "OrderedDict") + EMPTY_TUPLE + REDUCE


def pid(stype: str, key: str, numel: int, legacy: bool = False) -> bytes:
    extra = (NONE,) if legacy else ()
    return tup(s("storage"), g("torch", stype), s(key), s("cpu"), i(numel), *extra) + BINPERSID


def tensor(
    stype: str,
    key: str,
    numel: int,
    offset: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    legacy: bool = False,
) -> bytes:
    """``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())``."""
    args = tup(
        pid(stype, key, numel, legacy),
        i(offset),
        ints(*shape),
        ints(*strides),
        NEWFALSE,
        ordered_dict(),
    )
    return g("torch._utils", "_rebuild_tensor_v2") + args + REDUCE


def state_pickle(entries: list[tuple[str, bytes]]) -> bytes:
    """An OrderedDict of name -> pickled value."""
    body = b"".join(s(name) + value for name, value in entries)
    return PROTO2 + ordered_dict() + MARK + body + SETITEMS + STOP


def write_zip(
    path: Path,
    data_pkl: bytes,
    storages: dict[str, bytes],
    *,
    compress: bool = False,
    archive: str = "archive",
    byteorder: bytes | None = b"little",
    extra: dict[str, bytes] | None = None,
) -> Path:
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        zf.writestr(f"{archive}/data.pkl", data_pkl)
        if byteorder is not None:
            zf.writestr(f"{archive}/byteorder", byteorder)
        for key, raw in storages.items():
            zf.writestr(f"{archive}/data/{key}", raw)
        zf.writestr(f"{archive}/version", b"3\n")
        for name, raw in (extra or {}).items():
            zf.writestr(name, raw)
    return path


def legacy_header(little_endian: bool = True) -> bytes:
    info = (
        PROTO2
        + EMPTY_DICT
        + MARK
        + s("protocol_version")
        + i(1001)
        + s("little_endian")
        + (NEWTRUE if little_endian else NEWFALSE)
        + s("type_sizes")
        + EMPTY_DICT
        + SETITEMS
        + STOP
    )
    return PROTO2 + i(LEGACY_MAGIC) + STOP + PROTO2 + i(1001) + STOP + info


def write_legacy(
    path: Path, main_pkl: bytes, storages: dict[str, tuple[int, bytes]], little_endian: bool = True
) -> Path:
    keys = PROTO2 + EMPTY_LIST + MARK + b"".join(s(k) for k in storages) + APPENDS + STOP
    out = io.BytesIO()
    out.write(legacy_header(little_endian) + main_pkl + keys)
    for numel, raw in storages.values():
        out.write(struct.pack("<q", numel) + raw)
    path.write_bytes(out.getvalue())
    return path


def write_state(
    path: Path, arrays: dict[str, np.ndarray], *, legacy: bool = False, compress: bool = False
) -> Path:
    """A state dict of float16/32/64 arrays, one contiguous storage each, as ``torch.save``."""
    entries, storages = [], {}
    for k, (name, a) in enumerate(arrays.items()):
        a = np.ascontiguousarray(a)
        key = str(k)
        strides = tuple(st // a.itemsize for st in a.strides)
        entries.append(
            (name, tensor(STORAGE[a.dtype.name], key, a.size, 0, a.shape, strides, legacy))
        )
        storages[key] = (a.size, a.astype(a.dtype.newbyteorder("<")).tobytes())
    pkl = state_pickle(entries)
    if legacy:
        return write_legacy(path, pkl, storages)
    return write_zip(path, pkl, {k: raw for k, (_, raw) in storages.items()}, compress=compress)
