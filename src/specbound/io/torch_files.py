"""PyTorch pickle checkpoints (``pytorch_model.bin``) read without torch, as strictly as
``torch.load(weights_only=True)`` (the pickle rules: :mod:`specbound.io.torch_pickle`).

Two layouts are read, both as torch writes them:

- the zip format (``torch.save`` since 1.6): ``<archive>/data.pkl``, one member
  ``<archive>/data/<key>`` per storage, ``<archive>/byteorder`` (``little``; absent in files
  older than torch 1.12, which were little-endian). torch stores members uncompressed and
  64-byte aligned, so each is memory-mapped by its offset; a compressed (deflate) member is
  inflated into memory when one of its tensors is read, after its declared size was checked
  against the storage's;
- the legacy format (``_use_new_zipfile_serialization=False``, every file of torch < 1.6): five
  pickles (magic number, protocol 1001, system info, the object, the storage keys), then each
  storage as an 8-byte element count and its bytes, in the order of the keys; memory-mapped.

Every storage a tensor uses is located and checked when the file is opened (member present and
of exactly the storage's size, records inside the file, each tensor's offset/size/stride view
inside its storage, no more elements than its storage holds, so no read exceeds the file), and
a tensor's bytes are read only by :meth:`TorchBinFile.get`, as a numpy view
(``as_strided`` over the mapped bytes) converted to float64 (bfloat16 exactly, by shifting its
16 bits into the top of a float32). torch is never imported: the numbers are the same with or
without it.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CheckpointError
from . import torch_pickle as tp
from .files import check_regular_file, file_stamp
from .sources import check_finite

#: Tensor dtypes read as weights, as the numpy dtype of their stored bytes (bf16 as uint16).
_READ: dict[str, np.dtype] = {
    "float64": np.dtype("<f8"),
    "float32": np.dtype("<f4"),
    "float16": np.dtype("<f2"),
    "bfloat16": np.dtype("<u2"),
}
#: ``torch.save``'s legacy magic number and protocol version.
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001
_KEY = re.compile(r"[A-Za-z0-9_]{1,64}")
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")


def _inflate_limit() -> int:
    """Largest compressed member inflated into memory: half the machine's RAM."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def _last(rec: tp.TensorRecord) -> int:
    """Index, in elements from the storage's start, of the last element ``rec`` reads (its
    shape has no zero)."""
    return rec.offset + sum((n - 1) * s for n, s in zip(rec.shape, rec.strides, strict=True))


class _MapReader:
    """A read-only file over a memory map, for ``pickletools.genops``: a read never returns (or
    allocates) more than the map holds, whatever length a hostile opcode declares."""

    def __init__(self, mm: mmap.mmap) -> None:
        self._mm, self._pos = mm, 0

    def read(self, n: int = -1) -> bytes:
        end = len(self._mm) if n < 0 else min(len(self._mm), self._pos + n)
        out = self._mm[self._pos : end]
        self._pos = max(self._pos, end)
        return out

    def readline(self) -> bytes:
        end = self._mm.find(b"\n", self._pos)
        return self.read(-1 if end < 0 else end + 1 - self._pos)

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int) -> None:
        self._pos = pos


class _Storage:
    """Where one storage's bytes lie: ``offset`` into the file (mapped) or ``member`` (a
    compressed zip member), ``nbytes`` long."""

    __slots__ = ("member", "nbytes", "offset", "stype")

    def __init__(
        self, stype: tp.StorageType, nbytes: int, offset: int | None, member: str | None
    ) -> None:
        self.stype, self.nbytes, self.offset, self.member = stype, nbytes, offset, member


