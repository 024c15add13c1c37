"""GGUF files (llama.cpp, ollama, LM Studio): specbound's own reader of the format.

:class:`GGUFFile` parses the header itself (GGUF versions 2 and 3, little-endian): magic, version,
tensor count, key/value count, every key/value (scalars read; arrays, a tokenizer's vocabulary and
merges above all, skipped by their byte length: a fixed-size array in one step, a string array by
a walk over its string lengths, never decoded), the tensor infos (name, dims, type, offset), the
alignment (``general.alignment``, default 32) and the start of the data. Every field is checked
before it is trusted (:class:`GGUFFile` lists the checks), so a damaged or hostile file is a
one-line error naming the file and the field or tensor, never a hang or a MemoryError. The data
is memory-mapped and a tensor's bytes are touched only when it is read.

A tensor is handed out as float64: F64/F32/F16/BF16 exactly, by numpy alone; the quantized types
dequantized by ``gguf.quants.dequantize`` (the ``gguf`` extra, imported on the first quantized
tensor), which decodes in float32 arithmetic (scale x small integer products are exact there, a
sum with a block minimum is rounded to float32), then cast to float64. Peak memory is a small
multiple of the largest tensor. GGUF lists a tensor's dims fastest first (``ne[0]`` = the input
size of a linear map); every tensor here is in numpy order, (out, in) like ``nn.Linear.weight``.
:mod:`specbound.io.gguf` maps a file's tensors and metadata onto the adapters.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..errors import CheckpointError
from ..extras import install_hint
from .files import check_regular_file, file_stamp, map_file, release_pages
from .sources import check_finite

INSTALL = install_hint("gguf")

#: GGUF versions read (1, the August 2023 draft, has 32-bit counts; llama.cpp dropped it too).
VERSIONS = (2, 3)
#: general.alignment when the file does not set it.
DEFAULT_ALIGNMENT = 32
#: llama.cpp's GGML_MAX_DIMS.
MAX_DIMS = 4
#: Sanity caps far above any real file (published GGUFs hold a few thousand tensors at most and
#: well under a hundred keys); a count above them, or above what the rest of the file could hold,
#: is refused before any loop.
MAX_KV = 1 << 16
MAX_TENSORS = 1 << 20

#: GGUF value types: id -> (name, struct format of one little-endian scalar); 8 and 9 below.
_SCALARS: dict[int, tuple[str, str]] = {
    0: ("UINT8", "<B"),
    1: ("INT8", "<b"),
    2: ("UINT16", "<H"),
    3: ("INT16", "<h"),
    4: ("UINT32", "<I"),
    5: ("INT32", "<i"),
    6: ("FLOAT32", "<f"),
    7: ("BOOL", "<B"),
    10: ("UINT64", "<Q"),
    11: ("INT64", "<q"),
    12: ("FLOAT64", "<d"),
}
_STRING, _ARRAY, _UINT32 = 8, 9, 4
_U32, _U64 = struct.Struct("<I"), struct.Struct("<Q")


class GGMLType(NamedTuple):
    """One ggml tensor type: its name, elements per block and bytes per block."""

    name: str
    block: int
    size: int


#: Every tensor type of the GGUF format (ggml's ``ggml_type``; ids 4, 5, 31-33 and 36-38 were
#: removed from ggml and are refused, as llama.cpp refuses them). tests/io/test_gguf_reader.py
#: checks this table against gguf.constants.GGML_QUANT_SIZES.
GGML_TYPES: dict[int, GGMLType] = {
    0: GGMLType("F32", 1, 4),
    1: GGMLType("F16", 1, 2),
    2: GGMLType("Q4_0", 32, 18),
    3: GGMLType("Q4_1", 32, 20),
    6: GGMLType("Q5_0", 32, 22),
    7: GGMLType("Q5_1", 32, 24),
    8: GGMLType("Q8_0", 32, 34),
    9: GGMLType("Q8_1", 32, 40),
    10: GGMLType("Q2_K", 256, 84),
    11: GGMLType("Q3_K", 256, 110),
    12: GGMLType("Q4_K", 256, 144),
    13: GGMLType("Q5_K", 256, 176),
    14: GGMLType("Q6_K", 256, 210),
    15: GGMLType("Q8_K", 256, 292),
    16: GGMLType("IQ2_XXS", 256, 66),
    17: GGMLType("IQ2_XS", 256, 74),
    18: GGMLType("IQ3_XXS", 256, 98),
    19: GGMLType("IQ1_S", 256, 50),
    20: GGMLType("IQ4_NL", 32, 18),
    21: GGMLType("IQ3_S", 256, 110),
    22: GGMLType("IQ2_S", 256, 82),
    23: GGMLType("IQ4_XS", 256, 136),
    24: GGMLType("I8", 1, 1),
    25: GGMLType("I16", 1, 2),
    26: GGMLType("I32", 1, 4),
    27: GGMLType("I64", 1, 8),
    28: GGMLType("F64", 1, 8),
    29: GGMLType("IQ1_M", 256, 56),
    30: GGMLType("BF16", 1, 2),
    34: GGMLType("TQ1_0", 256, 54),
    35: GGMLType("TQ2_0", 256, 66),
    39: GGMLType("MXFP4", 32, 17),
    40: GGMLType("NVFP4", 64, 36),
    41: GGMLType("Q1_0", 128, 18),
}
#: The float types numpy reads itself (BF16 as uint16, widened by hand); the integer types are
#: refused when read; every other type goes through gguf.quants.
_FLOATS: dict[str, np.dtype] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
}
_INTEGERS = ("I8", "I16", "I32", "I64")


class TensorInfo(NamedTuple):
    """One tensor info of the header: ``dims`` in GGUF order (fastest first), ``offset``
    relative to the data section, ``nbytes`` the stored size."""

    name: str
    dims: tuple[int, ...]
    type: int
    offset: int
    nbytes: int


class ArrayInfo(NamedTuple):
    """A metadata array, skipped: its element type, length, and where its elements lie."""

    item_type: int
    length: int
    start: int
    nbytes: int


class _Header:
    """A bounds-checked little-endian cursor over the mapped file (the header parse only)."""

    def __init__(
        self, buf: mmap.mmap, size: int, corrupt: Callable[[str], CheckpointError]
    ) -> None:
        self.buf, self.size, self.pos, self.corrupt = buf, size, 0, corrupt

    def take(self, n: int, what: str) -> int:
        """Advance past ``n`` bytes of ``what``; their start (an error if they pass the end)."""
        if n > self.size - self.pos:
            raise self.corrupt(
                f"{what} at byte {self.pos} needs {n} bytes, past the end of the file "
                f"({self.size} bytes; truncated?)"
            )
        start = self.pos
        self.pos += n
        return start

    def u32(self, what: str) -> int:
        return int(_U32.unpack_from(self.buf, self.take(4, what))[0])

    def u64(self, what: str) -> int:
        return int(_U64.unpack_from(self.buf, self.take(8, what))[0])

    def scalar(self, fmt: str, what: str) -> Any:
        return struct.unpack_from(fmt, self.buf, self.take(struct.calcsize(fmt), what))[0]

    def raw_string(self, what: str) -> bytes:
        n = self.u64(f"the length of {what}")
        start = self.take(n, what)
        return self.buf[start : start + n]

    def text(self, what: str) -> str:
        raw = self.raw_string(what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.corrupt(f"{what} is not UTF-8 text, as GGUF strings must be") from None

    def count(self, n: int, least: int, what: str, cap: int | None = None) -> None:
        """``n`` items of at least ``least`` bytes each fit in the rest of the file (and ``cap``):
        checked before any loop over them, so an absurd count costs nothing."""
        room = (self.size - self.pos) // least
        if cap is not None and n > cap and cap < room:
            raise self.corrupt(f"{what} is {n}; specbound reads at most {cap}")
        if n > room:
            raise self.corrupt(
                f"{what} is {n}, but the {self.size - self.pos} bytes left hold at most {room}"
            )

    def skip_strings(self, count: int, what: str) -> None:
        """Skip ``count`` strings (u64 length + bytes each) without decoding them: one unpack per
        string, each length checked against the end of the file."""
        buf, end, unpack = self.buf, self.size - 8, _U64.unpack_from
        pos = self.pos
        for k in range(count):
            n = unpack(buf, pos)[0] if pos <= end else 0
            if pos > end or n > end - pos:
                raise self.corrupt(
                    f"string {k} of {what} runs past the end of the file ({self.size} bytes; "
                    "truncated?)"
                )
            pos += 8 + n
        self.pos = pos


class GGUFFile:
    """One .gguf file as a TensorSource under its own (llama.cpp) tensor names.

    The header is read by specbound (no gguf package needed to open a file or list its tensors)
    and checked field by field: the magic ``GGUF``; version 2 or 3 (a byte-swapped version is a
    big-endian file, refused); every length, count and offset within the file, counts of keys
    and tensors also below ``MAX_KV``/``MAX_TENSORS``; keys, tensor names and string values UTF-8,
    no key or tensor name twice; every value type known, no array of arrays (llama.cpp reads
    none); ``general.alignment`` a UINT32 power of two; a tensor's dims at most ``MAX_DIMS``,
    its type a ggml type, its first dim a whole number of the type's blocks; its data offset a
    multiple of the alignment and its bytes inside the file; no two tensors' bytes overlapping
    (llama.cpp refuses misaligned and overlapping offsets too).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        check_regular_file(self.path, "GGUF file")
        self._mm: mmap.mmap | None = None
        try:
            with open(self.path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size < 24:
                    head = fh.read(4)
                    if len(head) == 4 and head != b"GGUF":
                        raise self._corrupt(f"wrong magic {head!r}, expected b'GGUF'")
                    raise self._corrupt(f"{size} bytes, shorter than GGUF's 24-byte header")
                self._mm = map_file(self.path)  # an ENOMEM names the file
        except OSError as exc:
            raise CheckpointError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        try:
            self.size = size
            self._read_header(self._mm, size)
        finally:
            # the header's pages (a tokenizer of a few MB) are not needed again; the data is
            # mapped anew on the first tensor read (so an unread file holds no mapping, like
            # SafetensorsFile)
            self.close()

    def _read_header(self, buf: mmap.mmap, size: int) -> None:
        cur = _Header(buf, size, self._corrupt)
        magic = buf[:4]
        if magic != b"GGUF":
            raise self._corrupt(f"wrong magic {magic!r}, expected b'GGUF'")
        cur.pos = 4
        version = cur.u32("version")
        if version not in VERSIONS:
            if int.from_bytes(version.to_bytes(4, "little"), "big") in VERSIONS:
                raise self._corrupt("big-endian GGUF file; specbound reads little-endian ones")
            raise self._corrupt(f"GGUF version {version}; specbound reads versions 2 and 3")
        self.version = version
        n_tensors = cur.u64("tensor count")
        n_kv = cur.u64("key/value count")
        # a key/value takes 8 (key length) + 4 (type) + 1 (smallest value) bytes at least
        cur.count(n_kv, 13, "the key/value count", MAX_KV)
        #: The scalar metadata (strings decoded) and the skipped arrays, by key, in file order.
        self.metadata: dict[str, Any] = {}
        self.arrays: dict[str, ArrayInfo] = {}
        #: The GGUF value type of every key (9 for an array).
        self.value_types: dict[str, int] = {}
        for i in range(n_kv):
            key = cur.text(f"metadata key {i}")
            if key in self.value_types:
                raise self._corrupt(f"metadata key '{key}' appears twice")
            what = f"metadata '{key}'"
            vtype = self.value_types[key] = cur.u32(f"the value type of {what}")
            if vtype == _ARRAY:
                self.arrays[key] = self._skip_array(cur, what)
            else:
                self.metadata[key] = self._scalar(cur, vtype, what)
        self.alignment = DEFAULT_ALIGNMENT
        if "general.alignment" in self.value_types:
            align = self.metadata.get("general.alignment")
            if self.value_types["general.alignment"] != _UINT32 or not isinstance(align, int):
                raise self._corrupt("metadata 'general.alignment' is not a UINT32")
            if align == 0 or align & (align - 1):
                raise self._corrupt(f"metadata 'general.alignment' is {align}, not a power of 2")
            self.alignment = align
        # a tensor info takes 8 (name length) + 4 (n_dims) + 4 (type) + 8 (offset) bytes at least
        cur.count(n_tensors, 24, "the tensor count", MAX_TENSORS)
        infos = [self._tensor_info(cur, i) for i in range(n_tensors)]
        self.data_start = -(-cur.pos // self.alignment) * self.alignment
        if self.data_start > size and infos:
            raise self._corrupt(
                f"the data section would start at byte {self.data_start}, past the end of the "
                f"file ({size} bytes; truncated?)"
            )
        self._tensors: dict[str, TensorInfo] = {}
        for t in infos:
            if t.name in self._tensors:
                raise self._corrupt(f"tensor '{t.name}' appears twice")
            self._tensors[t.name] = t
        self._check_layout(size)

    def _scalar(self, cur: _Header, vtype: int, what: str) -> Any:
        if vtype == _STRING:
            return cur.text(what)
        if vtype not in _SCALARS:
            raise self._corrupt(f"{what} has unknown value type {vtype}")
        name, fmt = _SCALARS[vtype]
        value = cur.scalar(fmt, what)
        return bool(value) if name == "BOOL" else value

    def _skip_array(self, cur: _Header, what: str) -> ArrayInfo:
        item = cur.u32(f"the element type of {what}")
        n = cur.u64(f"the length of {what}")
        if item == _STRING:
            cur.count(n, 8, f"the length of {what}")
            start = cur.pos
            cur.skip_strings(n, what)
        elif item in _SCALARS:
            width = struct.calcsize(_SCALARS[item][1])
            cur.count(n, width, f"the length of {what}")
            start = cur.take(n * width, what)
        elif item == _ARRAY:
            raise self._corrupt(f"{what} is an array of arrays, which GGUF readers do not read")
        else:
            raise self._corrupt(f"{what} has unknown element type {item}")
        return ArrayInfo(item, n, start, cur.pos - start)

    def _tensor_info(self, cur: _Header, i: int) -> TensorInfo:
        name = cur.text(f"the name of tensor {i}")
        what = f"tensor '{name}'"
        n_dims = cur.u32(f"the dimension count of {what}")
        if n_dims > MAX_DIMS:
            raise self._corrupt(f"{what} has {n_dims} dimensions (GGUF allows at most {MAX_DIMS})")
        dims = tuple(cur.u64(f"the dimensions of {what}") for _ in range(n_dims))
        if any(d >= 1 << 63 for d in dims):  # llama.cpp reads them as int64: negative
            raise self._corrupt(f"{what} has dimensions {list(dims)}, not counts")
        code = cur.u32(f"the type of {what}")
        kind = GGML_TYPES.get(code)
        if kind is None:
            raise self._corrupt(f"{what} has unknown ggml type {code}")
        offset = cur.u64(f"the data offset of {what}")
        first = dims[0] if dims else 1  # a 0-d tensor holds one element
        if first % kind.block:
            raise self._corrupt(
                f"{what} of type {kind.name} has a first dimension of {first}, not a multiple "
                f"of its block size {kind.block}"
            )
        nbytes = math.prod(dims) // kind.block * kind.size  # Python integers: no overflow
        return TensorInfo(name, dims, code, offset, nbytes)

    def _check_layout(self, size: int) -> None:
        """Every tensor's bytes aligned, inside the file, and not shared with another tensor."""
        room = size - self.data_start
        for t in self._tensors.values():
            if t.offset % self.alignment:
                raise self._corrupt(
                    f"tensor '{t.name}' has data offset {t.offset}, not a multiple of the "
                    f"alignment {self.alignment}"
                )
            if t.offset + t.nbytes > room:
                raise self._corrupt(
                    f"tensor '{t.name}' runs to byte {self.data_start + t.offset + t.nbytes}, "
                    f"past the end of the file ({size} bytes; truncated?)"
                )
        order = sorted(self._tensors.values(), key=lambda t: (t.offset, t.nbytes, t.name))
        end, prev = 0, ""
        for t in order:
            if t.nbytes == 0:
                continue
            if t.offset < end:
                raise self._corrupt(f"tensor '{t.name}' overlaps tensor '{prev}'")
            end, prev = t.offset + t.nbytes, t.name

    def _corrupt(self, why: str) -> CheckpointError:
        return CheckpointError(
            f"{self.path} is not a readable GGUF file ({why}); re-download or re-convert it"
        )

    def _map(self) -> mmap.mmap:
        if self._mm is None:
            try:
                mm = map_file(self.path)
            except (OSError, ValueError) as exc:  # ValueError: the file is now empty
                raise CheckpointError(
                    f"cannot read {self.path}: {getattr(exc, 'strerror', None) or exc}"
                ) from None
            if len(mm) != self.size:  # the header's offsets were checked against that size
                mm.close()
                raise CheckpointError(
                    f"{self.path} changed size since its header was read; rerun on a file "
                    "nobody is writing"
                )
            self._mm = mm
        return self._mm

    def field(self, key: str) -> Any:
        """The scalar metadata value ``key`` (None when absent or an array)."""
        return self.metadata.get(key)

    def names(self) -> list[str]:
        return list(self._tensors)

    def info(self, name: str) -> TensorInfo:
        return self._tensors[name]

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(reversed(self._tensors[name].dims))

    def dtype(self, name: str) -> str:
        return GGML_TYPES[self._tensors[name].type].name

    def raw(self, name: str) -> np.ndarray:
        """Zero-copy view of the tensor's stored bytes (uint8, mapped)."""
        t = self._tensors[name]
        return np.frombuffer(
            self._map(), dtype=np.uint8, count=t.nbytes, offset=self.data_start + t.offset
        )

    def get(self, name: str) -> np.ndarray:
        kind = self.dtype(name)
        shape = self.shape(name)
        raw = self.raw(name)
        if kind in _FLOATS:
            arr = raw.view(_FLOATS[kind]).astype(np.float64)
        elif kind == "BF16":
            arr = (raw.view("<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            arr = self._dequantize(name, kind, raw, shape)
        del raw
        self._release(name)
        return check_finite(arr.reshape(shape), name, str(self.path))

    def _dequantize(
        self, name: str, kind: str, raw: np.ndarray, shape: tuple[int, ...]
    ) -> np.ndarray:
        """A quantized tensor decoded by gguf.quants (float32), as float64."""
        data = None
        if kind not in _INTEGERS:
            try:
                import gguf
            except ImportError:
                raise CheckpointError(
                    f"tensor '{name}' in {self.path} is stored as {kind}; dequantizing it needs "
                    f"the gguf package ({INSTALL})"
                ) from None
            try:  # an older gguf may lack a type of GGML_TYPES, or its decoder
                qtype = gguf.GGMLQuantizationType[kind]
                rows = raw.reshape(gguf.quants.quant_shape_to_byte_shape(shape, qtype))
                data = gguf.quants.dequantize(rows, qtype)
            except (NotImplementedError, KeyError):
                data = None
        if data is None or np.dtype(data.dtype).kind != "f":
            raise CheckpointError(
                f"tensor '{name}' in {self.path} has GGUF type {kind}, which specbound "
                "cannot dequantize (supported: F64, F32, F16, BF16, Q4_0..Q8_0, the K-quants "
                "and the IQ types gguf.quants decodes)"
            )
        return np.asarray(data, dtype=np.float64)

    def _release(self, name: str) -> None:
        """Drop the tensor's mapped pages from this process's resident set (streaming)."""
        t = self._tensors[name]
        release_pages(self._mm, self.data_start + t.offset, t.nbytes)

    def fingerprint(self) -> str:
        return file_stamp(self.path)

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None
