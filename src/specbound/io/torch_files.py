"""PyTorch pickle checkpoints (``pytorch_model.bin``) read without torch, as strictly as
``torch.load(weights_only=True)``: the zip format of ``torch.save`` since 1.6 and the legacy
format before it (where storages lie: :mod:`specbound.io.torch_layout`; the pickle rules:
:mod:`specbound.io.torch_pickle`).

Every storage a tensor uses is located and checked when the file is opened, and so is each
tensor's offset/size/stride view (inside its storage, no more elements than the storage holds,
so no read exceeds the file). A tensor's bytes are read only by :meth:`TorchBinFile.get`, as a
numpy view (``as_strided`` over the memory-mapped bytes) converted to float64 (bfloat16 exactly,
by shifting its 16 bits into the top of a float32). torch is never imported: the numbers are the
same with or without it.
"""

from __future__ import annotations

import math
import mmap
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CheckpointError
from . import torch_pickle as tp
from .files import check_regular_file, file_stamp, map_file, release_pages
from .sources import check_finite
from .torch_layout import TorchArchive

#: Tensor dtypes read as weights, as the numpy dtype of their stored bytes (bf16 as uint16).
_READ: dict[str, np.dtype] = {
    "float64": np.dtype("<f8"),
    "float32": np.dtype("<f4"),
    "float16": np.dtype("<f2"),
    "bfloat16": np.dtype("<u2"),
}


def _last(rec: tp.TensorRecord) -> int:
    """Index, in elements from the storage's start, of the last element ``rec`` reads (its
    shape has no zero)."""
    return rec.offset + sum((n - 1) * s for n, s in zip(rec.shape, rec.strides, strict=True))


class TorchBinFile:
    """One ``.bin`` checkpoint (zip or legacy format), its tensors read lazily as float64."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        check_regular_file(self.path, "PyTorch checkpoint")
        self._mm: mmap.mmap | None = None
        try:
            self._archive = TorchArchive(self.path, self._map)
        except OSError as exc:
            raise CheckpointError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        obj = self._archive.open()
        self._storages = self._archive.storages
        self._tensors = self._state(obj)
        for name, rec in self._tensors.items():
            self._check_view(name, rec)

    # -- tensors --------------------------------------------------------------------------------

    def _state(self, obj: Any) -> dict[str, tp.TensorRecord]:
        if isinstance(obj, dict) and "state_dict" in obj and len(obj) <= 4:
            obj = obj["state_dict"]
        if not isinstance(obj, dict):
            raise CheckpointError(
                f"{self.path} does not hold a state dict of tensors (it holds a "
                f"{'tensor' if isinstance(obj, tp.TensorRecord) else type(obj).__name__}); "
                "re-save it with torch.save(model.state_dict())"
            )
        out: dict[str, tp.TensorRecord] = {}
        for k, v in obj.items():
            if isinstance(v, tp.TensorRecord):
                if not isinstance(k, str):
                    raise CheckpointError(
                        f"{self.path} names a tensor {str(k)[:80]!r}, not a string; re-save it "
                        "with torch.save(model.state_dict())"
                    )
                out[k] = v
        return out

    def _storage_span(self, rec: tp.TensorRecord) -> tuple[int, int]:
        """(first byte within the storage's bytes, bytes available) for ``rec``."""
        st = self._storages[rec.storage.key]
        if rec.storage.view is None:
            return 0, st.nbytes
        off, n = rec.storage.view
        size = st.stype.itemsize
        if (off + n) * size > st.nbytes:
            raise self._archive.refusal(
                f"a storage view of elements {off}..{off + n} in a storage of {st.nbytes // size}"
            )
        return off * size, n * size

    def _check_view(self, name: str, rec: tp.TensorRecord) -> None:
        if rec.dtype not in tp.DTYPES:  # pragma: no cover - the records only carry known dtypes
            raise CheckpointError(f"tensor '{name}' in {self.path} has unknown dtype {rec.dtype}")
        _, avail = self._storage_span(rec)
        count = math.prod(rec.shape)
        if count == 0:
            return
        last = _last(rec)
        if (last + 1) * rec.itemsize > avail:
            raise CheckpointError(
                f"tensor '{name}' in {self.path} reads past its storage (offset {rec.offset}, "
                f"size {rec.shape}, stride {rec.strides}, {avail} bytes of {rec.dtype}); "
                "re-download or re-save it"
            )
        if count * rec.itemsize > avail:
            raise CheckpointError(
                f"tensor '{name}' in {self.path} has {count} elements over a storage of "
                f"{avail // rec.itemsize} (a broadcast view, not a weight); re-save it with "
                ".contiguous()"
            )

    def names(self) -> list[str]:
        return list(self._tensors)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._tensors[name].shape

    def dtype(self, name: str) -> str:
        return f"torch.{self._tensors[name].dtype}"

    def _map(self) -> mmap.mmap:
        if self._mm is None:
            self._mm = map_file(self.path)  # an ENOMEM names the file
        return self._mm

    def raw(self, name: str) -> np.ndarray:
        """The tensor in its stored dtype (bf16 as uint16): a strided view of the mapped bytes,
        or of the inflated member."""
        rec = self._tensors[name]
        if rec.dtype not in _READ:
            raise CheckpointError(
                f"tensor '{name}' in {self.path} is stored as torch.{rec.dtype}; specbound reads "
                f"weight matrices only as {', '.join(_READ)} (dequantize or convert the checkpoint)"
            )
        dt = _READ[rec.dtype]
        count = math.prod(rec.shape)
        if count == 0:
            return np.empty(rec.shape, dtype=dt)
        st = self._storages[rec.storage.key]
        first, _ = self._storage_span(rec)
        need = _last(rec) + 1
        buf: Any
        if st.member is None:
            assert st.offset is not None
            buf, base = self._map(), st.offset + first
        else:
            buf, base = self._archive.inflate(st), first
        flat = np.frombuffer(buf, dtype=dt, count=need, offset=base)
        return np.lib.stride_tricks.as_strided(
            flat[rec.offset :],
            shape=rec.shape,
            strides=tuple(s * dt.itemsize for s in rec.strides),
            writeable=False,
        )

    def get(self, name: str) -> np.ndarray:
        rec = self._tensors[name]
        raw = self.raw(name)
        if rec.dtype == "bfloat16":
            out = (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            out = raw.astype(np.float64)
        del raw
        self._release(rec)
        return check_finite(out, name, str(self.path))

    def _release(self, rec: tp.TensorRecord) -> None:
        """Drop the storage's mapped pages from this process's resident set (streaming)."""
        st = self._storages.get(rec.storage.key)
        if st is not None and st.offset is not None:
            release_pages(self._mm, st.offset, st.nbytes)

    def fingerprint(self) -> str:
        return file_stamp(self.path)

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None
