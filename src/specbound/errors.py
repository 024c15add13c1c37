"""Errors specbound raises for bad input. Each message is one line naming the file or tensor.

``SpecboundTypeError`` / ``SpecboundValueError`` are what :mod:`specbound.validation` raises for
a bad argument: they are also ``TypeError`` / ``ValueError``, as Python code expects.

The one error rule: a library message names the Python parameter (``workers must be ...``,
``out=/tmp/x is not empty``), never a command-line flag. It does so with a :class:`Param` part
(``SpecboundError(Param("workers"), " must be ...")``); ``str(error)`` writes the Python name,
and the CLI alone writes the flag instead (``--workers must be ...``), through its table of
parameter -> flag (:func:`specbound.cli.app.cli_message`), never by rewriting message text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Param:
    """A Python parameter named inside an error message.

    ``str(p)``: ``name``, or ``name=value`` when ``value`` is given (``init=/tmp/x``; an empty
    value gives ``init=``). The CLI shows the parameter's flag instead: ``--init`` or
    ``--init /tmp/x``.
    """

    name: str
    value: str | None = None

    def __str__(self) -> str:
        return self.name if self.value is None else f"{self.name}={self.value}"

    def as_flag(self, flag: str) -> str:
        """The part as the CLI writes it, with ``flag`` for the parameter."""
        return flag if self.value is None else f"{flag} {self.value}"


def _joined(parts: Sequence[object], show: Callable[[object], str]) -> str:
    return " ".join("".join(show(p) for p in parts).split())


#: How a caller names a parameter in a message: ``flag(name)``, or None for its Python name.
Spelling = Callable[[str], "str | None"]


def spelled(parts: Sequence[object], flag: Spelling | None = None) -> str:
    """``parts`` (strings, and :class:`Param` for each parameter named) as one line: each
    parameter ``p`` written ``flag(p.name)`` (a CLI flag) where that is not None, else by its
    Python name. For a message that is not raised (a skip reason, a note), as
    :meth:`SpecboundError.render` for one that is."""

    def show(part: object) -> str:
        if isinstance(part, Param) and flag is not None:
            f = flag(part.name)
            if f is not None:
                return part.as_flag(f)
        return str(part)

    return _joined(parts, show)


class SpecboundError(ValueError):
    """A user-facing error: the message says what is wrong and what to do.

    ``SpecboundError(*parts)``: the message is the parts joined (strings, and :class:`Param`
    for each Python parameter it names), on one line. The CLI prints ``error: <message>`` (with
    flags for the parameters, :meth:`render`) and exits with code 2, without a traceback.
    """

    def __init__(self, *parts: object) -> None:
        self.parts = parts
        super().__init__(_joined(parts, str))

    def render(self, flag: Callable[[str], str | None]) -> str:
        """The message with each parameter ``p`` written ``flag(p.name)`` (a CLI flag), or by its
        Python name where ``flag`` gives None."""
        return spelled(self.parts, flag)


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
    device", "name too long", "not enough memory", ...), and what to do (for memory: a machine
    with more, not free disk space)."""
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
        errno.ENOMEM: "not enough memory",
    }
    reason = words.get(exc.errno or -1) or exc.strerror or type(exc).__name__
    path = exc.filename if exc.filename is not None else "a file"
    if exc.errno == errno.ENOMEM:
        return (
            f"cannot {action} {path}: {reason} (to map it or to read it); close other programs, "
            "raise the memory limit (ulimit -v) or use a machine with more memory"
        )
    return f"cannot {action} {path}: {reason}; free space, shorten the path or choose another one"
