"""Output helpers: nothing half-written ever appears, nothing specbound did not write is lost.

Every command that writes a directory (``analyze`` given an ``out``, ``scale``, ``correlate``,
``study``, ``trajectory``, ``reproduce``, ``zoo train``'s model folders, and any new one) goes
through ONE helper, :func:`output_dir`; every single file goes through
:func:`~specbound.io.files.atomic_file` (together the only places specbound renames a folder or a
file into place)::

    from specbound.io import output_dir   # (specbound.io.outdir)

    with output_dir(out) as tmp:          # tmp: a fresh, empty temp dir beside ``out``
        (tmp / "models.csv").write_text(...)
        write_report(tmp)                 # everything, report and figures included, goes here
    # here ``out`` holds exactly what was written into tmp, or (on any error) is untouched

Rules of ``output_dir(path)``:

- ``path`` absent or an empty directory: created. A directory holding an earlier specbound
  output (its ``.specbound-manifest.json`` lists every file in it) is replaced *as a whole*:
  nothing of the earlier run survives next to the new results. Anything else (a non-empty
  directory specbound did not write, or one with files added since, a file, FIFO or device) is
  refused with a ``SpecboundError`` and left untouched.
- Inputs: :func:`check_output_dir` (called by every command before its work) refuses an ``out``
  that is, lies inside or contains one of the command's ``inputs`` (the output would replace
  or move what it reads). The one exception is ``replaces``: a command that re-evaluates one
  earlier output of its own in place (``correlate`` of ``results/X`` into ``out=results/X``)
  names it, and ``out`` may then *equal* it (never lie inside or contain it); it is read whole
  before the write replaces it.
- The swap is atomic where the OS allows (Linux ``renameat2(RENAME_EXCHANGE)``), else two
  renames. Writers racing into one folder: the last to commit wins, each leaves a whole folder;
  a reader sees the earlier or the later folder, never a mix of one file.
  Every folder and file in the output gets its mode from the umask read once
  (``files.dir_mode()``/``files.file_mode()``: 0755/0644 under umask 022), whatever mode the
  library that wrote a file chose (safetensors writes 0600).
- Temp dirs are named ``.specbound-<pid>-<host>-<random>.tmp`` (``files.temp_name``: unique per
  writer, naming its owner) and hold a ``.specbound-tmp`` marker on which the writer holds an
  ``flock`` until its temp is renamed or removed. A sweep (the next write in the same parent)
  removes a temp only when its name matches that pattern exactly, with this host's tag, and
  its owner is provably gone: the marker's lock is free (the kernel drops it with its process),
  or, without a marker, the named pid no longer exists. A live sibling's temp, another host's
  and any name a user chose (``.specbound-myrun01.tmp``) are never touched.
- OSErrors while writing (disk full, read-only file system, permissions, a parent that is a file,
  a name too long) become one-line ``SpecboundError``s naming the path.

Tests interrupt a write on purpose by replacing :func:`_on_temp_ready` (called once the temp
dir exists, before anything is written into it); it does nothing otherwise.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import shutil
import socket
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import Param, SpecboundError
from .files import (
    TEMP_RE,
    atomic_file,
    atomic_write_text,
    check_output_file,
    dir_mode,
    dumps_json,
    file_mode,
    host_tag,
    output_file_kind,
    owner_gone,
    refuse_empty,
    refuse_overlap,
    temp_name,
)

#: The file in every output directory listing what specbound wrote there.
MANIFEST = ".specbound-manifest.json"
#: The marker inside a temp dir while it is being written: {"pid": ..., "host": ...}; its
#: writer holds an flock on it until the temp dir is renamed into place or removed.
TMP_MARKER = ".specbound-tmp"
_RENAME_EXCHANGE = 2
#: How often a commit retries when a concurrent writer moved the destination under it.
_COMMIT_TRIES = 50


def _err(what: str, path: Path, exc: OSError) -> SpecboundError:
    reason = exc.strerror or type(exc).__name__
    if exc.errno == errno.ENOSPC:
        reason = "no space left on device"
    elif exc.errno == errno.EROFS:
        reason = "read-only file system"
    elif exc.errno == errno.ENAMETOOLONG:
        reason = "name too long"
    return SpecboundError(
        f"cannot {what} {path}: {reason}; choose another ", Param("out"), " directory"
    )


def _tree(root: Path) -> tuple[list[str], list[str]]:
    """(files, dirs) under ``root`` as sorted relative POSIX paths; symlinks count as files."""
    files, dirs = [], []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        for d in list(dirnames):
            if (Path(dirpath) / d).is_symlink():
                dirnames.remove(d)
                files.append((rel / d).as_posix())
            else:
                dirs.append((rel / d).as_posix())
        files.extend((rel / f).as_posix() for f in filenames)
    return sorted(files), sorted(dirs)


def read_manifest(d: Path, kind: str | None = None) -> dict[str, Any] | None:
    """``d``'s :data:`MANIFEST` (:func:`write_manifest`) when it is ours (of ``kind``, with its
    ``sha256`` map, when given), else None."""
    try:
        data = json.loads((d / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        return None
    if kind is not None and (data.get("kind") != kind or not isinstance(data.get("sha256"), dict)):
        return None
    return data


def write_manifest(
    d: Path,
    files: Sequence[str],
    dirs: Sequence[str],
    *,
    kind: str | None = None,
    sha256: dict[str, str] | None = None,
) -> None:
    """``d``'s :data:`MANIFEST`, one schema ``{"written_by", "kind"?, "files", "dirs", "sha256"?}``:
    what specbound wrote there; a growing folder (a zoo) adds its kind and each file's sha256."""
    doc: dict[str, Any] = {"written_by": f"specbound {__version__}"}
    if kind is not None:
        doc["kind"] = kind
    doc["files"], doc["dirs"] = list(files), list(dirs)
    if sha256 is not None:
        doc["sha256"] = sha256
    atomic_write_text(d / MANIFEST, dumps_json(doc, indent=1) + "\n")


