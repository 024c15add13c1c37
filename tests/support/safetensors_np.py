"""The safetensors file format in plain numpy, for tests (a helper module, not a test file).

``save_file(tensors, path, metadata=None)`` and ``load_file(path)`` behave like the safetensors
library's ``safetensors.numpy`` functions of the same names, so the tests can write and read
checkpoints in the core-only environment (no safetensors library there). Shares no code with
specbound (whose reader is what many tests check) nor with the library; tests/io/
test_safetensors_np.py checks both directions against the library where it is installed.

Format: 8 bytes little-endian u64 header length N; N bytes of JSON
``{"__metadata__": {str: str}, name: {"dtype", "shape", "data_offsets": [begin, end]}, ...}``
padded with spaces to a multiple of 8; then the tensors' little-endian bytes, contiguous, with
offsets relative to the end of the header. Like the library, tensors are laid out by dtype
(widest first) then name.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from pathlib import Path

import numpy as np

#: safetensors dtype name -> little-endian numpy dtype, in the library's dtype order.
_DTYPES: dict[str, str] = {
    "BOOL": "|b1",
    "U8": "|u1",
    "I8": "|i1",
    "I16": "<i2",
    "U16": "<u2",
    "F16": "<f2",
    "I32": "<i4",
    "U32": "<u4",
    "F32": "<f4",
    "F64": "<f8",
    "I64": "<i8",
    "U64": "<u8",
}
_RANK = {name: i for i, name in enumerate(_DTYPES)}
_NAMES = {(np.dtype(d).kind, np.dtype(d).itemsize): n for n, d in _DTYPES.items()}


def _dtype_name(a: np.ndarray) -> str:
    try:
        return _NAMES[(a.dtype.kind, a.dtype.itemsize)]
    except KeyError:
        raise ValueError(f"no safetensors dtype for numpy {a.dtype}") from None


def save_file(
    tensors: Mapping[str, np.ndarray], path: str | Path, metadata: Mapping[str, str] | None = None
) -> None:
    """Write ``tensors`` (name -> array) to the safetensors file ``path``."""
    arrays = {k: np.asarray(v) for k, v in tensors.items()}
    names = {k: _dtype_name(a) for k, a in arrays.items()}
    order = sorted(arrays, key=lambda k: (-_RANK[names[k]], k))
    header: dict[str, object] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    blobs = []
    pos = 0
    for k in order:
        data = np.ascontiguousarray(arrays[k], dtype=_DTYPES[names[k]]).tobytes()
        header[k] = {
            "dtype": names[k],
            "shape": list(arrays[k].shape),
            "data_offsets": [pos, pos + len(data)],
        }
        blobs.append(data)
        pos += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def load_file(path: str | Path) -> dict[str, np.ndarray]:
    """Every tensor of the safetensors file ``path``, as name -> numpy array (a copy)."""
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    body = raw[8 + n :]
    out: dict[str, np.ndarray] = {}
    for k, info in header.items():
        if k == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dt = np.dtype(_DTYPES[info["dtype"]])
        out[k] = np.frombuffer(body[begin:end], dtype=dt).reshape(info["shape"]).copy()
    return out
