"""Where the storages of a PyTorch ``.bin`` lie: the zip format (``torch.save`` since 1.6) and
the legacy format (torch < 1.6), located and checked without torch; the pickle itself is read by
:mod:`specbound.io.torch_pickle`, the tensors by :mod:`specbound.io.torch_files`.

- zip: ``<archive>/data.pkl``, one member ``<archive>/data/<key>`` per storage (a plain name:
  ``../x`` or ``/x`` is refused), ``<archive>/byteorder`` (``little``; absent before torch
  1.12, little-endian then). A stored member is located by its local header and memory-mapped;
  a compressed (deflate) one is inflated once in 1 MiB pieces at open (declared size and CRC
  checked, nothing kept) and into memory when one of its tensors is read.
- legacy: five pickles (magic number, protocol 1001, system info, the object, the storage keys),
  then each storage as an 8-byte element count and its bytes, in the order of the keys.

Each member or record must hold exactly its storage's bytes and lie inside the file.
"""

from __future__ import annotations

import mmap
import os
import pickletools
import re
import struct
import zipfile
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import CheckpointError
from . import torch_pickle as tp

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


class Storage:
    """Where one storage's bytes lie: ``offset`` into the file (mapped) or ``member`` (a
    compressed zip member), ``nbytes`` long."""

    __slots__ = ("member", "nbytes", "offset", "stype")

    def __init__(
        self, stype: tp.StorageType, nbytes: int, offset: int | None, member: str | None
    ) -> None:
        self.stype, self.nbytes, self.offset, self.member = stype, nbytes, offset, member


class TorchArchive:
    """One ``.bin`` file's layout: :meth:`open` unpickles it and locates every storage it uses
    (:attr:`storages`, key -> :class:`Storage`)."""

    def __init__(self, path: Path, mapper: Callable[[], mmap.mmap]) -> None:
        self.path = path
        self._size = path.stat().st_size
        self._map = mapper
        self.storages: dict[str, Storage] = {}
        self._storages = self.storages

    def open(self) -> Any:
        """The unpickled object (tensors as records); fills :attr:`storages`. Raises
        CheckpointError, one line naming the file."""
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(512)
            if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
                obj = self._open_zip()
            elif head[:2] == b"\x80\x02":
                obj = self._open_legacy()
            elif head[257:262] == b"ustar":
                raise self.bad(
                    "it is a tar checkpoint of torch < 0.4, which specbound does not read; "
                    "re-save it with torch >= 1.6 or convert it to safetensors"
                )
            else:
                raise self.bad(
                    "it is neither a zip checkpoint (torch >= 1.6) nor a legacy one; re-download it"
                )
        except tp.Refused as exc:
            raise self.refusal(str(exc)) from None
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
            raise self.bad(f"{first} (truncated or corrupt?); re-download it") from None
        return obj

    # -- errors ---------------------------------------------------------------------------------

    def bad(self, why: str) -> CheckpointError:
        return CheckpointError(f"{self.path} could not be read as a PyTorch checkpoint: {why}")

    def refusal(self, why: str) -> CheckpointError:
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
                raise self.bad(f"member '{dup}' appears twice; re-download it")
            pkls = [n for n in names if n.count("/") == 1 and n.endswith("/data.pkl")]
            if len(pkls) != 1:
                raise self.bad(
                    f"{len(pkls)} '<archive>/data.pkl' members (a TorchScript archive or not a "
                    "torch.save file?); re-save it with torch.save(model.state_dict())"
                )
            archive = pkls[0][: -len("data.pkl")]
            by_name = {i.filename: i for i in infos}
            order = by_name.get(archive + "byteorder")
            if order is not None:
                text = self._member_bytes(zf, order, 16)
                if text != b"little":
                    raise self.bad(
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
            raise self.bad(f"member '{info.filename}' is {info.file_size} bytes, over {limit}")
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
            raise self.bad(f"storage member '{member}' is missing (truncated?); re-download it")
        if info.file_size != nbytes:
            raise self.bad(
                f"storage member '{member}' holds {info.file_size} bytes but its "
                f"{ref.stype.name} of {ref.numel} elements needs {nbytes}; re-download it"
            )
        if info.flag_bits & 0x1:
            raise self.bad(f"storage member '{member}' is encrypted; re-save it with torch.save")
        if info.compress_type == zipfile.ZIP_STORED:
            offset = self._stored_offset(zf, info)
            self._storages[ref.key] = Storage(ref.stype, nbytes, offset, None)
        elif info.compress_type == zipfile.ZIP_DEFLATED:
            if nbytes > _inflate_limit():
                raise self.bad(
                    f"compressed member '{member}' would inflate to {nbytes} bytes, more than "
                    "half this machine's memory; re-save it uncompressed with torch.save"
                )
            self._check_inflates(zf, info)
            self._storages[ref.key] = Storage(ref.stype, nbytes, None, member)
        else:
            raise self.bad(
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
            raise self.bad(f"member '{info.filename}': {first}; re-download it") from None
        if n != info.file_size:
            raise self.bad(
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
            raise self.bad(f"member '{info.filename}' has no local header (truncated?)")
        fields = _LOCAL_HEADER.unpack(head)
        name_len, extra_len = fields[-2], fields[-1]
        name = fp.read(name_len)
        encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
        if name.decode(encoding, "replace") != info.orig_filename:
            raise self.bad(f"member '{info.filename}' has a local header of another name")
        start = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
        if start + info.file_size > self._size:
            raise self.bad(
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
            raise self.bad("its magic number is wrong (not a torch.save file?)")
        protocol = tp.load(self._next_pickle(fh))
        if protocol != _LEGACY_PROTOCOL:
            raise self.bad(f"legacy protocol {protocol!r} is not {_LEGACY_PROTOCOL}")
        info = tp.load(self._next_pickle(fh))
        if not isinstance(info, dict) or info.get("little_endian") is not True:
            raise self.bad(
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
            raise self.bad(f"a pickle is cut short ({exc}); re-download it") from None
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
            raise self.bad(
                "its storage key list does not match the storages its tensors use; re-download it"
            )
        for key in keys:
            ref = types[key]
            fh.seek(offset)
            head = fh.read(8)
            if len(head) < 8:
                raise self.bad(
                    f"storage '{key}' is cut short (truncated download?); re-download it"
                )
            numel = int.from_bytes(head, "little", signed=True)
            nbytes = ref.numel * ref.stype.itemsize
            if numel != ref.numel:
                raise self.bad(
                    f"storage '{key}' holds {numel} elements but its tensors' {ref.stype.name} "
                    f"has {ref.numel}; re-download it"
                )
            if offset + 8 + nbytes > self._size:
                raise self.bad(
                    f"storage '{key}' ends past the end of the file (truncated download?); "
                    "re-download it"
                )
            self._storages[key] = Storage(ref.stype, nbytes, offset + 8, None)
            offset += 8 + nbytes

    def inflate(self, st: Storage) -> bytes:
        """The bytes of a compressed member's storage."""
        assert st.member is not None
        try:
            with zipfile.ZipFile(self.path) as zf, zf.open(st.member) as fh:
                data = fh.read(st.nbytes + 1)
        except (OSError, zipfile.BadZipFile, EOFError, ValueError, RuntimeError, zlib.error) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise self.bad(f"member '{st.member}': {first}; re-download it") from None
        if len(data) != st.nbytes:
            raise self.bad(f"member '{st.member}' inflates to {len(data)} bytes, not {st.nbytes}")
        return data