def local_inputs(*given: Any) -> tuple[str, ...]:
    """The paths among ``given`` (str or ``os.PathLike``; hub ids, modules and state dicts are
    dropped by :func:`check_output_dir`, which skips what is not on disk), made absolute now so
    that a later ``chdir`` does not change them: what a library result records as its inputs,
    for its ``to_dir`` to pass to :func:`output_dir`."""
    return tuple(os.path.abspath(g) for g in given if isinstance(g, (str, os.PathLike)))


def check_output_dir(
    path: str | os.PathLike[str],
    *,
    inputs: Sequence[str | os.PathLike[str]] = (),
    replaces: str | os.PathLike[str] | None = None,
) -> Path:
    """The absolute destination for ``path`` if specbound may write there, else SpecboundError.

    Allowed: absent, an empty directory, or an earlier specbound output left as it was written,
    that is not, does not lie inside and does not contain any of ``inputs`` (``replaces``, an
    input re-evaluated in place, may equal ``path``; module doc).
    """
    refuse_empty(path, "folder")
    refuse_overlap(path, inputs, replaces=replaces)  # first: the most useful reason
    try:
        return _check_output_dir(Path(path))
    except OSError as exc:  # e.g. a name longer than the file system allows
        raise _err("use", Path(path), exc) from None


#: A growing folder's ``kind`` (its manifest's, :mod:`.growing`) -> (what writes it, what
#: :func:`check_output_dir`'s refusal says is kept); another kind reads "written by specbound".
GROWING_KINDS = {
    "zoo": ("'specbound zoo train'", "its models are never overwritten"),
    "track": ("a specbound Tracker", "its rows are never overwritten"),
}


def _check_output_dir(given: Path) -> Path:
    dest = _destination(given)
    if not dest.is_dir():
        return dest
    try:
        entries = [p.name for p in dest.iterdir()]
    except OSError as exc:
        raise _err("read", dest, exc) from None
    if entries:
        _refuse_not_ours(dest, given)
    return dest


def _destination(given: Path) -> Path:
    """The absolute path ``given`` names (a symlink followed), refused when it is a dangling
    symlink, something other than a folder, or lies under a file."""
    dest = Path(os.path.abspath(given))
    if dest.is_symlink():
        if not dest.exists():
            raise SpecboundError(
                Param("out", str(given)),
                " is a dangling symlink; remove it or choose another directory",
            )
        dest = dest.resolve()
    if dest.exists() and not dest.is_dir():
        what = output_file_kind(dest) or "a file"
        raise SpecboundError(
            Param("out", str(given)), f" exists and is {what}, not a directory; choose another path"
        )
    parent = next((q for q in dest.parents if q.exists() or q.is_symlink()), None)
    if parent is not None and not parent.is_dir():
        raise SpecboundError(
            Param("out", str(given)), f": {parent} is not a directory; choose another path"
        )
    return dest


