"""On-disk cache of spectra, keyed by the checkpoint's identity; entries are codec records.

Key: sha256 of (the spectra algorithm version, config.json, every weight file's
path/size/mtime_ns/ctime_ns/inode plus a digest of sampled bytes of it (header, head, tail and
14 blocks spread through the file), the model spec, the adapter and its tensor roles per block).
Any write to a weight file changes its ctime (which no user call can set back), so a changed
file is never served stale spectra; the byte samples also catch rewrites on file systems with
coarse timestamps. Bound options (``--l-phi``, ``--grid-m``) are not part of the key: the bounds
are always recomputed from the cached spectra. Location: ``$SPECBOUND_CACHE_DIR`` or the user
cache dir (``~/.cache/specbound`` on Linux), entries in its ``spectra/`` folder. Spectra are the
same from every backend (numpy, torch; within 1e-10), so the backend is not part of the key.

Entry ``<key>`` is the record ``spectra/<key>.json`` + ``spectra/<key>.npz``
(:mod:`specbound.io.codec`: checksummed, no pickles). An entry that fails to verify, was written
by another spectra version or holds NaN/inf is invalid: it is ignored with one warning line and
recomputed (then overwritten). This module stores plain arrays; turning them into ``Spectra``
is the caller's job (:mod:`specbound.linalg.cache`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from .. import config
from ..errors import CacheError
from .codec import FORMAT, read_record_or_none, record_paths, write_record
from .files import owner_gone

#: Bump when the spectra computation changes, so old entries are not reused.
SPECTRA_VERSION = "3"  # 3: raw-weight spectra (SPEC 9) stored beside the canonical ones
#: The ``kind`` of a cache record.
KIND = "spectra"
#: Suffixes of the files in a checkpoint directory whose bytes are sampled into the key.
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".json")
_SAMPLE = 4096
_SAMPLES = 14
#: Files of the spectra folder that specbound wrote: records, temp files, pre-codec entries.
_ENTRY_RE = re.compile(r"^(?P<key>[0-9a-f]{32})\.(json|npz)$")
_TEMP_RE = re.compile(r"^\.([0-9a-f]{32}\.(json|npz)\..+\.tmp|[^/]+\.npz)$")


def cache_dir() -> Path:
    """``$SPECBOUND_CACHE_DIR``, else the platform's user cache dir for specbound."""
    env = config.cache_dir_override()
    if env is not None:
        return env
    import platformdirs

    return Path(platformdirs.user_cache_dir("specbound"))


def spectra_dir() -> Path:
    """The folder holding the entries."""
    return cache_dir() / "spectra"


