"""Errors specbound raises for bad input. Each message is one line naming the file or tensor.

``SpecboundTypeError`` / ``SpecboundValueError`` are what :mod:`specbound.validation` raises for
a bad argument: they are also ``TypeError`` / ``ValueError``, as Python code expects.
"""

from __future__ import annotations


class SpecboundError(ValueError):
    """A user-facing error: the message says what is wrong and what to do.

    The CLI prints ``error: <message>`` and exits with code 2, without a traceback.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class SpecboundValueError(SpecboundError):
    """An argument has the right type but a wrong value (out of range, not a known choice)."""


class SpecboundTypeError(SpecboundError, TypeError):
    """An argument has the wrong type (e.g. a float or a bool where an integer is expected)."""


class CheckpointError(SpecboundError):
    """The checkpoint (file, directory, hub id, tensor) cannot be used."""


class ConfigError(SpecboundError):
    """config.json is missing, unsupported or inconsistent with the weights."""


class CacheError(SpecboundError):
    """The spectra cache folder cannot be used (e.g. ``cache clear`` on a read-only folder)."""


def one_line_reason(exc: BaseException) -> str:
    """A failure as one line: a SpecboundError's message, else ``Type: message``."""
    msg = " ".join(str(exc).split()) or type(exc).__name__
    return msg if isinstance(exc, SpecboundError) else f"{type(exc).__name__}: {msg}"


def os_error_line(exc: OSError, action: str = "write") -> str:
    """One line for an OSError: what failed, the path and the cause in words ("no space left on
    device", "name too long", ...), and what to do."""
    import errno

    words = {
        errno.ENOSPC: "no space left on device",
        errno.ENAMETOOLONG: "name too long",
        errno.EROFS: "read-only file system",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EDQUOT: "disk quota exceeded",
        errno.ENOTDIR: "a parent is not a directory",
        errno.EISDIR: "is a directory",
        errno.EMFILE: "too many open files",
    }
    reason = words.get(exc.errno or -1) or exc.strerror or type(exc).__name__
    path = exc.filename if exc.filename is not None else "a file"
    return f"cannot {action} {path}: {reason}; free space, shorten the path or choose another one"
