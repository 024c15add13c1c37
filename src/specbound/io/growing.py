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

A folder whose writer holds the lock only while it writes (a tracker's ``track.csv``, one row
at a time: ``g.locked(busy, wait=10.0)`` waits that long for another writer's write) uses::

    g.replace("track.csv", data)   # write, synced; its checksum taken back when the write fails
    g.append("track.csv", row)     # whole rows: appended and synced, then recorded
    g.recorded("track.csv")        # the checksum the manifest holds (None: none)
    g.changed(appended=("track.csv",))  # an append the record missed is no change
    g.recover("track.csv")         # resume: take such an append back (a cut row) or record it
    g.record("track.json")         # adopt a file written before the folder had a manifest

A folder of entries the caller writes itself (resume records, each an ``io.codec`` record that
carries its own checksums) lists them with ``g.add(names)`` before writing them, and
``g.remove(names)`` deletes those of them (the caller checks each listed name) and the
manifest, then the folder when nothing else is left.

Rules: the lock file is created, never truncated, and held (``flock``) while writing; a file is
recorded before it is written, so a crash in between leaves a mismatch (refused), never an
unrecorded file (an appended file: appended first, then recorded, so a crash in between
leaves one unrecorded last line, whole or cut, that :meth:`GrowingDir.recover` takes back);
entries under ``dirs`` are the caller's (each written as an owner-marked temp
folder, ``outdir.TempDir``, so an interrupted one is resumed from scratch).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import SpecboundError
from .files import atomic_file, atomic_write_text
from .outdir import MANIFEST, read_manifest, write_manifest

#: The low-level write of :meth:`GrowingDir.append` (tests replace it to simulate a full disk).
_write = os.write


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

    def changed(self, appended: Sequence[str] = ()) -> list[str]:
        """The ``files`` present whose bytes differ from the recorded checksum (edited or
        replaced by someone else), in ``files`` order; all of them when there is no manifest.
        A file named in ``appended`` whose only difference is one unrecorded last line (an
        :meth:`append` its record missed) is not changed."""
        sha = (self.manifest() or {}).get("sha256", {})
        out = []
        for name in self.files:
            have = file_sha256(self.root / name)
            if have is None or have == sha.get(name):
                continue
            if name not in appended or self._unrecorded_tail(name) is None:
                out.append(name)
        return out

    @contextlib.contextmanager
    def locked(self, busy: Callable[[], SpecboundError], wait: float = 0.0) -> Iterator[None]:
        """Create the folder (and its manifest) if needed and hold the lock file (flock;
        created, never truncated) inside the block; ``busy()`` is raised when another writer
        holds it (still, after ``wait`` seconds)."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.manifest() is None:
            self._write_manifest({})
        try:
            fd = os.open(self.root / self.lock, os.O_RDWR | os.O_CREAT, 0o666)
        except IsADirectoryError:
            raise SpecboundError(f"{self.root / self.lock} is a directory; move it away") from None
        try:
            _flock(fd, busy, wait)
            yield
        finally:
            os.close(fd)

    def write(self, name: str, text: str) -> None:
        """Write the file ``name`` (one of ``files``): its checksum into the manifest first,
        then the file (atomic); call it holding the lock."""
        self._record(name, hashlib.sha256(text.encode()).hexdigest())
        atomic_write_text(self.root / name, text)

    def recorded(self, name: str) -> str | None:
        """The checksum the manifest records for ``name`` (None: none, or no manifest)."""
        sha = (self.manifest() or {}).get("sha256", {})
        return sha.get(name)

    def _record(self, name: str, sha: str | None) -> None:
        """Record ``sha`` for ``name`` (None: drop its entry), the other entries kept in their
        order (a file recorded again keeps its place)."""
        entries = dict((self.manifest() or {}).get("sha256", {}))
        if sha is None:
            entries.pop(name, None)
        else:
            entries[name] = sha
        self._write_manifest(entries)

    def record(self, *names: str) -> None:
        """Record the present bytes of each of ``names`` that exists (adopting files written
        before the folder had a manifest); call it holding the lock."""
        for name in names:
            sha = file_sha256(self.root / name)
            if sha is not None:
                self._record(name, sha)

    def replace(self, name: str, data: bytes) -> None:
        """Write the file ``name`` as :meth:`write` does (checksum first, then the file:
        atomic, synced), from bytes; when the write fails (OSError raised, the file as it was)
        the earlier checksum is recorded again, so the folder stays usable. Call it holding the
        lock."""
        before = self.recorded(name)
        self._record(name, hashlib.sha256(data).hexdigest())
        try:
            with atomic_file(self.root / name, "wb", sync=True) as fh:
                fh.write(data)
        except BaseException:
            with contextlib.suppress(OSError):
                self._record(name, before)
            raise

    def append(self, name: str, data: bytes) -> None:
        """Append ``data`` (whole lines) to the file ``name`` in one write, synced, then record
        the file's new checksum; on an OSError (a full disk) the file is cut back to its earlier
        size before it propagates. Call it holding the lock (module doc: a crash between the
        write and the record leaves one unrecorded line, :meth:`recover`)."""
        path = self.root / name
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        try:
            size = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:
                    view = view[_write(fd, view) :]
                os.fsync(fd)
                sha = file_sha256(path)
                self._record(name, sha)
            except OSError:
                with contextlib.suppress(OSError):  # leave only whole lines
                    os.ftruncate(fd, size)
                    os.fsync(fd)
                raise
        finally:
            os.close(fd)

    def _unrecorded_tail(self, name: str) -> int | None:
        """Where the recorded bytes of ``name`` end when the file is those bytes plus one last
        line (whole or cut) the record missed; None otherwise."""
        recorded = self.recorded(name)
        try:
            data = (self.root / name).read_bytes()
        except OSError:
            return None
        end = data.rfind(b"\n", 0, max(len(data) - 1, 0)) + 1
        if recorded is None or hashlib.sha256(data[:end]).hexdigest() != recorded:
            return None
        return end

    def recover(self, name: str) -> bool:
        """Take back an append the record missed (:meth:`changed`): a cut last line is cut
        off, a whole one recorded. True when there was one. Call it holding the lock."""
        path = self.root / name
        have = file_sha256(path)
        if have is None or have == self.recorded(name):
            return False
        end = self._unrecorded_tail(name)
        if end is None:
            return False
        if path.read_bytes().endswith(b"\n"):
            self._record(name, have)
        else:
            os.truncate(path, end)
        return True

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


def _flock(fd: int, busy: Callable[[], SpecboundError], wait: float) -> None:
    """Take the exclusive flock on ``fd``, trying for ``wait`` seconds; ``busy()`` after."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError as exc:
            if time.monotonic() >= deadline:
                raise busy() from exc
        time.sleep(0.01)


__all__ = ["GrowingDir", "file_sha256"]