def file_digest(path: Path) -> str:
    """Stamp (size, mtime_ns, ctime_ns, inode) and a blake2b of sampled bytes of one file."""
    st = path.stat()
    h = hashlib.blake2b(digest_size=16)
    size = st.st_size
    with open(path, "rb") as fh:
        h.update(fh.read(65536))
        for i in range(_SAMPLES):
            fh.seek(size * (i + 1) // (_SAMPLES + 1))
            h.update(fh.read(_SAMPLE))
        fh.seek(max(0, size - 65536))
        h.update(fh.read(65536))
    return f"{path.name}:{size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}:{h.hexdigest()}"


def _directory_digest(directory: Path) -> str:
    files = sorted(p for p in directory.iterdir() if p.is_file() and p.suffix in _WEIGHT_SUFFIXES)
    return "|".join(file_digest(p) for p in files)


def _roles(adapter: Any, num_layers: int) -> str:
    if adapter is None:
        return ""
    try:
        roles = [sorted(adapter.layer_roles(l).roles.items()) for l in range(num_layers)]
    except Exception:  # an adapter without layer_roles: its class and spec still key it
        roles = []
    return f"{type(adapter).__module__}.{type(adapter).__qualname__}|{roles}"


def cache_key(checkpoint: Any, spec: Any, adapter: Any = None) -> str | None:
    """None when the checkpoint has no stable identity (in-memory state dicts)."""
    fp = checkpoint.fingerprint()
    if fp is None:
        return None
    path = getattr(checkpoint, "path", None)
    files = ""
    if path is not None and Path(path).is_dir():
        try:
            files = _directory_digest(Path(path))
        except OSError:
            return None  # cannot identify the files: do not cache
    roles = _roles(adapter, int(spec.num_layers))
    text = f"{SPECTRA_VERSION}|{fp}|{files}|{sorted(asdict(spec).items())}|{roles}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def entry_stem(key: str) -> Path:
    """The record stem of entry ``key`` (``<stem>.json`` + ``<stem>.npz``)."""
    return spectra_dir() / key


def load_arrays(key: str) -> dict[str, np.ndarray] | None:
    """The arrays of entry ``key``; None when absent or invalid (one warning line: damaged,
    edited, another spectra version, or NaN/inf values)."""
    got = read_record_or_none(entry_stem(key), kind=KIND, finite=True, what="cache entry")
    if got is None:
        return None
    meta, arrays = got
    if meta.get("spectra_version") != SPECTRA_VERSION or meta.get("key") != key:
        return None  # written by another version of the spectra code: recompute silently
    return arrays


def store_arrays(key: str, arrays: dict[str, np.ndarray]) -> bool:
    """Write entry ``key`` atomically; False (nothing written) when the cache folder cannot be
    written (read-only, full) or a float array holds NaN/inf (such an entry would be invalid)."""
    for a in arrays.values():
        a = np.asarray(a)
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            return False
    meta = {"key": key, "spectra_version": SPECTRA_VERSION}
    try:
        write_record(entry_stem(key), meta, arrays, kind=KIND)
    except OSError:
        return False
    return True


def _entries(d: Path) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for f in d.iterdir():
        m = _ENTRY_RE.match(f.name)
        if m:
            out.setdefault(m["key"], []).append(f)
    return out


def info() -> dict[str, Any]:
    """Cache path, number of entries and their total size in bytes."""
    d = spectra_dir()
    entries = _entries(d) if d.is_dir() else {}
    files = [f for fs in entries.values() for f in fs]
    size = 0
    for f in files:
        with contextlib.suppress(OSError):
            size += f.stat().st_size
    return {"path": str(cache_dir()), "entries": len(entries), "bytes": size}


def _unwritable(d: Path, exc: OSError) -> CacheError:
    reason = "read-only file system" if exc.errno == errno.EROFS else exc.strerror or str(exc)
    return CacheError(
        f"cannot clear the spectra cache {d}: {reason}; make the folder writable or set "
        "SPECBOUND_CACHE_DIR to another folder"
    )


#: The sub-folders of the cache that hold specbound records (codec format), cleared together.
RECORD_DIRS = ("spectra", "data_measures")


def _ours(json_path: Path) -> bool:
    """Whether ``json_path`` is a specbound record (its JSON says ``format`` specbound-record):
    a file that merely has a hex name is not."""
    try:
        with open(json_path, "rb") as fh:
            head = fh.read(1 << 20)
        body = json.loads(head)
    except (OSError, ValueError):
        return False
    return isinstance(body, dict) and body.get("format") == FORMAT


def clear_records() -> dict[str, int]:
    """Delete every record specbound wrote in the cache (spectra and data measures), and its
    stray temp files: a record is recognised by its JSON (``format`` specbound-record), and its
    ``.npz`` goes with it; every other file, hex-named or not, is left alone. Returns
    ``{"entries": n, "bytes": freed}``. A folder that cannot be written raises CacheError."""
    removed = freed = 0
    for sub in RECORD_DIRS:
        d = cache_dir() / sub
        if not d.is_dir():
            continue
        try:
            entries = _entries(d)
            # earlier versions' temps, and ours whose writer is gone (a live writer's is kept)
            temps = [
                f
                for f in d.iterdir()
                if (_TEMP_RE.match(f.name) or owner_gone(f.name)) and f.is_file()
            ]
            for key in entries:
                json_path, npz_path = record_paths(d / key)
                if not _ours(json_path):
                    continue
                for p in (json_path, npz_path):  # the JSON first: a half-removed entry is absent
                    if p.is_file():
                        freed += p.stat().st_size
                        p.unlink()
                removed += 1
            for f in temps:
                freed += f.stat().st_size
                f.unlink(missing_ok=True)
        except OSError as exc:
            raise _unwritable(d, exc) from None
    return {"entries": removed, "bytes": freed}


def clear() -> int:
    """:func:`clear_records`, returning the number of records removed."""
    return clear_records()["entries"]
