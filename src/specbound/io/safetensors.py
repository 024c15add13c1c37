"""Safetensors files read without torch or the safetensors library: the whole header is
validated before any offset is trusted, tensors are memory-mapped and read one at a time.
"""

from __future__ import annotations

import math
import mmap
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CheckpointError
from .files import check_regular_file, file_stamp, is_count, map_file, parse_json, release_pages
from .sources import check_finite

#: Bits per element of every dtype the safetensors format defines (library 0.8): a header is
#: validated against all of them, though specbound reads only ``_ST_READ`` (when a tensor is read).
_ST_BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}
#: The dtypes specbound reads, as numpy dtypes (bf16 as uint16, converted by hand).
_ST_READ: dict[str, np.dtype] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
}
#: The safetensors library refuses larger headers.
MAX_HEADER_BYTES = 100_000_000


class SafetensorsFile:
    """One .safetensors file, memory-mapped; header validated as strictly as the safetensors
    library does, before any offset is trusted.

    Checks: header length within the file and at most ``MAX_HEADER_BYTES``; the header a JSON
    object without duplicate keys (stricter than the library, which keeps the last one);
    ``__metadata__`` a map of strings; each entry a known dtype, a shape of non-negative integers
    and two integer offsets whose span is exactly the shape's byte size; the tensors, sorted by
    offset, tile the data region from its first byte to the file's last (no gap, no overlap, no
    trailing bytes). Dtypes specbound does not read are accepted here and refused only when such
    a tensor is read.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        check_regular_file(self.path, "safetensors file")
        try:
            size = self.path.stat().st_size
            with open(self.path, "rb") as fh:
                head = fh.read(8)
                if len(head) < 8:
                    raise self._corrupt("file is shorter than the 8-byte header length")
                n = int.from_bytes(head, "little")
                if n > MAX_HEADER_BYTES:
                    raise self._corrupt(f"header length {n} exceeds {MAX_HEADER_BYTES} bytes")
                if n <= 0 or 8 + n > size:
                    raise self._corrupt(f"header length {n} does not fit in a file of {size} bytes")
                raw = fh.read(n)
        except OSError as exc:
            raise CheckpointError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        try:
            header = parse_json(raw, "header")
        except CheckpointError as exc:
            raise self._corrupt(str(exc).split(";")[0]) from None
        if not isinstance(header, dict):
            raise self._corrupt("header is not a JSON object")
        meta = header.pop("__metadata__", None)
        if meta is not None and not (
            isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())
        ):
            raise self._corrupt("__metadata__ is not a map of strings")
        self.metadata = meta or {}
        self._data_start = 8 + n
        data_len = size - self._data_start
        self._entries: dict[str, tuple[str, tuple[int, ...], int, int]] = {}
        for name, info in header.items():
            self._entries[name] = self._entry(name, info, data_len)
        self._check_layout(data_len)
        self._mm: mmap.mmap | None = None

    def _entry(self, name: str, info: Any, data_len: int) -> tuple[str, tuple[int, ...], int, int]:
        if not isinstance(info, dict):
            raise self._corrupt(f"entry for tensor '{name}' is not an object")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if not isinstance(dtype, str) or dtype not in _ST_BITS:
            raise self._corrupt(f"tensor '{name}' has unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(is_count(d) for d in shape):
            raise self._corrupt(f"tensor '{name}' has shape {shape!r}, not a list of integers >= 0")
        if not (
            isinstance(offsets, list)
            and len(offsets) == 2
            and all(is_count(x) for x in offsets)
            and offsets[0] <= offsets[1]
        ):
            raise self._corrupt(f"tensor '{name}' has data_offsets {offsets!r}, not [begin, end]")
        bits = math.prod(shape) * _ST_BITS[dtype]  # Python integers: no overflow
        if bits % 8:
            raise self._corrupt(f"tensor '{name}' of dtype {dtype} does not fill whole bytes")
        begin, end = offsets
        if end > data_len:
            raise self._corrupt(
                f"tensor '{name}' ends at byte {end} but the file holds {data_len} data bytes "
                "(truncated download?)"
            )
        if end - begin != bits // 8:
            raise self._corrupt(
                f"tensor '{name}' has data offsets that disagree with its shape "
                f"({end - begin} bytes for {bits // 8})"
            )
        return dtype, tuple(shape), begin, end

    def _check_layout(self, data_len: int) -> None:
        """The tensors, sorted by offset, cover bytes [0, data_len) exactly once."""
        order = sorted(self._entries.items(), key=lambda e: (e[1][2], e[1][3], e[0]))
        pos, prev = 0, None
        for name, (_, _, begin, end) in order:  # overlaps first: the more telling message
            if begin < pos:
                raise self._corrupt(f"tensor '{name}' overlaps tensor '{prev}'")
            if end > begin:
                pos, prev = end, name
        pos = 0
        for name, (_, _, begin, end) in order:
            if begin > pos:
                raise self._corrupt(
                    f"data bytes {pos}..{begin} belong to no tensor (before '{name}')"
                )
            pos = end
        if pos != data_len:
            raise self._corrupt(f"{data_len - pos} trailing bytes after the last tensor")

    def _corrupt(self, why: str) -> CheckpointError:
        return CheckpointError(
            f"{self.path} is not a valid safetensors file: {why}; re-download or re-save it"
        )

    def _map(self) -> mmap.mmap:
        if self._mm is None:
            self._mm = map_file(self.path)  # an ENOMEM names the file
        return self._mm

    def names(self) -> list[str]:
        return list(self._entries)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._entries[name][1]

    def dtype(self, name: str) -> str:
        return self._entries[name][0]

    def raw(self, name: str) -> np.ndarray:
        """Zero-copy view of the stored bytes in the stored dtype (bf16 as uint16)."""
        dtype, shape, begin, _ = self._entries[name]
        self._check_readable(name)
        count = math.prod(shape)
        if count == 0:
            return np.empty(shape, dtype=_ST_READ[dtype])
        buf = np.frombuffer(
            self._map(), dtype=_ST_READ[dtype], count=count, offset=self._data_start + begin
        )
        return buf.reshape(shape)

    def _check_readable(self, name: str) -> None:
        dtype = self.dtype(name)
        if dtype not in _ST_READ:
            raise CheckpointError(
                f"tensor '{name}' in {self.path} is stored as {dtype}; specbound reads weight "
                f"matrices only as {', '.join(_ST_READ)} (dequantize or convert the checkpoint)"
            )

    def get(self, name: str) -> np.ndarray:
        dtype = self.dtype(name)
        raw = self.raw(name)
        if dtype == "BF16":
            out = (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            out = raw.astype(np.float64)
        del raw
        self._release(name)
        return check_finite(out, name, str(self.path))

    def _release(self, name: str) -> None:
        """Drop the tensor's mapped pages from this process's resident set (streaming)."""
        _, _, begin, end = self._entries[name]
        release_pages(self._mm, self._data_start + begin, end - begin)

    def fingerprint(self) -> str:
        return file_stamp(self.path)

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None
