"""The folder of a model sweep's resume records: ``.OUT.specbound-sweep/`` beside ``out``.

A study on a distributed engine keeps one record per finished model there (``state_dir_for``),
reads them back on a re-run and deletes those it wrote once every model is written
(``clear_records``). What a record holds of an analysis, and how a model is rebuilt from it,
is :mod:`specbound.analysis.records`'; this module only owns the folder. The folder is writable
by other users and processes, so nothing in it is trusted:

- a record is one ``specbound.io.codec`` record (the one format for stored results: JSON +
  npz, a format version and checksums of the content, never a pickle): ``<key>.npz`` holds
  the arrays, ``<key>.json`` the metadata (written last: it marks the record done);
- reading a record verifies it (format, version, kind, key, checksums, finite values); a record
  that fails is treated as absent by the caller, with one warning line
  (:meth:`RecordStore.distrust`). Any ``*.pkl`` there is never opened;
- the folder is an ``io.growing.GrowingDir`` of kind ``sweep-records``: the records this process
  wrote are listed in its manifest (``io.outdir``'s one schema, ``.specbound-manifest.json``)
  before they are written; ``clear`` deletes exactly those (and the manifest), then the folder
  when it is empty. A user's file there stays. A folder of the older layout (its list in
  ``.specbound-records.json``) is read and cleared the same way.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .codec import RecordError, read_record, record_paths, write_record
from .growing import GrowingDir
from .outdir import MANIFEST as OUTDIR_MANIFEST

#: Suffix of the sweep state directory kept beside ``out``.
STATE_SUFFIX = ".specbound-sweep"
#: The manifest listing the records this process wrote (what ``clear`` may delete).
MANIFEST = OUTDIR_MANIFEST
#: The folder's kind in that manifest.
FOLDER_KIND = "sweep-records"
#: The list of records of the older layout (read and cleared, never written).
OLD_MANIFEST = ".specbound-records.json"
#: ``kind`` of a record in ``io.codec``.
RECORD_KIND = "sweep-record"
#: A record's key: 32 hex digits.
KEY = re.compile(r"^[0-9a-f]{32}$")


def state_dir_for(out: str | os.PathLike[str]) -> Path:
    """The sweep state directory for the output folder ``out``: ``.OUT.specbound-sweep``
    beside it (outside OUT, which is written as a whole at the end)."""
    path = Path(os.path.abspath(out))
    return path.parent / f".{path.name}{STATE_SUFFIX}"


def _folder(directory: Path) -> GrowingDir:
    """The state folder as the one growing-folder mechanism sees it (its entries: records)."""
    return GrowingDir(directory, kind=FOLDER_KIND, files=(), dirs=(), lock=".specbound-sweep.lock")


def _warn(message: str) -> None:
    logging.getLogger("specbound").warning("warning: %s", " ".join(message.split()))


class RecordStore:
    """The records of one state folder (module doc). ``warn(message)`` reports a record that
    is treated as absent (default: one ``warning:`` line on the ``specbound`` logger)."""

    def __init__(
        self, directory: str | os.PathLike[str], warn: Callable[[str], None] | None = None
    ):
        self.directory = Path(directory)
        self.folder = _folder(self.directory)
        self.warn = warn or _warn

    # --- writing -------------------------------------------------------------------------

    def store(self, key: str, meta: Mapping[str, Any], arrays: Mapping[str, Any]) -> None:
        """Write the record ``key`` (``io.codec``: npz, then the JSON that marks it done; its
        ``key`` added to ``meta``), listed in the manifest first."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._remember(key)  # listed before written: a crash in between leaves nothing unlisted
        write_record(self.directory / key, {"key": key, **meta}, dict(arrays), kind=RECORD_KIND)

    def _remember(self, key: str) -> None:
        self.folder.add([p.name for p in record_paths(self.directory / key)])

    def written(self) -> list[str]:
        """Keys of the records listed (well-formed keys only; a damaged list lists none)."""
        keys = []
        for name in [*self.folder.entries(), *(f"{k}.json" for k in _old_keys(self.directory))]:
            key = name.split(".", 1)[0]
            if KEY.match(key) and key not in keys:
                keys.append(key)
        return keys

    def clear(self) -> None:
        """Delete the records this store lists (and the list), then the folder when empty."""
        names = [p.name for k in self.written() for p in record_paths(self.directory / k)]
        names.append(OLD_MANIFEST)  # the older layout's list, when there is one
        self.folder.remove(names)

    # --- reading -------------------------------------------------------------------------

    def read(self, key: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The record ``key`` verified (finite values, stored under ``key``): (metadata,
        arrays); None when absent. Raises ``io.codec.RecordError`` when it does not verify."""
        stem = self.directory / key
        got = read_record(stem, kind=RECORD_KIND, finite=True)
        if got is None:
            return None
        meta, arrays = got
        if meta.get("key") != key:
            raise RecordError(record_paths(stem)[0], "it is stored under another key")
        return meta, arrays

    def distrust(self, key: str, why: str, label: str) -> None:
        """One warning: the record ``key`` is invalid (``why``), the model ``label`` is
        recomputed."""
        stem = self.directory / key
        self.warn(f"resume record {stem}.json is invalid ({why}); recomputing {label}")


def _old_keys(directory: Path) -> list[str]:
    """Keys the older layout's list names (``OLD_MANIFEST``; none when absent or damaged)."""
    try:
        data = json.loads((directory / OLD_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    keys = data.get("records") if isinstance(data, dict) else None
    if not isinstance(keys, list):
        return []
    return [k for k in keys if isinstance(k, str) and KEY.match(k)]


def clear_records(state_dir: str | os.PathLike[str]) -> None:
    """Delete the records specbound wrote in ``state_dir`` (its manifest), then the folder if
    it is empty: what a study does once every model is done and written."""
    RecordStore(Path(state_dir)).clear()


__all__ = [
    "FOLDER_KIND",
    "MANIFEST",
    "OLD_MANIFEST",
    "RECORD_KIND",
    "STATE_SUFFIX",
    "RecordStore",
    "clear_records",
    "state_dir_for",
]
