"""The one on-disk format for results specbound stores and reads back (spectra cache, engine
resume records): JSON metadata plus an npz of plain arrays, both checksummed. No pickles.

A record with stem ``S`` is two files:

- ``S.npz``: the arrays, one ``.npy`` member each, written deterministically (members sorted,
  stored uncompressed, fixed timestamps: the same arrays give the same bytes), read with
  ``allow_pickle=False``; only bool, integer, float and unicode arrays are written or read.
- ``S.json``: ``{"format": "specbound-record", "version": 1, "kind": ..., "meta": {...},
  "arrays": {name: {"dtype": ..., "shape": [...]}}, "npz_sha256": ..., "body_sha256": ...}``
  where ``npz_sha256`` is the sha256 of the npz file's bytes and ``body_sha256`` the sha256 of
  the canonical JSON (sorted keys, no spaces) of every other field. ``meta`` is strict JSON
  (no NaN/Infinity).

Writes are atomic per file (``files.atomic_file`` with fsync), the npz first:
a reader sees a complete old or new file, and a pair from two writers fails its checksum.
:func:`read_record` returns None when ``S.json`` is absent and raises :class:`RecordError`
(naming the file and the reason) when the record is incomplete, unparsable, of another format
or version or kind, fails a checksum, lists other arrays than the npz holds, or (``finite=True``)
holds NaN/inf. Callers that can recompute treat a RecordError as absent, with one warning line
(:func:`read_record_or_none`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import SpecboundError
from .files import MAX_JSON_BYTES, atomic_file, canonical_json, parse_json

FORMAT = "specbound-record"
#: Bump when the layout of the record files changes (old records then read as invalid).
VERSION = 1
#: Array kinds a record may hold: bool, signed/unsigned integers, floats, unicode strings.
ALLOWED_KINDS = frozenset("biufU")

log = logging.getLogger("specbound")

__all__ = [
    "FORMAT",
    "VERSION",
    "RecordError",
    "read_record",
    "read_record_or_none",
    "record_paths",
    "remove_record",
    "write_record",
]


class RecordError(SpecboundError):
    """A stored record cannot be trusted; ``path`` is its JSON file, ``reason`` why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path} is not a valid specbound record: {reason}")
        self.path = path
        self.reason = reason