def _refuse_not_ours(dest: Path, given: Path) -> None:
    """Refuse the non-empty folder ``dest`` unless it is an earlier specbound output left as it
    was written (a results folder: no ``kind``; module doc)."""
    manifest = read_manifest(dest)
    if manifest is None:
        raise SpecboundError(
            Param("out", str(given)),
            f" is not empty and was not written by specbound (no {MANIFEST}); "
            "choose a new or empty directory: specbound never overwrites files it did not write",
        )
    kind = manifest.get("kind")
    if kind is not None or (dest / "zoo.json").exists():
        kind = kind or "zoo"
        writer, kept = GROWING_KINDS.get(kind, ("specbound", "it is never overwritten"))
        raise SpecboundError(
            Param("out", str(given)),
            f" is a {kind} folder (written by {writer}), not "
            f"a results folder; choose another directory: {kept}",
        )
    files, dirs = _tree(dest)
    known_files = set(manifest["files"]) | {MANIFEST}
    known_dirs = set(manifest.get("dirs", []))
    foreign = [f for f in files if f not in known_files] + [d for d in dirs if d not in known_dirs]
    if foreign:
        raise SpecboundError(
            Param("out", str(given)),
            f" holds '{foreign[0]}', which specbound did not write; move it away "
            "or choose another directory",
        )


def _marker_lock_free(marker: Path) -> bool | None:
    """Whether nobody holds the flock on ``marker`` (None: no such marker). A marker whose lock
    is free but which holds no writer record yet (its writer is between creating and locking
    it) counts as held."""
    try:
        fd = os.open(marker, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its writer is alive
            return False
        try:
            info = json.loads(os.read(fd, 4096))
        except ValueError:
            return False
        return isinstance(info, dict) and isinstance(info.get("pid"), int)
    finally:
        os.close(fd)


def _is_stale(d: Path) -> bool:
    """A temp of ours (an owner-marked name, :data:`~specbound.io.files.TEMP_RE`) whose writer
    is provably gone: its marker's lock is free, or without a marker its pid is gone (module
    doc). Anything else, a name a user chose included, is False; so is another host's temp (on
    a shared file system its writer's lock may not be visible here)."""
    m = TEMP_RE.match(d.name)
    if m is None or m["host"] != host_tag() or d.is_symlink():
        return False
    if d.is_dir():
        free = _marker_lock_free(d / TMP_MARKER)
        if free is not None:
            return free
    return owner_gone(d.name)


def sweep_stale(parent: str | os.PathLike[str]) -> list[Path]:
    """Remove our stale temps (folders and files) in ``parent`` (module doc); returns those
    removed."""
    removed: list[Path] = []
    try:
        candidates = [p for p in Path(parent).iterdir() if TEMP_RE.match(p.name)]
    except OSError:
        return removed
    for p in candidates:
        if not _is_stale(p):
            continue
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                p.unlink()
        if not p.exists():
            removed.append(p)
    return removed


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2 RENAME_EXCHANGE); False when unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd = -100
    rc = fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    e = ctypes.get_errno()
    if e in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(e, os.strerror(e), str(b))


def _on_temp_ready(tmp: Path) -> None:
    """Called by ``output_dir`` once its temp dir ``tmp`` exists (a seam for tests that
    interrupt a write; does nothing)."""


def _move(src: Path, dst: Path) -> None:
    """Rename the folder ``src`` to ``dst`` (absent or an empty folder): the one folder rename."""
    os.rename(src, dst)


def _check_still_ours(dest: Path) -> None:
    """``check_output_dir(dest)`` at commit time; a concurrent writer swapping ``dest`` between
    reading its manifest and listing it can make one check fail, so a refusal must repeat."""
    for attempt in range(3):
        try:
            check_output_dir(dest)
            return
        except SpecboundError:
            if attempt == 2:
                raise


def _set_modes(tmp: Path) -> None:
    """Give every folder under ``tmp`` (itself included) :func:`~specbound.io.files.dir_mode`
    and every regular file :func:`~specbound.io.files.file_mode` (symlinks are left alone):
    what libraries wrote with their own modes (safetensors writes 0600) follows the umask too."""
    fmode, dmode = file_mode(), dir_mode()
    for dirpath, dirnames, filenames in os.walk(tmp):
        for name in filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, fmode)
        for name in dirnames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, dmode)
    os.chmod(tmp, dmode)