class TorchBinFile:
    """One ``.bin`` checkpoint (zip or legacy format), its tensors read lazily as float64."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        check_regular_file(self.path, "PyTorch checkpoint")
        self._mm: mmap.mmap | None = None
        self._storages: dict[str, _Storage] = {}
        try:
            self._size = self.path.stat().st_size
            with open(self.path, "rb") as fh:
                head = fh.read(512)
            if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
                obj = self._open_zip()
            elif head[:2] == b"\x80\x02":
                obj = self._open_legacy()
            elif head[257:262] == b"ustar":
                raise self._bad(
                    "it is a tar checkpoint of torch < 0.4, which specbound does not read; "
                    "re-save it with torch >= 1.6 or convert it to safetensors"
                )
            else:
                raise self._bad(
                    "it is neither a zip checkpoint (torch >= 1.6) nor a legacy one; re-download it"
                )
        except tp.Refused as exc:
            raise self._refusal(str(exc)) from None
        except CheckpointError:
            raise
        except (  # what zipfile and file reads raise on a corrupt or truncated file
            OSError,
            zipfile.BadZipFile,
            zipfile.LargeZipFile,
            EOFError,
            ValueError,
            struct.error,
            NotImplementedError,
            RuntimeError,
            OverflowError,
            zlib.error,
        ) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise self._bad(f"{first} (truncated or corrupt?); re-download it") from None
        self._tensors = self._state(obj)
        for name, rec in self._tensors.items():
            self._check_view(name, rec)

    # -- errors ---------------------------------------------------------------------------------

    def _bad(self, why: str) -> CheckpointError:
        return CheckpointError(f"{self.path} could not be read as a PyTorch checkpoint: {why}")

    def _refusal(self, why: str) -> CheckpointError:
        if why.startswith("code execution: "):
            return CheckpointError(
                f"{self.path} needs arbitrary code execution to unpickle "
                f"({why.split(': ', 1)[1]}), which specbound refuses, as "
                "torch.load(weights_only=True) does; convert it to safetensors from a trusted "
                "environment"
            )
        if why.startswith("opcode: "):
            return CheckpointError(
                f"{self.path} uses pickle opcode {why.split(': ', 1)[1]}, which "
                "torch.load(weights_only=True) refuses too; re-save it with torch.save's default "
                "pickle protocol (2) or convert it to safetensors"
            )
        if why.startswith("unsupported: "):
            return CheckpointError(
                f"{self.path} holds {why.split(': ', 1)[1]}; convert it to safetensors"
            )
        return CheckpointError(
            f"{self.path} is refused: its pickle holds {why}; specbound reads only state dicts "
            "of tensors (re-save it with torch.save(model.state_dict()) or convert it to "
            "safetensors)"
        )

    # -- the zip format -------------------------------------------------------------------------

    def _open_zip(self) -> Any:
        with zipfile.ZipFile(self.path) as zf:
            infos = zf.infolist()
            names = [i.filename for i in infos]
            if len(set(names)) != len(names):
                dup = next(n for n in names if names.count(n) > 1)
                raise self._bad(f"member '{dup}' appears twice; re-download it")
            pkls = [n for n in names if n.count("/") == 1 and n.endswith("/data.pkl")]
            if len(pkls) != 1:
                raise self._bad(
                    f"{len(pkls)} '<archive>/data.pkl' members (a TorchScript archive or not a "
                    "torch.save file?); re-save it with torch.save(model.state_dict())"
                )
            archive = pkls[0][: -len("data.pkl")]
            by_name = {i.filename: i for i in infos}
            order = by_name.get(archive + "byteorder")
            if order is not None:
                text = self._member_bytes(zf, order, 16)
                if text != b"little":
                    raise self._bad(
                        f"its byteorder is {text[:16]!r}, not little-endian; re-save it on a "
                        "little-endian machine or convert it to safetensors"
                    )
            info = by_name[pkls[0]]
            if info.file_size > tp.MAX_PICKLE_BYTES:
                raise tp.Refused(
                    f"a pickle of {info.file_size} bytes (at most {tp.MAX_PICKLE_BYTES})"
                )
            data = self._member_bytes(zf, info, tp.MAX_PICKLE_BYTES)
            refs: list[tp.StorageRef] = []
            obj = tp.load(data, refs.append)
            for ref in refs:
                self._zip_storage(zf, by_name, archive, ref)
        return obj

    def _member_bytes(self, zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
        if info.file_size > limit:
            raise self._bad(f"member '{info.filename}' is {info.file_size} bytes, over {limit}")
        with zf.open(info) as fh:
            return fh.read(limit + 1)

    def _zip_storage(
        self,
        zf: zipfile.ZipFile,
        by_name: Mapping[str, zipfile.ZipInfo],
        archive: str,
        ref: tp.StorageRef,
    ) -> None:
        if not _KEY.fullmatch(ref.key):
            raise tp.Refused(f"storage key {ref.key[:80]!r}, not a plain name inside the archive")
        nbytes = ref.numel * ref.stype.itemsize
        if self._known(ref, nbytes):
            return
        member = f"{archive}data/{ref.key}"
        info = by_name.get(member)
        if info is None:
            raise self._bad(f"storage member '{member}' is missing (truncated?); re-download it")
        if info.file_size != nbytes:
            raise self._bad(
                f"storage member '{member}' holds {info.file_size} bytes but its "
                f"{ref.stype.name} of {ref.numel} elements needs {nbytes}; re-download it"
            )
        if info.compress_type == zipfile.ZIP_STORED:
            offset = self._stored_offset(zf, info)
            self._storages[ref.key] = _Storage(ref.stype, nbytes, offset, None)
        elif info.compress_type == zipfile.ZIP_DEFLATED:
            if nbytes > _inflate_limit():
                raise self._bad(
                    f"compressed member '{member}' would inflate to {nbytes} bytes, more than "
                    "half this machine's memory; re-save it uncompressed with torch.save"
                )
            self._check_inflates(zf, info)
            self._storages[ref.key] = _Storage(ref.stype, nbytes, None, member)
        else:
            raise self._bad(
                f"member '{member}' uses zip compression method {info.compress_type} (torch "
                "writes members stored); re-save it with torch.save"
            )

    def _check_inflates(self, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
        """Inflate a compressed member 1 MiB at a time (nothing kept): its declared size and
        CRC hold, so a bomb-like stream is refused when the file is opened, not mid-analysis."""
        n = 0
        try:
            with zf.open(info) as fh:
                while chunk := fh.read(2**20):
                    n += len(chunk)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError, RuntimeError, zlib.error) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise self._bad(f"member '{info.filename}': {first}; re-download it") from None
        if n != info.file_size:
            raise self._bad(
                f"member '{info.filename}' inflates to {n} bytes, not {info.file_size}; "
                "re-download it"
            )

    def _stored_offset(self, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
        """File offset of a stored member's first byte, from its local header."""
        fp = zf.fp
        assert fp is not None
        fp.seek(info.header_offset)
        head = fp.read(_LOCAL_HEADER.size)
        if len(head) < _LOCAL_HEADER.size or head[:4] != b"PK\x03\x04":
            raise self._bad(f"member '{info.filename}' has no local header (truncated?)")
        fields = _LOCAL_HEADER.unpack(head)
        name_len, extra_len = fields[-2], fields[-1]
        name = fp.read(name_len)
        if name.decode("utf-8", "replace") != info.filename:
            raise self._bad(f"member '{info.filename}' has a local header of another name")
        start = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
        if start + info.file_size > self._size:
            raise self._bad(
                f"member '{info.filename}' ends past the end of the file (truncated download?); "
                "re-download it"
            )
        return start

    def _known(self, ref: tp.StorageRef, nbytes: int) -> bool:
        seen = self._storages.get(ref.key)
        if seen is None:
            return False
        if seen.stype != ref.stype or seen.nbytes != nbytes:
            raise tp.Refused(
                f"storage '{ref.key}' used as {seen.stype.name} of {seen.nbytes} bytes and as "
                f"{ref.stype.name} of {nbytes} bytes"
            )
        return True

    # -- the legacy format ----------------------------------------------------------------------

    def _open_legacy(self) -> Any:
        fh = _MapReader(self._map())
        magic = tp.load(self._next_pickle(fh))
        if magic != _LEGACY_MAGIC:
            raise self._bad("its magic number is wrong (not a torch.save file?)")
        protocol = tp.load(self._next_pickle(fh))
        if protocol != _LEGACY_PROTOCOL:
            raise self._bad(f"legacy protocol {protocol!r} is not {_LEGACY_PROTOCOL}")
        info = tp.load(self._next_pickle(fh))
        if not isinstance(info, dict) or info.get("little_endian") is not True:
            raise self._bad(
                "it was saved on a big-endian machine (or says nothing of its byte order); "
                "re-save it on a little-endian one or convert it to safetensors"
            )
        refs: list[tp.StorageRef] = []
        obj = tp.load(self._next_pickle(fh), refs.append)
        keys = tp.load(self._next_pickle(fh))
        data_start = fh.tell()
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise tp.Refused("a storage key list that is not a list of strings")
        self._legacy_storages(fh, refs, keys, data_start)
        return obj

    def _next_pickle(self, fh: Any) -> bytes:
        """The bytes of the pickle starting at ``fh``'s position (which moves past it)."""
        import pickletools

        start = fh.tell()
        try:
            for op, _, pos in pickletools.genops(fh):
                if pos is not None and pos - start > tp.MAX_PICKLE_BYTES:
                    raise tp.Refused(f"a pickle over {tp.MAX_PICKLE_BYTES} bytes")
                if op.name == "STOP":
                    end = fh.tell()
                    break
            else:  # pragma: no cover - genops raises at EOF without STOP
                raise ValueError("no STOP")
        except ValueError as exc:
            raise self._bad(f"a pickle is cut short ({exc}); re-download it") from None
        fh.seek(start)
        data: bytes = fh.read(end - start)
        return data

    def _legacy_storages(
        self, fh: Any, refs: list[tp.StorageRef], keys: list[str], offset: int
    ) -> None:
        types: dict[str, tp.StorageRef] = {}
        for ref in refs:
            first = types.setdefault(ref.key, ref)
            if first.stype != ref.stype or first.numel != ref.numel:
                raise tp.Refused(f"storage '{ref.key[:80]}' declared with two types or sizes")
        if len(set(keys)) != len(keys) or set(keys) != set(types):
            raise self._bad(
                "its storage key list does not match the storages its tensors use; re-download it"
            )
        for key in keys:
            ref = types[key]
            fh.seek(offset)
            head = fh.read(8)
            if len(head) < 8:
                raise self._bad(
                    f"storage '{key}' is cut short (truncated download?); re-download it"
                )
            numel = int.from_bytes(head, "little", signed=True)
            nbytes = ref.numel * ref.stype.itemsize
            if numel != ref.numel:
                raise self._bad(
                    f"storage '{key}' holds {numel} elements but its tensors' {ref.stype.name} "
                    f"has {ref.numel}; re-download it"
                )
            if offset + 8 + nbytes > self._size:
                raise self._bad(
                    f"storage '{key}' ends past the end of the file (truncated download?); "
                    "re-download it"
                )
            self._storages[key] = _Storage(ref.stype, nbytes, offset + 8, None)
            offset += 8 + nbytes

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
            raise self._refusal(
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
            with open(self.path, "rb") as fh:
                self._mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
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
            buf, base = self._inflate(st), first
        flat = np.frombuffer(buf, dtype=dt, count=need, offset=base)
        return np.lib.stride_tricks.as_strided(
            flat[rec.offset :],
            shape=rec.shape,
            strides=tuple(s * dt.itemsize for s in rec.strides),
            writeable=False,
        )

    def _inflate(self, st: _Storage) -> bytes:
        assert st.member is not None
        try:
            with zipfile.ZipFile(self.path) as zf, zf.open(st.member) as fh:
                data = fh.read(st.nbytes + 1)
        except (OSError, zipfile.BadZipFile, EOFError, ValueError, RuntimeError, zlib.error) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise self._bad(f"member '{st.member}': {first}; re-download it") from None
        if len(data) != st.nbytes:
            raise self._bad(f"member '{st.member}' inflates to {len(data)} bytes, not {st.nbytes}")
        return data

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
        if (
            self._mm is None
            or st is None
            or st.offset is None
            or not hasattr(mmap, "MADV_DONTNEED")
        ):
            return
        start = st.offset // mmap.PAGESIZE * mmap.PAGESIZE
        with contextlib.suppress(OSError, ValueError):
            self._mm.madvise(mmap.MADV_DONTNEED, start, st.offset + st.nbytes - start)

    def fingerprint(self) -> str:
        return file_stamp(self.path)

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None
