"""Generic file guards used by every reader and writer: regular files only, bounded reads,
strict JSON in (no duplicate keys) and out (no NaN/Infinity tokens), atomic single-file writes.

Readers: :func:`check_regular_file` (a FIFO would block forever, a directory is no file),
:func:`read_small_file` (at most ``MAX_JSON_BYTES``), :func:`parse_json` (duplicate keys
refused; one-line errors naming the file); YAML text: :mod:`.yamlfiles`.

Writers: :func:`json_safe` / :func:`dumps_json` / :func:`write_json`
never emit ``NaN`` or ``Infinity`` (invalid JSON): a non-finite float is written ``null``; where
a value may lie beyond float64 the caller keeps its log10 beside it (SPEC 6). Every CSV is
written by :func:`write_csv` / :func:`csv_text`: floats in the shortest form that reads back to
the same float64 (``0.8``, not ``0.80000000000000004``).
:func:`atomic_file` and :func:`atomic_write_text` write a temp file beside the target and rename
it over the target; :func:`write_report_page` writes a page's text (report/ renders pages and
writes none), :func:`copy_file` copies an input into an output folder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import hashlib
import json
import math
import mmap
import os
import re
import secrets
import shutil
import socket
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ..errors import CheckpointError, Param, SpecboundError

#: Largest config.json / shard index read (real ones are kilobytes to a few megabytes): a
#: multi-gigabyte "config" is refused before it is read into memory.
MAX_JSON_BYTES = 64 * 2**20


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def parse_json(text: str | bytes, what: str, error: type[SpecboundError] = CheckpointError) -> Any:
    """``text`` parsed as JSON, duplicate object keys refused; failures as one-line ``error``.

    ``what`` names the file in the message. Deep nesting (RecursionError) counts as invalid.
    """
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise error(f"{what} has the key '{exc.key}' twice; fix or re-download it") from None
    except UnicodeDecodeError:
        raise error(f"{what} is not UTF-8 text; fix or re-download it") from None
    except RecursionError:
        raise error(
            f"{what} is nested too deeply to be valid JSON; fix or re-download it"
        ) from None
    except ValueError as exc:
        first = (str(exc).strip().splitlines() or ["invalid JSON"])[0]
        raise error(f"{what} is not valid JSON ({first}); fix or re-download it") from None


def check_regular_file(
    path: Path,
    what: str = "file",
    advice: str = "pass a checkpoint directory of ordinary files",
    error: type[SpecboundError] = CheckpointError,
) -> None:
    """Refuse FIFOs, devices, sockets, directories, symlink loops and dangling symlinks before
    opening (a FIFO blocks forever, ``/dev/zero`` never ends).

    The message names ``path``, what it is ("a directory", "a symlink loop", "a device or
    special file (a link to /dev/zero)", ...), and ends with ``advice`` (what to do instead).
    """
    link = os.path.islink(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise error(f"{path} is a symlink loop, not a regular {what}; {advice}") from None
        if exc.errno == errno.ENOENT and link:
            target = os.readlink(path)
            raise error(
                f"{path} is a symlink to {target}, which does not exist, not a regular {what}; "
                f"{advice}"
            ) from None
        raise error(f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        kind = (
            "a directory"
            if stat.S_ISDIR(mode)
            else "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "a device or special file"
        )
        if link:
            kind += f" (a link to {os.path.realpath(path)})"
        raise error(f"{path} is {kind}, not a regular {what}; {advice}")


def read_small_file(
    path: Path,
    what: str,
    error: type[SpecboundError] = CheckpointError,
    limit: int = MAX_JSON_BYTES,
    advice: str | None = None,
) -> bytes:
    """The bytes of a regular file (:func:`check_regular_file`) of at most ``limit`` bytes,
    read without reading more than ``limit + 1``; else one-line ``error`` naming the file and
    ending with ``advice`` (default: a checkpoint's words). The one size guard of every
    whole-file read (config.json, shard indexes, read-back JSON, mapping and grid YAML)."""
    if advice is None:
        check_regular_file(path, what, error=error)
        advice = "fix or re-download it"
    else:
        check_regular_file(path, what, advice, error=error)
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise error(f"{path} is larger than {_size_words(limit)}, too large for a {what}; {advice}")
    return data


def _size_words(n: int) -> str:
    """``64 MiB``, ``1 MiB``, ``512 KiB``."""
    return f"{n // 2**20} MiB" if n % 2**20 == 0 else f"{n // 2**10} KiB"


def map_file(path: str | os.PathLike[str]) -> mmap.mmap:
    """``path`` mapped read-only (the whole file). An OSError (out of memory or address space:
    ENOMEM) names ``path``: ``mmap`` itself raises one without a file name."""
    try:
        with open(path, "rb") as fh:
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), os.fspath(path)) from None


def release_pages(mm: mmap.mmap | None, offset: int, nbytes: int) -> None:
    """Drop the pages of ``mm[offset:offset + nbytes]`` from this process's resident set (a
    streaming reader is done with a tensor); nothing where the platform has no MADV_DONTNEED."""
    if mm is None or nbytes <= 0 or not hasattr(mmap, "MADV_DONTNEED"):
        return
    start = offset // mmap.PAGESIZE * mmap.PAGESIZE
    with contextlib.suppress(OSError, ValueError):
        mm.madvise(mmap.MADV_DONTNEED, start, offset + nbytes - start)


def is_count(x: Any) -> bool:
    """A JSON non-negative integer (not a bool, not a float)."""
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def file_stamp(path: Path) -> str:
    """``resolved path:size:mtime_ns:ctime_ns:inode``: changes whenever the file may have."""
    st = path.stat()
    return f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


# --- strict JSON out ------------------------------------------------------------------------


def json_safe(obj: Any, *, default: Callable[[Any], Any] | None = None) -> Any:
    """``obj`` as plain data JSON holds strictly (the one sanitizer of specbound).

    - ``None``, ``bool``, ``str`` (a ``str`` subclass such as ``numpy.str_`` becomes ``str``);
    - ``int`` and numpy integers -> ``int``; ``numpy.bool_`` -> ``bool``;
    - ``float`` and numpy floats -> ``float``; a non-finite one (NaN, +-inf: a value beyond
      float64) -> ``None``;
    - mappings -> dicts (keys JSON writes as they are: ``str``, ``int``, ``float``, ``bool``,
      ``None``; any other key -> ``str(key)``); lists, tuples and sets -> lists;
    - paths -> strings; numpy arrays -> lists; dataclasses -> dicts; pandas DataFrames -> lists
      of records; ``pandas.NA`` -> ``None``; other objects with ``tolist()`` or ``item()``
      (numpy and pandas scalars) -> what those return.

    Anything else: ``default(obj)`` sanitized (``default=str`` writes it as text, what the CLI's
    ``--json`` does), or ``TypeError`` when ``default`` is None. numpy and pandas are never
    imported here: their objects are recognised only when they are loaded already.
    """
    for convert in _CONVERTERS:
        out = convert(obj, default)
        if out is not _NOT_MINE:
            return out
    tolist = getattr(obj, "tolist", None)  # numpy/pandas scalars and arrays
    if callable(tolist):
        return json_safe(tolist(), default=default)
    if hasattr(obj, "item"):
        return json_safe(obj.item(), default=default)
    if default is not None:
        return json_safe(default(obj), default=default)
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


#: What a :data:`_CONVERTERS` entry returns for an object it does not convert.
_NOT_MINE = object()


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def _plain_value(obj: Any, default: Callable[[Any], Any] | None) -> Any:
    """None, bool, str, int and float (subclasses included) as the plain type."""
    if obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, str):
        return str.__str__(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return _finite(float(obj))
    return _NOT_MINE


def _numpy_value(obj: Any, default: Callable[[Any], Any] | None) -> Any:
    """numpy bools, integers, floats and arrays (when numpy is loaded)."""
    np = sys.modules.get("numpy")
    if np is None:
        return _NOT_MINE
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return _finite(float(obj))
    if isinstance(obj, np.ndarray):
        return [json_safe(v, default=default) for v in obj.tolist()]
    return _NOT_MINE


def _container_value(obj: Any, default: Callable[[Any], Any] | None) -> Any:
    """Mappings, lists, tuples, sets, paths and dataclass instances."""
    if isinstance(obj, Mapping):
        return {_json_key(k): json_safe(v, default=default) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [json_safe(v, default=default) for v in obj]
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return json_safe(dataclasses.asdict(obj), default=default)
    return _NOT_MINE


def _pandas_value(obj: Any, default: Callable[[Any], Any] | None) -> Any:
    """pandas DataFrames (a list of records) and ``pandas.NA`` (when pandas is loaded)."""
    pd = sys.modules.get("pandas")
    if pd is None:
        return _NOT_MINE
    if isinstance(obj, pd.DataFrame):
        return [json_safe(r, default=default) for r in obj.to_dict("records")]
    if obj is pd.NA:
        return None
    return _NOT_MINE


#: :func:`json_safe`'s conversions, in the order they are tried.
_CONVERTERS: tuple[Callable[[Any, Callable[[Any], Any] | None], Any], ...] = (
    _plain_value,
    _numpy_value,
    _container_value,
    _pandas_value,
)


def _json_key(key: Any) -> Any:
    """A mapping key as JSON writes it: the kinds ``json`` converts itself stay, others -> str."""
    if key is None or isinstance(key, (str, int, float, bool)):
        return key
    return str(key)


def dumps_json(
    obj: Any,
    *,
    indent: int | None = None,
    sort_keys: bool = False,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """Strict JSON text of ``json_safe(obj, default=default)``: never ``NaN``/``Infinity``
    (json's default)."""
    return json.dumps(
        json_safe(obj, default=default), indent=indent, sort_keys=sort_keys, allow_nan=False
    )


def canonical_json(obj: Any) -> bytes:
    """The canonical bytes of a strict-JSON value (sorted keys, no spaces, ASCII): what a
    checksum of a JSON body is taken over. Non-finite floats raise ValueError (never nulled:
    a checksummed body must say exactly what it holds)."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


def write_json(path: str | os.PathLike[str], obj: Any, *, indent: int | None = 1) -> None:
    """Write ``dumps_json(obj)`` plus a newline to ``path`` atomically (see atomic_file)."""
    atomic_write_text(path, dumps_json(obj, indent=indent) + "\n")


def csv_text(frame: Any) -> str:
    """``frame`` (a pandas DataFrame) as the text of every CSV specbound writes: no index,
    ``\\n`` line ends, each float in the shortest form that reads back to the same float64
    (Python's ``repr``, pandas' default: ``0.8``, ``1e-05``, ``-0.0``), NaN empty. A float32 or
    float16 column is widened to float64 first, so its text reads back to its exact value
    (``0.800000011920929``, not the float32's own shortest ``0.8``)."""
    import numpy as np

    narrow = [
        i
        for i, dt in enumerate(frame.dtypes)
        if isinstance(dt, np.dtype) and dt.kind == "f" and dt.itemsize < 8
    ]
    if narrow:
        frame = frame.copy()
        for i in narrow:
            frame.isetitem(i, frame.iloc[:, i].astype(np.float64))
    return str(frame.to_csv(index=False, lineterminator="\n"))


def write_csv(frame: Any, path: str | os.PathLike[str] | IO[str]) -> None:
    """Write :func:`csv_text` of ``frame`` to ``path`` (a file name, UTF-8, or an open text
    file). Callers that need atomicity write into their temp folder or an :func:`atomic_file`."""
    text = csv_text(frame)
    if isinstance(path, (str, os.PathLike)):
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    else:
        path.write(text)


# --- owner-marked temps, the umask, atomic single files ----------------------------------------

#: Every temp file or folder specbound writes beside an output is named
#: ``.specbound-<pid>-<host>-<random>.tmp`` (``host``: 8 hex digits of the SHA-256 of the host
#: name; ``random``: 12 hex digits): unique per writer, and naming its owner, so that a sweep can
#: tell a dead writer's leftover from a live sibling's temp and from a name a user chose.
TEMP_RE = re.compile(r"^\.specbound-(?P<pid>[0-9]{1,10})-(?P<host>[0-9a-f]{8})-[0-9a-f]{12}\.tmp$")


@functools.cache
def host_tag() -> str:
    """8 hex digits of the SHA-256 of this machine's host name (the ``host`` of a temp name)."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def temp_name() -> str:
    """A fresh owner-marked temp name (see :data:`TEMP_RE`) for this process."""
    return f".specbound-{os.getpid()}-{host_tag()}-{secrets.token_hex(6)}.tmp"


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (one we may not signal counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def owner_gone(name: str) -> bool:
    """True only for an owner-marked temp ``name`` (:data:`TEMP_RE`) written on this machine
    by a process that no longer exists; any other name (one a user chose, another host's temp,
    a live writer's) is False."""
    m = TEMP_RE.match(name)
    if m is None or m["host"] != host_tag():
        return False
    pid = int(m["pid"])
    return pid != os.getpid() and not pid_alive(pid)


@functools.cache
def umask() -> int:
    """The process umask, read once (from ``/proc/self/status`` where it is listed, else by
    setting and restoring it) and kept: every file and folder specbound writes gets its mode from
    it (:func:`file_mode`, :func:`dir_mode`). Tests that change the umask call
    ``umask.cache_clear()``."""
    with (
        contextlib.suppress(OSError, ValueError),
        open("/proc/self/status", encoding="ascii", errors="replace") as fh,
    ):
        for line in fh:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    old = os.umask(0o022)
    os.umask(old)
    return old


def file_mode() -> int:
    """The mode of a new file under the umask (``0o666 & ~umask``, 0644 under umask 022), as
    ``open`` would give: temp files are created 0600 and set to it before their rename."""
    return 0o666 & ~umask()


def dir_mode() -> int:
    """The mode of a new folder under the umask (``0o777 & ~umask``, 0755 under umask 022)."""
    return 0o777 & ~umask()


def output_file_kind(path: Path) -> str | None:
    """None when ``path`` is absent or a regular file (possibly through a symlink), else what it
    is ("a directory", "a FIFO", ...): never opened, so a FIFO cannot block."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError:
        return None  # the write reports it (name too long, permissions ...)
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device or special file"


def refuse_overlap(
    out: str | os.PathLike[str],
    inputs: Sequence[str | os.PathLike[str]],
    *,
    replaces: str | os.PathLike[str] | None = None,
) -> None:
    """One-line ``SpecboundError`` when the output ``out`` is, lies inside or contains one of
    ``inputs`` (symlinks resolved; inputs that are not on disk, e.g. hub ids, are skipped): a
    write there would replace, or move, what the command reads. ``replaces`` (an input the
    command re-evaluates in place and reads whole first) may equal ``out``, nothing more."""
    o = Path(os.path.realpath(out))
    same_ok = Path(os.path.realpath(replaces)) if replaces is not None else None
    for given in inputs:
        if not os.path.lexists(given):
            continue
        i = Path(os.path.realpath(given))
        if i == o:
            if i == same_ok:
                continue
            why = "is the input"
        elif i in o.parents:
            why = "lies inside the input"
        elif o in i.parents:
            why = "contains the input"
        else:
            continue
        raise SpecboundError(
            Param("out", str(out)),
            f" {why} {given}: writing there would replace what the command reads; "
            "choose an output outside the inputs",
        )


def check_output_file(
    path: str | os.PathLike[str], *, inputs: Sequence[str | os.PathLike[str]] = ()
) -> Path:
    """``path`` if a file may be written there (absent or a regular file, not overlapping
    ``inputs``: :func:`refuse_overlap`), else one-line ``SpecboundError``: a FIFO, device,
    socket or directory is refused before anything opens it (opening a FIFO blocks forever;
    replacing ``/dev/null`` would replace the device)."""
    refuse_empty(path, "file")
    path = Path(path)
    check_name_length(path)
    kind = output_file_kind(path)
    if kind is not None:
        raise SpecboundError(
            Param("out", str(path)), f" is {kind}, not a regular file; choose another file name"
        )
    refuse_overlap(path, inputs)
    return path


def refuse_empty(path: str | os.PathLike[str], what: str) -> None:
    """Refuse (one-line ``SpecboundError``) an empty output path: ``Path("")`` is the current
    folder, which nobody named."""
    if os.fspath(path) == "":
        raise SpecboundError(Param("out", "''"), f" is empty; name a {what} to write")


def check_name_length(path: str | os.PathLike[str]) -> None:
    """Refuse (one-line ``SpecboundError``) a ``path`` with a component longer than its file
    system allows (``NAME_MAX`` of the nearest existing folder, 255 bytes where unknown): the
    final rename would fail only after all the work."""
    p = Path(path)
    parent = next((q for q in Path(os.path.abspath(p)).parents if q.is_dir()), Path("/"))
    try:
        name_max = os.pathconf(parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    for part in p.parts:
        n = len(os.fsencode(part))
        if n > name_max:
            raise SpecboundError(
                Param("out", str(p)), f": a name of {n} bytes, longer than the {name_max} the "
                "file system allows; choose a shorter name"
            )  # fmt: skip


@contextlib.contextmanager
def atomic_file(
    path: str | os.PathLike[str], mode: str = "wb", *, sync: bool = False
) -> Iterator[IO[Any]]:
    """Yield a file object on an owner-marked temp file beside ``path`` (:func:`temp_name`);
    on success it gets :func:`file_mode` and is renamed over ``path`` (``fsync`` first when
    ``sync``). The one place specbound replaces a file.

    ``path`` must be absent or a regular file (:func:`check_output_file`). On any error the
    temp file is removed and ``path`` is left as it was. OSErrors propagate (callers decide
    whether a failed write matters, e.g. the cache ignores it).
    """
    path = check_output_file(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / temp_name()
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """``text`` (UTF-8) written to ``path`` through :func:`atomic_file`."""
    with atomic_file(path, "w") as fh:
        fh.write(text)


#: The page of a results folder: report/ renders its text, :func:`write_report_page` writes it.
REPORT_PAGE = "report.html"


def write_report_page(folder: str | os.PathLike[str], html: str) -> Path:
    """Write ``html``, a page report/ rendered, to ``folder``/report.html through
    :func:`atomic_write_text` (the one writer of a page); returns its path."""
    path = Path(folder) / REPORT_PAGE
    atomic_write_text(path, html)
    return path


def write_files(folder: str | os.PathLike[str], files: Mapping[str, bytes | str]) -> list[Path]:
    """Write each of ``files`` (relative path -> bytes, or text such as a page's report.html)
    into ``folder`` through :func:`atomic_file` / :func:`atomic_write_text`, its subfolders
    made; returns the paths, in order."""
    paths = []
    for name, data in files.items():
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise ValueError(f"{name!r} is not a path inside the folder")
        path = Path(folder) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            atomic_write_text(path, data)
        else:
            with atomic_file(path, "wb") as fh:
                fh.write(data)
        paths.append(path)
    return paths


def copy_file(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Copy ``src`` byte for byte to ``dst`` through :func:`atomic_file` (an input a folder
    keeps beside its results, e.g. a study's claims.csv)."""
    with open(src, "rb") as fin, atomic_file(dst) as fout:
        shutil.copyfileobj(fin, fout)