def _commit(tmp: Path, dest: Path, manifest: bool = True) -> None:
    """Write the manifest into ``tmp`` (when ``manifest``), give everything in it the modes of
    the umask (:func:`_set_modes`) and put ``tmp`` in the place of ``dest`` (module doc)."""
    if manifest:
        files, dirs = _tree(tmp)
        write_manifest(tmp, [f for f in files if f != TMP_MARKER], dirs)
    _set_modes(tmp)
    (tmp / TMP_MARKER).unlink()  # its lock stays held (open fd) until output_dir is done
    for _ in range(_COMMIT_TRIES):
        if not dest.exists():
            try:
                _move(tmp, dest)
                return
            except OSError as exc:  # another writer committed first: swap with theirs
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                continue
        _check_still_ours(dest)  # nothing foreign appeared while we were writing
        try:
            if _exchange(tmp, dest):
                shutil.rmtree(tmp, ignore_errors=True)  # tmp now holds the earlier output
                return
        except FileNotFoundError:  # moved aside by a writer without renameat2: try again
            continue
        aside = dest.parent / temp_name()
        try:
            _move(dest, aside)
        except FileNotFoundError:
            continue
        try:
            _move(tmp, dest)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):  # a newer output got there first
                shutil.rmtree(aside, ignore_errors=True)
                continue
            with contextlib.suppress(OSError):
                _move(aside, dest)
            raise
        except BaseException:
            with contextlib.suppress(OSError):
                _move(aside, dest)
            raise
        shutil.rmtree(aside, ignore_errors=True)
        return
    raise OSError(errno.EBUSY, "other writers keep replacing it", str(dest))


def _lock_marker(tmp: Path) -> int:
    """Create ``tmp``'s marker, hold its flock (returned fd) and then record the writer in it."""
    fd = os.open(tmp / TMP_MARKER, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, dumps_json({"pid": os.getpid(), "host": socket.gethostname()}).encode())
    except BaseException:
        os.close(fd)
        raise
    return fd


class TempDir:
    """An owner-marked temp folder beside ``dest`` (module doc), for a folder written in steps
    (``zoo train``'s model folders: begun, trained, finished); :func:`output_dir` is the same
    for a folder written in one block. ``path`` is the folder to write into; :meth:`commit`
    puts it in the place of ``dest`` (with a manifest when ``manifest``), :meth:`discard`
    removes it; either ends it. ``dest`` is the absolute destination (already checked)."""

    def __init__(self, dest: Path, *, manifest: bool = True) -> None:
        self.dest = dest
        self.manifest = manifest
        self.path = dest.parent / temp_name()
        self._lock = -1
        try:
            os.mkdir(self.path, 0o700)
        except OSError as exc:
            raise _err("write into", dest.parent, exc) from None
        try:
            self._lock = _lock_marker(self.path)
        except BaseException:
            self.discard()
            raise

    def commit(self) -> None:
        """Rename the folder into place (OSErrors propagate; the temp is removed either way)."""
        try:
            _commit(self.path, self.dest, self.manifest)
        finally:
            self.discard()

    def discard(self) -> None:
        """Remove the temp folder (if still there) and release its lock; idempotent."""
        if self.path.exists() and not self.path.is_symlink():
            shutil.rmtree(self.path, ignore_errors=True)
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1


@contextlib.contextmanager
def output_dir(
    path: str | os.PathLike[str],
    *,
    inputs: Sequence[str | os.PathLike[str]] = (),
    replaces: str | os.PathLike[str] | None = None,
) -> Iterator[Path]:
    """Yield an empty temp directory; on success it replaces ``path`` as a whole (module doc).

    Refuses (SpecboundError, before anything is written) a ``path`` holding files specbound
    did not write, or overlapping ``inputs`` (:func:`check_output_dir`). On any error or
    interrupt (SIGINT; SIGTERM in the CLI) the temp directory is removed and ``path`` is left
    as it was.
    """
    dest = check_output_dir(path, inputs=inputs, replaces=replaces)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _err("create", dest.parent, exc) from None
    sweep_stale(dest.parent)
    temp = TempDir(dest)
    try:
        _on_temp_ready(temp.path)
        yield temp.path
        temp.commit()
    except OSError as exc:
        raise _err("write", dest, exc) from None
    finally:
        temp.discard()


#: The former name of :func:`output_dir` (same behaviour).
atomic_dir = output_dir

__all__ = [
    "MANIFEST",
    "TMP_MARKER",
    "TempDir",
    "atomic_dir",
    "atomic_file",
    "check_output_dir",
    "check_output_file",
    "local_inputs",
    "output_dir",
    "read_manifest",
    "sweep_stale",
    "write_manifest",
]
