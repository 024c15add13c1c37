"""Resume records of a model sweep: what a finished model leaves in the state folder.

The CLI keeps them in ``.OUT.specbound-sweep/`` beside ``--out OUT`` (``state_dir_for``).
That folder is writable by other users and processes, so nothing in it is trusted:

- a record is one ``specbound.io.codec`` record (the one format for stored results: JSON +
  npz, a format version and checksums of the content, never a pickle): ``<key>.npz`` holds
  the model's spectra and raw-weight spectra, ``<key>.json`` the model, its source and summary
  (written last: it marks the record done);
- reading a record verifies it (format, version, kind, key, checksums, finite values, shapes
  against the checkpoint); a record that fails is treated as absent: the model is recomputed,
  with one warning line. Any ``*.pkl`` there is never opened;
- a resumed model is rebuilt by ``analyze`` in this process from the stored spectra and the
  checkpoint itself (``spectra_fn``), so its sizes, parameter count, bounds and measures are
  computed, not read: a forged record cannot put a number into models.csv that the
  checkpoint's own spectra would not give;
- the folder is an ``io.growing.GrowingDir`` of kind ``sweep-records``: the records this process
  wrote are listed in its manifest (``io.outdir``'s one schema, ``.specbound-manifest.json``)
  before they are written; ``clear`` deletes exactly those (and the manifest), then the folder
  when it is empty. A user's file there stays. A folder of the older layout (its list in
  ``.specbound-records.json``) is read and cleared the same way.

``key`` (``sweep_key``) is ``cache.cache_key`` of the checkpoint (config, weight-file stamps and
sampled bytes, spec, adapter) plus the name and the analysis options, so a re-run skips exactly
the models already done and recomputes any whose files changed. Hub ids not in the local cache
are keyed by their name (pin ``@revision``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..adapters.registry import adapter_for
from ..errors import SpecboundError
from ..io.cache import cache_key
from ..io.checkpoint import load_checkpoint
from ..io.codec import RecordError, read_record, record_paths, write_record
from ..io.files import json_safe
from ..io.growing import GrowingDir
from ..io.outdir import MANIFEST as OUTDIR_MANIFEST
from ..linalg.cache import from_arrays, spectra_arrays
from . import analyze
from .sizes import local_dir

if TYPE_CHECKING:
    from ..adapters.base import Adapter
    from . import Analysis

#: Suffix of the sweep state directory the CLI keeps beside ``--out``.
STATE_SUFFIX = ".specbound-sweep"
#: The manifest listing the records this process wrote (what ``clear`` may delete).
MANIFEST = OUTDIR_MANIFEST
#: The folder's kind in that manifest.
FOLDER_KIND = "sweep-records"
#: The list of records of the older layout (read and cleared, never written).
OLD_MANIFEST = ".specbound-records.json"
#: ``kind`` of a record in ``io.codec``.
RECORD_KIND = "sweep-record"
_KEY_VERSION = "2"
_KEY = re.compile(r"^[0-9a-f]{32}$")


def state_dir_for(out: str | os.PathLike[str]) -> Path:
    """The sweep state directory for ``--out OUT``: ``.OUT.specbound-sweep`` beside it
    (outside OUT, which is written as a whole at the end)."""
    path = Path(os.path.abspath(out))
    return path.parent / f".{path.name}{STATE_SUFFIX}"


def _folder(directory: Path) -> GrowingDir:
    """The state folder as the one growing-folder mechanism sees it (its entries: records)."""
    return GrowingDir(directory, kind=FOLDER_KIND, files=(), dirs=(), lock=".specbound-sweep.lock")


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


def _warn(message: str) -> None:
    logging.getLogger("specbound").warning("warning: %s", " ".join(message.split()))


class _Mismatch(Exception):
    """A stored record that does not fit the checkpoint it claims to be (private)."""


class RecordStore:
    """The records of one state folder (module doc). ``warn(message)`` reports a record that
    is treated as absent (default: one ``warning:`` line on the ``specbound`` logger)."""

    def __init__(self, directory: Path, warn: Callable[[str], None] | None = None) -> None:
        self.directory = Path(directory)
        self.folder = _folder(self.directory)
        self.warn = warn or _warn

    # --- writing -------------------------------------------------------------------------

    def store(self, key: str, source: Any, analysis: Analysis) -> None:
        """Write the record ``key`` (``io.codec``: npz, then the JSON that marks it done),
        listed in the manifest first."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._remember(key)  # listed before written: a crash in between leaves nothing unlisted
        meta = {
            "key": key,
            "model": analysis.model,
            "source": os.fspath(source) if isinstance(source, (str, os.PathLike)) else None,
            "summary": json_safe(analysis.summary()),
        }
        arrays = spectra_arrays(analysis.spectra, analysis.weight_spectra)
        write_record(self.directory / key, meta, arrays, kind=RECORD_KIND)

    def _remember(self, key: str) -> None:
        self.folder.add([p.name for p in record_paths(self.directory / key)])

    def written(self) -> list[str]:
        """Keys of the records listed (well-formed keys only; a damaged list lists none)."""
        keys = []
        for name in [*self.folder.entries(), *(f"{k}.json" for k in _old_keys(self.directory))]:
            key = name.split(".", 1)[0]
            if _KEY.match(key) and key not in keys:
                keys.append(key)
        return keys

    def clear(self) -> None:
        """Delete the records this store lists (and the list), then the folder when empty."""
        names = [p.name for k in self.written() for p in record_paths(self.directory / k)]
        names.append(OLD_MANIFEST)  # the older layout's list, when there is one
        self.folder.remove(names)

    # --- reading -------------------------------------------------------------------------

    def load(self, key: str, job: Any) -> Analysis | None:
        """The finished ``Analysis`` of ``job`` (a ``sweep.ModelJob``) stored under ``key``,
        rebuilt from its stored spectra; None when absent, or (with one warning) when the
        record does not parse, verify or fit the checkpoint."""
        stem = self.directory / key
        try:
            got = read_record(stem, kind=RECORD_KIND, finite=True)
            if got is None:
                return None
            meta, arrays = got
            if meta.get("key") != key:
                raise _Mismatch("it is stored under another key")
            return _rebuild(job, arrays)
        except (SpecboundError, _Mismatch) as exc:  # RecordError, or the rebuild failed
            why = exc.reason if isinstance(exc, RecordError) else str(exc)
            self.warn(f"resume record {stem}.json is invalid ({why}); recomputing {job.label}")
            return None


def _old_keys(directory: Path) -> list[str]:
    """Keys the older layout's list names (``OLD_MANIFEST``; none when absent or damaged)."""
    try:
        data = json.loads((directory / OLD_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    keys = data.get("records") if isinstance(data, dict) else None
    if not isinstance(keys, list):
        return []
    return [k for k in keys if isinstance(k, str) and _KEY.match(k)]


def clear_records(state_dir: str | os.PathLike[str]) -> None:
    """Delete the records specbound wrote in ``state_dir`` (its manifest), then the folder if
    it is empty: what a study command does once every model is done and written."""
    RecordStore(Path(state_dir)).clear()


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
