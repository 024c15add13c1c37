"""A folder that grows over runs (a zoo: models added one by one, its tables rewritten).

The one-block writer is :func:`specbound.io.outdir.output_dir`; this is its counterpart for a
folder written in place over several runs, on the same manifest (``outdir.write_manifest``, one
schema, with this folder's ``kind`` and a ``sha256`` per file it rewrites)::

    g = GrowingDir(out, kind="zoo", files=("zoo.json", "zoo.csv"), dirs=("models",),
                   lock=".specbound-zoo.lock")
    g.manifest()            # the manifest, None when ``out`` is not such a folder of ours
    g.changed()             # files whose bytes differ from their recorded sha256 (not ours)
    with g.locked(busy):    # flock on the lock file; busy(): the error when another writer holds it
        g.write("zoo.csv", text)  # the checksum first, then the file (atomic)

A folder of entries the caller writes itself (resume records, each an ``io.codec`` record that
carries its own checksums) lists them with ``g.add(names)`` before writing them, and
``g.remove(names)`` deletes those of them (the caller checks each listed name) and the
manifest, then the folder when nothing else is left.

Rules: the lock file is created, never truncated, and held (``flock``) while writing; a file is
recorded before it is written, so a crash in between leaves a mismatch (refused), never an
unrecorded file; entries under ``dirs`` are the caller's (each written as an owner-marked temp
folder, ``outdir.TempDir``, so an interrupted one is resumed from scratch).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import SpecboundError
from .files import atomic_write_text
from .outdir import MANIFEST, read_manifest, write_manifest


def file_sha256(path: Path) -> str | None:
    """The sha256 of ``path``'s bytes (hex), None when it does not exist."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


class GrowingDir:
    """The growing folder ``root`` of ``kind`` (module doc): top-level ``files`` specbound
    rewrites, checksummed; ``dirs`` it fills; ``lock``, the lock file's name."""

    def __init__(
        self, root: Path, *, kind: str, files: Sequence[str], dirs: Sequence[str], lock: str
    ) -> None:
        self.root = Path(root)
        self.kind = kind
        self.files = tuple(files)
        self.dirs = tuple(dirs)
        self.lock = lock

    def manifest(self) -> dict[str, Any] | None:
        """The folder's manifest when it is a folder of this kind written by specbound."""
        return read_manifest(self.root, kind=self.kind)

    def _write_manifest(self, sha: dict[str, str]) -> None:
        write_manifest(
            self.root, [*self.files, self.lock], list(self.dirs), kind=self.kind, sha256=sha
        )

    def changed(self) -> list[str]:
        """The ``files`` present whose bytes differ from the recorded checksum (edited or
        replaced by someone else), in ``files`` order; all of them when there is no manifest."""
        sha = (self.manifest() or {}).get("sha256", {})
        out = []
        for name in self.files:
            have = file_sha256(self.root / name)
            if have is not None and have != sha.get(name):
                out.append(name)
        return out

    @contextlib.contextmanager
    def locked(self, busy: Callable[[], SpecboundError]) -> Iterator[None]:
        """Create the folder (and its manifest) if needed and hold the lock file (flock;
        created, never truncated) inside the block; ``busy()`` is raised when another writer
        holds it."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.manifest() is None:
            self._write_manifest({})
        try:
            fd = os.open(self.root / self.lock, os.O_RDWR | os.O_CREAT, 0o666)
        except IsADirectoryError:
            raise SpecboundError(f"{self.root / self.lock} is a directory; move it away") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise busy() from exc
            yield
        finally:
            os.close(fd)

    def write(self, name: str, text: str) -> None:
        """Write the file ``name`` (one of ``files``): its checksum into the manifest first,
        then the file (atomic); call it holding the lock."""
        man = self.manifest() or {"sha256": {}}
        sha = dict(man["sha256"])
        sha[name] = hashlib.sha256(text.encode()).hexdigest()
        self._write_manifest(sha)
        atomic_write_text(self.root / name, text)

    # --- entries the caller writes itself (resume records: ``io.codec`` checks their bytes) ---

    def entries(self) -> list[str]:
        """The entries :meth:`add` listed (the manifest's ``files`` beyond ``files`` and the
        lock), in order; [] when there is no manifest of this kind."""
        fixed = {*self.files, self.lock}
        listed = (self.manifest() or {}).get("files", [])
        return [f for f in listed if isinstance(f, str) and f not in fixed and "/" not in f]

    def add(self, names: Sequence[str]) -> None:
        """List ``names`` (top-level files the caller writes, each checked by its own format)
        in the manifest before they are written: a crash in between leaves a listed file
        absent, never an unlisted one. A manifest of another kind there is refused."""
        man = self.manifest()
        if man is None and (self.root / MANIFEST).exists():
            raise SpecboundError(
                f"{self.root / MANIFEST} was not written by specbound for a {self.kind} folder; "
                "move it away"
            )
        have = self.entries()
        new = [n for n in names if n not in have]
        if man is not None and not new:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        write_manifest(
            self.root,
            [*self.files, self.lock, *have, *new],
            list(self.dirs),
            kind=self.kind,
            sha256=dict((man or {}).get("sha256", {})),
        )

    def remove(self, names: Sequence[str]) -> None:
        """Delete ``names`` (the caller's entries it still vouches for, plain files only, never
        a link), the lock and the manifest when it is of this kind, then the folder when
        nothing else is left (a user's file stays, and so does the folder)."""
        listed = self.manifest() is not None
        for name in [*names, *([self.lock] if listed else [])]:
            p = self.root / name
            if p.is_file() and not p.is_symlink():
                p.unlink(missing_ok=True)
        if listed:
            (self.root / MANIFEST).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.root.rmdir()  # only when empty


__all__ = ["GrowingDir", "file_sha256"]
