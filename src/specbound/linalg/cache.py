"""The spectra cache in terms of ``Spectra``: :mod:`specbound.io.cache` (keys, folder, records,
info, clear) plus the conversion of ``Spectra`` / ``WeightSpectra`` to a record's arrays.

This module lives in linalg (it imports the spectra types), so that ``specbound.io`` imports
nothing above it. Entry arrays: the ``Spectra`` fields under their names, the raw-weight
``WeightSpectra`` fields prefixed ``weights__`` (absent when stored without them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..io.cache import (
    SPECTRA_VERSION,
    cache_dir,
    cache_key,
    clear,
    entry_stem,
    file_digest,
    info,
    load_arrays,
    spectra_dir,
    store_arrays,
)
from .spectra import Spectra
from .weights import WeightSpectra

__all__ = [
    "SPECTRA_VERSION",
    "cache_dir",
    "cache_key",
    "clear",
    "entry_stem",
    "file_digest",
    "info",
    "load",
    "spectra_dir",
    "store",
]

#: Prefix of the raw-weight arrays inside a cache entry.
_W = "weights__"


def spectra_arrays(spectra: Spectra, weights: WeightSpectra | None) -> dict[str, np.ndarray]:
    """The arrays of an entry holding ``spectra`` (and ``weights`` when given)."""
    arrays = {f: np.asarray(getattr(spectra, f)) for f in Spectra._FIELDS}
    if weights is not None:
        arrays.update(weights.arrays(prefix=_W))
    return arrays


def _consistent(s: Spectra, spec: Any) -> bool:
    if spec is None:
        return True
    L, H = int(spec.num_layers), int(spec.num_heads)
    return (
        len(s) == L * (2 * H + 2)
        and s.sv_offsets.size == len(s) + 1
        and int(s.sv_offsets[-1]) == s.sv_values.size
        and (len(s) == 0 or (int(s.layer.min()) >= 0 and int(s.layer.max()) < L))
    )


def from_arrays(
    arrays: dict[str, np.ndarray], spec: Any = None
) -> tuple[Spectra, WeightSpectra | None] | None:
    """(spectra, raw-weight spectra or None) from an entry's arrays; None when they are not
    shaped like ``spec`` (another model's spectra) or incomplete."""
    try:
        s = Spectra(**{f: arrays[f] for f in Spectra._FIELDS})
        has_w = any(k.startswith(_W) for k in arrays)
        w = WeightSpectra.from_arrays(arrays, prefix=_W) if has_w else None
    except (KeyError, TypeError, ValueError):
        return None
    ok = _consistent(s, spec) and (
        spec is None
        or w is None
        or (len(w) == 6 * int(spec.num_layers) and int(w.sv_offsets[-1]) == w.sv_values.size)
    )
    return (s, w) if ok else None


def load(
    key: str, spec: Any = None, *, weights: bool = False
) -> tuple[Spectra, WeightSpectra | None] | None:
    """The cached (spectra, raw-weight spectra) for ``key``; None when absent, invalid (one
    warning line), or not shaped like ``spec``. The raw-weight part is None when it was stored
    without them; with ``weights`` such an entry is None too (a miss: recompute both)."""
    arrays = load_arrays(key)
    cached = None if arrays is None else from_arrays(arrays, spec)
    if cached is not None and weights and cached[1] is None:
        return None
    return cached


def store(key: str, spectra: Spectra, weights: WeightSpectra | None) -> None:
    """Write the entry atomically; a read-only or full cache dir is ignored. ``weights`` None:
    the entry holds the canonical spectra only."""
    store_arrays(key, spectra_arrays(spectra, weights))
