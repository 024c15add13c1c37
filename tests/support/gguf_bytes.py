"""GGUF files written byte by byte (a helper module, not a test file; no gguf package): the
hostile-header tests vary one field of a valid one-block llama at a time.

``buildbuild_file()`` is that llama: seven 32x32 F32 matrices at offsets 0, 4096, ... after a header
of ``llama_kvs()``; every part can be replaced (``kvs``, ``infos``, ``data``) and every count
forced (``n_kv``, ``n_tensors``, ``version``).
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

#: GGUF value types (the format's numbering)
UINT32, STRING, ARRAY, UINT64 = 4, 8, 9, 10
#: ggml tensor types used here
F32, Q8_0 = 0, 8


def enc(b: bytes) -> bytes:
    """A GGUF string: u64 length, then the bytes."""
    return struct.pack("<Q", len(b)) + b


def kv(key: bytes, vtype: int, payload: bytes) -> bytes:
    """One metadata key/value: key, u32 value type, the value's bytes."""
    return enc(key) + struct.pack("<I", vtype) + payload


def u32(key: bytes, v: int) -> bytes:
    return kv(key, UINT32, struct.pack("<I", v))


def text(key: bytes, v: bytes) -> bytes:
    return kv(key, STRING, enc(v))


def info(name: bytes, dims: list[int], ttype: int, offset: int) -> bytes:
    """One tensor info: name, u32 dim count, u64 dims (fastest first), u32 type, u64 offset."""
    return (
        enc(name)
        + struct.pack("<I", len(dims))
        + b"".join(struct.pack("<Q", d) for d in dims)
        + struct.pack("<IQ", ttype, offset)
    )


def llama_kvs(arch: bytes = b"llama", name: bytes = b"tiny") -> list[bytes]:
    """The metadata of the one-block llama (N = 32, H = 4, F = 32) and a 3-token vocabulary."""
    return [
        text(b"general.architecture", arch),
        text(b"general.name", name),
        u32(b"llama.block_count", 1),
        u32(b"llama.embedding_length", 32),
        u32(b"llama.attention.head_count", 4),
        u32(b"llama.feed_forward_length", 32),
        kv(
            b"tokenizer.ggml.tokens",
            ARRAY,
            struct.pack("<IQ", STRING, 3) + enc(b"a") + enc(b"") + enc("é".encode()),
        ),
    ]


STEMS = ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"]


def default_weights() -> dict[str, np.ndarray]:
    """The seven 32x32 float32 matrices of ``build_file()``, by stem, in numpy (out, in) order
    (GGUF dims [32, 32], fastest first: the same bytes)."""
    rng = np.random.default_rng(5)
    return {s: (rng.standard_normal((32, 32)) / 8).astype("<f4") for s in STEMS}


def build_file(
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
    kvs = llama_kvs() if kvs is None else kvs
    if infos is None:
        infos = [
            info(f"blk.0.{s}.weight".encode(), [32, 32], 0, i * 4096) for i, s in enumerate(STEMS)
        ]
        data = b"".join(w.tobytes() for w in default_weights().values())
    head = b"GGUF" + struct.pack(
        "<IQQ",
        version,
        len(infos) if n_tensors is None else n_tensors,
        len(kvs) if n_kv is None else n_kv,
    )
    head += b"".join(kvs) + b"".join(infos)
    head += b"\0" * (-len(head) % alignment)
    return head + (data or b"")


def patched_offsets(tmp_path: Path, offsets: dict[str, int], extra: int = 0) -> Path:
    """``build_file()`` with some tensors' data offsets replaced (by name) and ``extra`` bytes
    appended, written to ``tmp_path/m.gguf``."""
    infos = []
    for i, s in enumerate(STEMS):
        name = f"blk.0.{s}.weight"
        infos.append(info(name.encode(), [32, 32], 0, offsets.get(name, i * 4096)))
    data = np.ones(7 * 1024 + extra // 4, "<f4").tobytes()
    p = tmp_path / "m.gguf"
    p.write_bytes(build_file(infos=infos, data=data))
    return p
