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
from .outdir import read_manifest, write_manifest


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


__all__ = ["GrowingDir", "file_sha256"]
