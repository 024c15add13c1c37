"""On-disk cache of spectra, keyed by the checkpoint's identity.

Key: sha256 of (the spectra algorithm version, config.json, every weight file's
path/size/mtime_ns/ctime_ns/inode plus a digest of sampled bytes of it (header, head, tail and
14 blocks spread through the file), the model spec, the adapter and its tensor roles per block).
Any write to a weight file changes its ctime (which no user call can set back), so a changed
file is never served stale spectra; the byte samples also catch rewrites on file systems with
coarse timestamps. Bound options (``--l-phi``, ``--grid-m``) are not part of the key: the bounds
are always recomputed from the cached spectra. Location: ``$SPECBOUND_CACHE_DIR`` or the user
cache dir (``~/.cache/specbound`` on Linux). Spectra are the same from every backend (numpy,
torch; within 1e-10), so the backend is not part of the key either.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .spectra import Spectra
from .weights import WeightSpectra

#: Prefix of the raw-weight arrays inside a cache entry.
_W = "weights__"

#: Bump when the spectra computation changes, so old entries are not reused.
SPECTRA_VERSION = "3"  # 3: raw-weight spectra (SPEC 9) stored beside the canonical ones
#: Suffixes of the files in a checkpoint directory whose bytes are sampled into the key.
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".json")
_SAMPLE = 4096
_SAMPLES = 14


def cache_dir() -> Path:
    """``$SPECBOUND_CACHE_DIR``, else the platform's user cache dir for specbound."""
    env = os.environ.get("SPECBOUND_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("specbound"))


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


def _path(key: str) -> Path:
    return cache_dir() / "spectra" / f"{key}.npz"


def _consistent(s: Spectra, spec: Any) -> bool:
    if spec is None:
        return True
    L, H = int(spec.num_layers), int(spec.num_heads)
    return (
        len(s) == L * (2 * H + 2)
        and int(s.sv_offsets[-1]) == s.sv_values.size
        and (len(s) == 0 or (int(s.layer.min()) >= 0 and int(s.layer.max()) < L))
    )


def load(key: str, spec: Any = None) -> tuple[Spectra, WeightSpectra | None] | None:
    """The cached (spectra, raw-weight spectra) for ``key``; None when absent, unreadable or not
    shaped like ``spec``. The raw-weight part is None when it was stored without them."""
    import numpy as np

    path = _path(key)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        s = Spectra(**{f: arrays[f] for f in Spectra._FIELDS})
        has_w = any(k.startswith(_W) for k in arrays)
        w = WeightSpectra.from_arrays(arrays, prefix=_W) if has_w else None
    except Exception:  # truncated, corrupt, old or foreign file: recompute and overwrite
        return None
    ok = _consistent(s, spec) and (
        spec is None
        or w is None
        or (len(w) == 6 * int(spec.num_layers) and int(w.sv_offsets[-1]) == w.sv_values.size)
    )
    return (s, w) if ok else None


def store(key: str, spectra: Spectra, weights: WeightSpectra | None) -> None:
    """Write atomically (``io.atomic_file``); a read-only or full cache dir is ignored.
    ``weights`` None: the entry holds the canonical spectra only."""
    import numpy as np

    from .io import atomic_file

    arrays = {f: getattr(spectra, f) for f in Spectra._FIELDS}
    if weights is not None:
        arrays.update(weights.arrays(prefix=_W))
    try:
        with atomic_file(_path(key)) as fh:
            np.savez(fh, **arrays)
    except OSError:
        pass


def info() -> dict[str, Any]:
    """Cache path, number of entries and their total size in bytes."""
    d = cache_dir() / "spectra"
    files = list(d.glob("*.npz")) if d.is_dir() else []
    return {
        "path": str(cache_dir()),
        "entries": len(files),
        "bytes": sum(f.stat().st_size for f in files),
    }


def clear() -> int:
    """Delete every cached entry (and stray temp files); returns the number of entries."""
    d = cache_dir() / "spectra"
    n = 0
    if d.is_dir():
        for f in d.glob("*.npz"):
            f.unlink(missing_ok=True)
            n += 1
        for f in d.glob(".*.npz"):
            f.unlink(missing_ok=True)
    return n