def record_paths(stem: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(``stem.json``, ``stem.npz``); ``stem`` may contain dots (nothing is replaced)."""
    s = Path(stem)
    return s.with_name(s.name + ".json"), s.with_name(s.name + ".npz")


def sha256_file(fh: Any) -> str:
    """SHA-256 (hex) of an open binary file, read from its current position in 1 MiB chunks."""
    h = hashlib.sha256()
    for chunk in iter(lambda: fh.read(1 << 20), b""):
        h.update(chunk)
    return h.hexdigest()


def _check_array(name: str, a: np.ndarray) -> np.ndarray:
    if not isinstance(name, str) or not name or "/" in name or name.endswith(".npy"):
        raise ValueError(f"record array name {name!r} is not a plain name")
    a = np.ascontiguousarray(a)
    if a.dtype.kind not in ALLOWED_KINDS:
        raise ValueError(f"record array '{name}' has dtype {a.dtype}, which a record cannot hold")
    return a


def write_record(
    stem: str | os.PathLike[str],
    meta: Mapping[str, Any],
    arrays: Mapping[str, np.ndarray],
    *,
    kind: str = "",
) -> None:
    """Write the record ``stem`` (module doc) atomically, creating its folder.

    ``meta`` must be strict JSON (ValueError on NaN/inf or non-JSON values); arrays must be of
    ``ALLOWED_KINDS`` (ValueError otherwise: object arrays would need pickles). OSErrors
    propagate (the caller decides whether a failed write matters).
    """
    json_path, npz_path = record_paths(stem)
    checked = {k: _check_array(k, np.asarray(v)) for k, v in arrays.items()}
    listing = {k: {"dtype": a.dtype.str, "shape": list(a.shape)} for k, a in checked.items()}
    body: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "kind": kind,
        "meta": dict(meta),
        "arrays": listing,
    }
    canonical_json(body)  # strict JSON before anything is written
    npz_path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(npz_path, "w+b", sync=True) as fh:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name in sorted(checked):
                info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
                info.external_attr = 0o644 << 16
                with zf.open(info, "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, checked[name], allow_pickle=False)
        fh.seek(0)
        body["npz_sha256"] = sha256_file(fh)
    body["body_sha256"] = hashlib.sha256(canonical_json(body)).hexdigest()
    with atomic_file(json_path, "w+b", sync=True) as fh:
        fh.write(canonical_json(body) + b"\n")


def _open_regular(path: Path, json_path: Path) -> Any:
    """Open ``path`` for reading if it is a regular file (not a link, FIFO or device)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RecordError(json_path, f"cannot read {path.name} ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise RecordError(json_path, f"{path.name} is not a regular file")
    try:
        return open(path, "rb")
    except OSError as exc:
        raise RecordError(json_path, f"cannot read {path.name} ({exc.strerror or exc})") from None


def _read_body(json_path: Path) -> dict[str, Any] | None:
    fh = _open_regular(json_path, json_path)
    if fh is None:
        return None
    with fh:
        try:
            raw = fh.read(MAX_JSON_BYTES + 1)
        except OSError as exc:
            raise RecordError(json_path, f"cannot read it ({exc.strerror or exc})") from None
    if len(raw) > MAX_JSON_BYTES:
        raise RecordError(json_path, "the JSON file is too large")
    try:
        body = parse_json(raw, json_path.name)
    except SpecboundError as exc:
        raise RecordError(json_path, str(exc).split(";")[0]) from None
    if not isinstance(body, dict):
        raise RecordError(json_path, "the JSON file does not hold an object")
    return body


def _verify_body(body: dict[str, Any], json_path: Path, kind: str | None) -> None:
    if body.get("format") != FORMAT:
        raise RecordError(json_path, f"format {body.get('format')!r}, not {FORMAT!r}")
    if body.get("version") != VERSION:
        raise RecordError(
            json_path, f"format version {body.get('version')!r}; this specbound reads {VERSION}"
        )
    claimed = body.pop("body_sha256", None)
    try:
        actual = hashlib.sha256(canonical_json(body)).hexdigest()
    except (ValueError, TypeError):
        raise RecordError(json_path, "the metadata is not strict JSON") from None
    if claimed != actual:
        raise RecordError(json_path, "the metadata checksum does not match (edited or damaged)")
    if kind is not None and body.get("kind") != kind:
        raise RecordError(json_path, f"kind {body.get('kind')!r}, not {kind!r}")
    if not isinstance(body.get("meta"), dict) or not isinstance(body.get("arrays"), dict):
        raise RecordError(json_path, "the metadata lacks 'meta' or 'arrays'")
    if not isinstance(body.get("npz_sha256"), str):
        raise RecordError(json_path, "the metadata lacks 'npz_sha256'")


def _load_arrays(
    fh: Any, body: dict[str, Any], json_path: Path, finite: bool
) -> dict[str, np.ndarray]:
    if sha256_file(fh) != body["npz_sha256"]:
        raise RecordError(json_path, "the npz checksum does not match (truncated or replaced)")
    fh.seek(0)
    listing = body["arrays"]
    try:
        with np.load(fh, allow_pickle=False) as z:
            if sorted(z.files) != sorted(listing):
                raise RecordError(json_path, "the npz holds other arrays than the metadata lists")
            arrays = {k: z[k] for k in z.files}
    except RecordError:
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise RecordError(json_path, f"the npz cannot be read without pickles ({first})") from None
    for name, a in arrays.items():
        want = listing[name]
        if (
            not isinstance(want, dict)
            or a.dtype.kind not in ALLOWED_KINDS
            or a.dtype.str != want.get("dtype")
            or list(a.shape) != want.get("shape")
        ):
            raise RecordError(json_path, f"array '{name}' is not what the metadata lists")
        if finite and a.dtype.kind == "f" and not np.isfinite(a).all():
            raise RecordError(json_path, f"array '{name}' holds NaN or infinite values")
    return arrays


def read_record(
    stem: str | os.PathLike[str], *, kind: str | None = None, finite: bool = False
) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """(meta, arrays) of the record ``stem``; None when ``stem.json`` does not exist.

    Raises RecordError when the record is not exactly what :func:`write_record` wrote (module
    doc); ``kind`` (when given) must match the writer's; ``finite`` refuses NaN/inf in float
    arrays.
    """
    json_path, npz_path = record_paths(stem)
    body = _read_body(json_path)
    if body is None:
        return None
    _verify_body(body, json_path, kind)
    fh = _open_regular(npz_path, json_path)
    if fh is None:
        raise RecordError(json_path, f"{npz_path.name} is missing (incomplete record)")
    with fh:
        try:
            arrays = _load_arrays(fh, body, json_path, finite)
        except OSError as exc:
            raise RecordError(json_path, f"cannot read the npz ({exc.strerror or exc})") from None
    return body["meta"], arrays


def read_record_or_none(
    stem: str | os.PathLike[str],
    *,
    kind: str | None = None,
    finite: bool = False,
    what: str = "stored record",
) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """:func:`read_record`, with an invalid record treated as absent: one warning line on the
    ``specbound`` logger (``warning: <what> ... is invalid (<reason>); recomputing it``)."""
    try:
        return read_record(stem, kind=kind, finite=finite)
    except RecordError as exc:
        log.warning("warning: %s %s is invalid (%s); recomputing it", what, exc.path, exc.reason)
        return None


def remove_record(stem: str | os.PathLike[str]) -> bool:
    """Delete both files of the record ``stem`` (the JSON first); True if either existed.
    OSErrors other than a missing file propagate."""
    found = False
    for p in record_paths(stem):
        try:
            p.unlink()
            found = True
        except FileNotFoundError:
            pass
    return found
