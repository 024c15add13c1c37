"""What a model sweep's resume record holds of an analysis, and how a model is rebuilt from it.

The folder of records (``.OUT.specbound-sweep/`` beside ``out``, its manifest, reading and
verifying a record, clearing what specbound wrote) is :mod:`specbound.io.records`; this module
says what goes into a record and what comes out of one:

- ``store(records, key, source, analysis)``: the model, its source and summary as metadata, its
  spectra and raw-weight spectra as arrays;
- ``load(records, key, job)``: a resumed model is rebuilt by ``analyze`` in this process from
  the stored spectra and the checkpoint itself (``spectra_fn``), so its sizes, parameter count,
  bounds and measures are computed, not read: a forged record cannot put a number into
  models.csv that the checkpoint's own spectra would not give. A record that does not verify,
  or does not fit the checkpoint, is treated as absent (one warning line) and the model is
  recomputed.

``key`` (``sweep_key``) is ``cache.cache_key`` of the checkpoint (config, weight-file stamps and
sampled bytes, spec, adapter) plus the name and the analysis options, so a re-run skips exactly
the models already done and recomputes any whose files changed. Hub ids not in the local cache
are keyed by their name (pin ``@revision``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..adapters.registry import adapter_for
from ..errors import SpecboundError
from ..io.cache import cache_key
from ..io.checkpoint import load_checkpoint
from ..io.codec import RecordError
from ..io.files import json_safe
from ..io.records import RecordStore
from ..linalg.cache import from_arrays, spectra_arrays
from . import analyze
from .sizes import local_dir

if TYPE_CHECKING:
    from ..adapters.base import Adapter
    from . import Analysis

_KEY_VERSION = "2"


def _options_text(analyze_kwargs: Mapping[str, Any]) -> str:
    kw = {k: v for k, v in analyze_kwargs.items() if k not in ("progress", "spectra_fn")}
    return json.dumps(kw, sort_keys=True, default=str)


def sweep_key(model: Any, name: str | None, analyze_kwargs: Mapping[str, Any]) -> str:
    """The key of one model's record (module doc; 32 hex digits)."""
    ident = None
    d = local_dir(model)
    if d is not None:
        try:
            ckpt = load_checkpoint(str(d), analyze_kwargs.get("config"), name=name)
            prefix = analyze_kwargs.get("prefix")
            extra = {"prefix": prefix} if prefix is not None else {}
            adapter = adapter_for(ckpt, analyze_kwargs.get("mapping"), **extra)
            ident = cache_key(ckpt, adapter.spec(), adapter)
        except Exception:  # the job will report the problem; key by name meanwhile
            ident = None
    if ident is None:
        ident = f"name:{os.fspath(model)}"

    text = f"{_KEY_VERSION}|{__version__}|{ident}|{name}|{_options_text(analyze_kwargs)}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class _Mismatch(Exception):
    """A stored record that does not fit the checkpoint it claims to be (private)."""


def store(records: RecordStore, key: str, source: Any, analysis: Analysis) -> None:
    """Write ``analysis`` of ``source`` as the record ``key`` (module doc)."""
    meta = {
        "model": analysis.model,
        "source": os.fspath(source) if isinstance(source, (str, os.PathLike)) else None,
        "summary": json_safe(analysis.summary()),
    }
    records.store(key, meta, spectra_arrays(analysis.spectra, analysis.weight_spectra))


def load(records: RecordStore, key: str, job: Any) -> Analysis | None:
    """The finished ``Analysis`` of ``job`` (a ``sweep.ModelJob``) stored under ``key``,
    rebuilt from its stored spectra; None when absent, or (with one warning) when the record
    does not verify or fit the checkpoint."""
    try:
        got = records.read(key)
        return None if got is None else _rebuild(job, got[1])
    except (SpecboundError, _Mismatch) as exc:  # RecordError, or the rebuild failed
        records.distrust(key, exc.reason if isinstance(exc, RecordError) else str(exc), job.label)
        return None


def _rebuild(job: Any, arrays: dict[str, Any]) -> Analysis:
    """``analyze`` of the job's checkpoint with the stored spectra instead of an SVD of its
    blocks (so everything but the spectra is computed from the checkpoint itself)."""

    def stored(ckpt: Any, adapter: Adapter, device: Any, progress: Any, want_weights: bool) -> Any:
        got = from_arrays(arrays, adapter.spec())
        if got is None:
            raise _Mismatch("its spectra do not fit the checkpoint")
        spectra, weights = got
        if want_weights and weights is None:
            raise _Mismatch("it lacks the raw-weight spectra")
        return spectra, weights if want_weights else None

    kw = {**job.kwargs, "cache": False, "spectra_fn": stored}
    return analyze(job.source, name=job.name, **kw)
