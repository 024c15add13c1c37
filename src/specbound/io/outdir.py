"""Output helpers: nothing half-written ever appears, nothing specbound did not write is lost.

Every command that writes a directory (``analyze --out``, ``scale``, ``reproduce``, and any new
one) goes through ONE helper, :func:`output_dir`::

    from specbound.io import output_dir   # (specbound.io.outdir)

    with output_dir(out) as tmp:          # tmp: a fresh, empty temp dir beside ``out``
        (tmp / "models.csv").write_text(...)
        write_report(tmp)                 # everything, report and figures included, goes here
    # here ``out`` holds exactly what was written into tmp, or (on any error) is untouched

Rules of ``output_dir(path)``:

- ``path`` absent or an empty directory: created. A directory holding an earlier specbound
  output (its ``.specbound-manifest.json`` lists every file in it) is replaced *as a whole*:
  nothing of the earlier run survives next to the new results. Anything else (a non-empty
  directory specbound did not write, or one with files added since) is refused with a
  ``SpecboundError`` and left untouched.
- The swap is atomic where the OS allows (Linux ``renameat2(RENAME_EXCHANGE)``), else two
  renames. The final directory's mode follows the umask (``0o777 & ~umask``).
- Temp dirs are named ``.specbound-XXXXXXXX.tmp`` (short: any ``path`` name that fits the file
  system works) and hold a ``.specbound-tmp`` marker with the writer's pid; stale ones (their
  writer is gone, e.g. after SIGKILL) are swept by the next write in the same parent directory.
- OSErrors while writing (disk full, read-only file system, permissions, a parent that is a file)
  become one-line ``SpecboundError``s naming the path.

Single files: :func:`~specbound.io.files.atomic_file` (temp file + rename).

Tests interrupt a write on purpose by replacing :func:`_on_temp_ready` (called once the temp
dir exists, before anything is written into it); it does nothing otherwise.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import Param, SpecboundError
from .files import atomic_file, dumps_json

#: The file in every output directory listing what specbound wrote there.
MANIFEST = ".specbound-manifest.json"
#: The marker inside a temp dir while it is being written: {"pid": ..., "host": ...}.
TMP_MARKER = ".specbound-tmp"
_TMP_PREFIX = ".specbound-"
_TMP_SUFFIX = ".tmp"
_TMP_RE = re.compile(r"^\.specbound-[A-Za-z0-9_]{6,16}\.tmp$")
_RENAME_EXCHANGE = 2


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


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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


def _read_manifest(d: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((d / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        return None
    return data


def check_output_dir(path: str | os.PathLike[str]) -> Path:
    """The absolute destination for ``path`` if specbound may write there, else SpecboundError.

    Allowed: absent, an empty directory, or an earlier specbound output left as it was written.
    """
    try:
        return _check_output_dir(Path(path))
    except OSError as exc:  # e.g. a name longer than the file system allows
        raise _err("use", Path(path), exc) from None


def _check_output_dir(given: Path) -> Path:
    dest = Path(os.path.abspath(given))
    if dest.is_symlink():
        if not dest.exists():
            raise SpecboundError(
                Param("out", str(given)),
                " is a dangling symlink; remove it or choose another directory",
            )
        dest = dest.resolve()
    if dest.exists() and not dest.is_dir():
        raise SpecboundError(
            Param("out", str(given)), " exists and is not a directory; choose another path"
        )
    for parent in dest.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise SpecboundError(
                    Param("out", str(given)), f": {parent} is not a directory; choose another path"
                )
            break
    if not dest.is_dir():
        return dest
    try:
        entries = [p.name for p in dest.iterdir()]
    except OSError as exc:
        raise _err("read", dest, exc) from None
    if not entries:
        return dest
    manifest = _read_manifest(dest)
    if manifest is None:
        raise SpecboundError(
            Param("out", str(given)),
            f" is not empty and was not written by specbound (no {MANIFEST}); "
            "choose a new or empty directory: specbound never overwrites files it did not write",
        )
    kind = manifest.get("kind")
    if kind is not None or (dest / "zoo.json").exists():
        raise SpecboundError(
            Param("out", str(given)),
            f" is a {kind or 'zoo'} folder (written by 'specbound zoo train'), not "
            "a results folder; choose another directory: its models are never overwritten",
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
    return dest


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def _is_stale(d: Path) -> bool:
    """A temp dir of ours whose writer is gone (or an old output left by an interrupted swap)."""
    if not _TMP_RE.match(d.name) or d.is_symlink() or not d.is_dir():
        return False
    marker = d / TMP_MARKER
    try:
        info = json.loads(marker.read_text())
    except FileNotFoundError:
        # no marker: an earlier output renamed aside by an interrupted swap (it has a manifest);
        # a temp dir that does not have its marker yet has neither
        return (d / MANIFEST).is_file()
    except (OSError, ValueError):
        return False
    if not isinstance(info, dict) or info.get("host") != socket.gethostname():
        return False
    pid = info.get("pid")
    return isinstance(pid, int) and not _pid_alive(pid)


def sweep_stale(parent: str | os.PathLike[str]) -> list[Path]:
    """Remove our stale temp dirs in ``parent`` (see module doc); returns those removed."""
    removed: list[Path] = []
    try:
        candidates = [p for p in Path(parent).iterdir() if _TMP_RE.match(p.name)]
    except OSError:
        return removed
    for p in candidates:
        if _is_stale(p):
            shutil.rmtree(p, ignore_errors=True)
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


def _commit(tmp: Path, dest: Path) -> None:
    files, dirs = _tree(tmp)
    files = [f for f in files if f != TMP_MARKER]
    from .._version import __version__

    (tmp / MANIFEST).write_text(
        json.dumps(
            {"written_by": f"specbound {__version__}", "files": files, "dirs": dirs}, indent=1
        )
        + "\n"
    )
    os.chmod(tmp, 0o777 & ~_umask())
    (tmp / TMP_MARKER).unlink()
    if not dest.exists():
        os.rename(tmp, dest)
        return
    check_output_dir(dest)  # nothing foreign appeared while we were writing
    if _exchange(tmp, dest):
        shutil.rmtree(tmp, ignore_errors=True)  # tmp now holds the earlier output
        return
    aside = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, suffix=_TMP_SUFFIX, dir=dest.parent))
    os.rename(dest, aside)  # onto the empty dir: replaces it
    try:
        os.rename(tmp, dest)
    except BaseException:
        os.rename(aside, dest)
        raise
    shutil.rmtree(aside, ignore_errors=True)


@contextlib.contextmanager
def output_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty temp directory; on success it replaces ``path`` as a whole (module doc).

    Refuses (SpecboundError, before anything is written) a ``path`` holding files specbound
    did not write. On any error or interrupt (SIGINT; SIGTERM in the CLI) the temp directory is
    removed and ``path`` is left as it was.
    """
    dest = check_output_dir(path)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _err("create", dest.parent, exc) from None
    sweep_stale(dest.parent)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, suffix=_TMP_SUFFIX, dir=dest.parent))
    except OSError as exc:
        raise _err("write into", dest.parent, exc) from None
    try:
        (tmp / TMP_MARKER).write_text(
            dumps_json({"pid": os.getpid(), "host": socket.gethostname()})
        )
        _on_temp_ready(tmp)
        yield tmp
        _commit(tmp, dest)
    except OSError as exc:
        raise _err("write", dest, exc) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


#: The former name of :func:`output_dir` (same behaviour).
atomic_dir = output_dir

__all__ = [
    "MANIFEST",
    "TMP_MARKER",
    "atomic_dir",
    "atomic_file",
    "check_output_dir",
    "output_dir",
    "sweep_stale",
]
