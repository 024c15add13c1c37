"""On-disk cache of spectra, keyed by the checkpoint's identity.

Key: sha256 of (config, every weight file's path/size/mtime_ns/ctime_ns/inode, the model
spec, the spectra algorithm version). Any write to a weight file changes its ctime, so a changed
file is never served stale spectra. Location: ``$SPECBOUND_CACHE_DIR`` or the user cache dir
(``~/.cache/specbound`` on Linux). Bounds are always recomputed from the cached spectra.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .spectra import Spectra

#: Bump when the spectra computation changes, so old entries are not reused.
SPECTRA_VERSION = "1"


def cache_dir() -> Path:
    env = os.environ.get("SPECBOUND_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("specbound"))


def cache_key(checkpoint: Any, spec: Any) -> str | None:
    """None when the checkpoint has no stable identity (in-memory state dicts)."""
    fp = checkpoint.fingerprint()
    if fp is None:
        return None
    text = f"{SPECTRA_VERSION}|{fp}|{sorted(asdict(spec).items())}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _path(key: str) -> Path:
    return cache_dir() / "spectra" / f"{key}.npz"


def load(key: str) -> Spectra | None:
    path = _path(key)
    if not path.is_file():
        return None
    try:
        return Spectra.load(path)
    except (OSError, ValueError, KeyError):
        return None  # unreadable entry: recompute and overwrite


def store(key: str, spectra: Spectra) -> None:
    path = _path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".", suffix=".npz", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            spectra.save(fh)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only or full cache dir must not fail the analysis


def info() -> dict[str, Any]:
    d = cache_dir() / "spectra"
    files = list(d.glob("*.npz")) if d.is_dir() else []
    return {
        "path": str(cache_dir()),
        "entries": len(files),
        "bytes": sum(f.stat().st_size for f in files),
    }


def clear() -> int:
    d = cache_dir() / "spectra"
    n = 0
    if d.is_dir():
        for f in d.glob("*.npz"):
            f.unlink(missing_ok=True)
            n += 1
    return n
