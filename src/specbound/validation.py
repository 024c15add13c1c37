"""Argument checks for public functions, in the manner of scikit-learn's ``check_scalar``.

Each check returns the value normalised to a plain Python type, or raises an error whose one-line
message names the parameter, the value it got and what was expected:

- wrong type: :class:`~specbound.errors.SpecboundTypeError` (also a ``TypeError``);
- wrong value: :class:`~specbound.errors.SpecboundValueError` (also a ``ValueError``).

Integers are Python ``int`` and numpy integers alike (``np.int64(3)`` is accepted everywhere
``3`` is); ``bool`` is never an integer or a real here (``True`` as a count is a bug).
Library messages name the Python parameter (a :class:`~specbound.errors.Param` part); the CLI
alone maps them to its flags.

The public API states its parameters declaratively, in the manner of scikit-learn's
``validate_params``: ``@validate_params({"grid_m": [None, Interval(int, 1, MAX_GRID_M)],
"measures": [None, Names(measure_names)]})`` checks (and normalises) each argument once, at the
boundary, before any work; a dataclass does the same in ``__post_init__`` with
:func:`validate_fields`. The constraints: :class:`Interval` (int or real, open or closed ends),
:class:`Options` (a fixed choice), :class:`Names` (a list of names; a bare string is one name,
never its letters), :class:`Boolean`, :class:`Text`, :class:`PathLike` (never ``""``),
:class:`Paths` (a list of them; a bare path is one), :class:`IsCallable`, :class:`Satisfies`
(a check function) and ``None`` (None accepted). The CLI does not check again: its errors are
these, with flags for the parameters.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from .config import usable_cpus
from .errors import Param, SpecboundError, SpecboundTypeError, SpecboundValueError

T = TypeVar("T")

__all__ = [
    "WORKERS",
    "Boolean",
    "Constraint",
    "Constraints",
    "Interval",
    "IsCallable",
    "Names",
    "Options",
    "PathLike",
    "Paths",
    "Satisfies",
    "Text",
    "check_bool",
    "check_choice",
    "check_int",
    "check_param",
    "check_params",
    "check_real",
    "max_processes",
    "validate_fields",
    "validate_params",
]


def _type_name(value: Any) -> str:
    return type(value).__name__


def _is_int(value: Any) -> bool:
    """Python or numpy integer, not bool (``numpy.bool_`` is no ``numbers.Integral``)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_whole_float(value: Any) -> bool:
    """A Python or numpy float (not an int, not a bool) that is a finite whole number."""
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, numbers.Integral)
        and math.isfinite(value)
        and float(value).is_integer()
    )


def check_int(value: Any, name: str, *, min: int | None = None, max: int | None = None) -> int:
    """``value`` as a Python ``int``, checked ``min <= value <= max`` (bounds inclusive, None:
    unbounded).

    Accepts ``int`` and numpy integers; refuses ``bool``, floats (even ``3.0``) and strings with
    ``SpecboundTypeError``; out of range: ``SpecboundValueError``.
    """
    if not _is_int(value):
        raise SpecboundTypeError(
            Param(name), f" must be an integer, got {value!r} ({_type_name(value)})"
        )
    v = int(value)
    if min is not None and v < min:
        raise SpecboundValueError(Param(name), f" must be an integer >= {min}, got {v}")
    if max is not None and v > max:
        raise SpecboundValueError(Param(name), f" must be an integer <= {max}, got {v}")
    return v


def check_bool(value: Any, name: str) -> bool:
    """``value`` as a Python ``bool``.

    Accepts ``True``/``False`` and ``numpy.bool_``; refuses everything else, ``0``, ``1``,
    ``"yes"`` and ``None`` included, with ``SpecboundTypeError``.
    """
    np = sys.modules.get("numpy")  # a numpy bool exists only once numpy is loaded
    if isinstance(value, bool) or (np is not None and isinstance(value, np.bool_)):
        return bool(value)
    raise SpecboundTypeError(
        Param(name), f" must be True or False, got {value!r} ({_type_name(value)})"
    )


def _fmt(x: float) -> str:
    return repr(int(x)) if float(x).is_integer() and abs(x) < 1e16 else repr(float(x))


def check_real(
    value: Any,
    name: str,
    *,
    min: float | None = None,
    max: float | None = None,
    finite: bool = True,
    include_min: bool = True,
    include_max: bool = True,
) -> float:
    """``value`` as a Python ``float``, checked against ``[min, max]`` (each end open when
    ``include_min`` / ``include_max`` is False; None: unbounded).

    Accepts Python and numpy reals and integers; refuses ``bool``, complex numbers and strings
    (``SpecboundTypeError``). With ``finite`` (the default) NaN and ±inf are refused
    (``SpecboundValueError``); NaN is refused whenever a bound is given.
    """
    if (
        not isinstance(value, numbers.Real)
        or isinstance(value, bool)
        or type(value).__name__ == "bool_"
    ):
        raise SpecboundTypeError(
            Param(name), f" must be a real number, got {value!r} ({_type_name(value)})"
        )
    try:
        v = float(value)
    except (OverflowError, ValueError):  # an int beyond float64
        raise SpecboundValueError(
            Param(name), f" must be a finite real number, got {value!r} (beyond float64)"
        ) from None
    if finite and not math.isfinite(v):
        raise SpecboundValueError(Param(name), f" must be a finite real number, got {v!r}")
    if math.isnan(v) and (min is not None or max is not None):
        raise SpecboundValueError(Param(name), " must be a real number, got nan")
    if min is not None and (v < min or (v == min and not include_min)):
        op = ">=" if include_min else ">"
        raise SpecboundValueError(Param(name), f" must be {op} {_fmt(min)}, got {v!r}")
    if max is not None and (v > max or (v == max and not include_max)):
        op = "<=" if include_max else "<"
        raise SpecboundValueError(Param(name), f" must be {op} {_fmt(max)}, got {v!r}")
    return v


def check_choice(value: T, name: str, choices: Iterable[Any]) -> T:
    """``value`` itself when it is one of ``choices`` (compared with ``==``), else
    ``SpecboundValueError`` listing the choices.

    A string choice list refuses non-strings with ``SpecboundTypeError`` (``1`` is no mode name).
    """
    options = list(choices)
    if options and all(isinstance(c, str) for c in options) and not isinstance(value, str):
        raise SpecboundTypeError(
            Param(name),
            f" must be one of {', '.join(options)}; got {value!r} ({_type_name(value)})",
        )
    try:
        ok = value in options
    except TypeError:  # an unhashable/uncomparable value
        ok = False
    if not ok:
        shown = ", ".join(str(c) for c in options)
        raise SpecboundValueError(Param(name), f" must be one of {shown}; got {value!r}")
    return value


# --- the declarative form: constraints per parameter, checked once at the API boundary -------


class Constraint:
    """One accepted form of a parameter. ``convert(value, name)`` returns the value normalised
    (``np.int64(3)`` -> ``3``, ``"a"`` -> ``["a"]``) or raises ``SpecboundTypeError`` (not this
    form at all) / ``SpecboundValueError`` (this form, a wrong value); ``str(c)`` says in words
    what it accepts ("an integer >= 1"), for the message when no constraint of a list holds.
    ``detailed``: its value errors say more than ``str(c)`` (they are shown as they are)."""

    detailed = True

    def convert(self, value: Any, name: str) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def __str__(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


def _bound(b: Any) -> Any:
    return b() if callable(b) else b


class Interval(Constraint):
    """An ``int`` or a real in [lo, hi] (``closed``: "both", "left", "right" or "neither" ends
    included; None: unbounded; a bound may be a function, read at each check, e.g. the CPU
    count). ``Interval(int, ...)`` refuses floats, bools and strings; ``whole_floats=True``
    accepts a float that is a whole number (``3.0`` -> ``3``, never ``2.5``). ``Interval(float,
    ...)`` accepts ints and reals, finite only (see :func:`check_real`)."""

    def __init__(
        self,
        kind: type,
        lo: Any = None,
        hi: Any = None,
        *,
        closed: str = "both",
        whole_floats: bool = False,
    ) -> None:
        if kind not in (int, float) or closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"Interval({kind!r}, closed={closed!r})")
        self.kind, self.lo, self.hi, self.closed = kind, lo, hi, closed
        self.detailed = False
        self.whole_floats = whole_floats

    def convert(self, value: Any, name: str) -> Any:
        lo, hi = _bound(self.lo), _bound(self.hi)
        if self.kind is int:
            if self.whole_floats and _is_whole_float(value):
                value = int(value)
            lo_i = None if lo is None else (lo if self.closed in ("both", "left") else lo + 1)
            hi_i = None if hi is None else (hi if self.closed in ("both", "right") else hi - 1)
            return check_int(value, name, min=lo_i, max=hi_i)
        return check_real(
            value,
            name,
            min=lo,
            max=hi,
            include_min=self.closed in ("both", "left"),
            include_max=self.closed in ("both", "right"),
        )

    def __str__(self) -> str:
        lo, hi = _bound(self.lo), _bound(self.hi)
        what = "an integer" if self.kind is int else "a real number"
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        if lo is None and hi is None:
            return what
        if hi is None:
            return f"{what} {'>=' if left == '[' else '>'} {_fmt(lo)}"
        if lo is None:
            return f"{what} {'<=' if right == ']' else '<'} {_fmt(hi)}"
        return f"{what} in {left}{_fmt(lo)}, {_fmt(hi)}{right}"


class Options(Constraint):
    """One of the given values (strings: a name out of a fixed list)."""

    detailed = False

    def __init__(self, *choices: Any) -> None:
        self.choices = choices

    def convert(self, value: Any, name: str) -> Any:
        return check_choice(value, name, self.choices)

    def __str__(self) -> str:
        shown = [repr(c) for c in self.choices]
        return shown[0] if len(shown) == 1 else "one of " + ", ".join(shown)


class Names(Constraint):
    """A list of names (strings), returned as a ``list``. A bare string is one name, or several
    separated by commas (``"htsr_alpha"`` -> ``["htsr_alpha"]``, never its letters). ``known``:
    the accepted names (or a function giving them); an unknown one is refused by name."""

    def __init__(self, known: Iterable[str] | Any = None, *, what: str = "name") -> None:
        self.known, self.what = known, what

    def convert(self, value: Any, name: str) -> list[str]:
        if isinstance(value, str):
            items: list[Any] = [s.strip() for s in value.split(",") if s.strip()]
        elif isinstance(value, Iterable) and not isinstance(value, bytes | dict):
            items = list(value)
        else:
            raise SpecboundTypeError(
                Param(name), f" must be a list of {self.what}s, got {value!r} ({_type_name(value)})"
            )
        bad = [v for v in items if not isinstance(v, str)]
        if bad:
            raise SpecboundTypeError(
                Param(name),
                f" must be a list of {self.what}s (strings), got {bad[0]!r} "
                f"({_type_name(bad[0])}) in it",
            )
        known = _bound(self.known)
        if known is not None:
            known = list(known)
            unknown = [v for v in items if v not in known]
            if unknown:
                raise SpecboundValueError(
                    Param(name),
                    f": unknown {self.what} '{unknown[0]}'; choose from {', '.join(known)}",
                )
        return items

    def __str__(self) -> str:
        return f"a list of {self.what}s"


class Boolean(Constraint):
    """``True`` or ``False`` (numpy bools too; never 0, 1 or a string)."""

    def convert(self, value: Any, name: str) -> bool:
        return check_bool(value, name)

    def __str__(self) -> str:
        return "True or False"


class Text(Constraint):
    """A string, non-empty unless ``empty=True``."""

    def __init__(self, *, empty: bool = False) -> None:
        self.empty = empty

    def convert(self, value: Any, name: str) -> str:
        if not isinstance(value, str):
            raise SpecboundTypeError(
                Param(name), f" must be a string, got {value!r} ({_type_name(value)})"
            )
        if not value and not self.empty:
            raise SpecboundValueError(Param(name), " must be a non-empty string, got ''")
        return value

    def __str__(self) -> str:
        return "a string"


class PathLike(Constraint):
    """A file-system path (``str`` or ``os.PathLike``), returned unchanged; the empty path
    (``""``: "the current directory" by accident) is refused."""

    def convert(self, value: Any, name: str) -> Any:
        if not isinstance(value, str | os.PathLike):
            raise SpecboundTypeError(
                Param(name),
                f" must be a path (str or os.PathLike), got {value!r} ({_type_name(value)})",
            )
        if os.fspath(value) in ("", b""):
            raise SpecboundValueError(Param(name), " must be a non-empty path, got ''")
        return value

    def __str__(self) -> str:
        return "a path"


class Paths(Constraint):
    """A list of paths (each a :class:`PathLike`), as a ``list``; a bare path is one path."""

    def convert(self, value: Any, name: str) -> list[Any]:
        if isinstance(value, str) or hasattr(value, "__fspath__"):
            value = [value]
        elif not isinstance(value, Iterable) or isinstance(value, bytes | dict):
            what = f"{value!r} ({_type_name(value)})"
            raise SpecboundTypeError(Param(name), f" must be a list of paths, got {what}")
        return [PathLike().convert(v, name) for v in value]

    def __str__(self) -> str:
        return "a list of paths"


class IsCallable(Constraint):
    """A callable (a function, a bound method, a class with ``__call__``)."""

    def convert(self, value: Any, name: str) -> Any:
        if not callable(value):
            raise SpecboundTypeError(
                Param(name), f" must be callable, got {value!r} ({_type_name(value)})"
            )
        return value

    def __str__(self) -> str:
        return "a callable"


class Satisfies(Constraint):
    """What ``check(value)`` accepts: it returns the normalised value (None: the value itself)
    or raises a SpecboundError; ``words`` describe it. For the checks that need more than a
    type and a range (a device this machine has); ``named``: it is ``check(value, name)``."""

    def __init__(self, check: Callable[..., Any], words: str, *, named: bool = False) -> None:
        self.check, self.words, self.named = check, words, named

    def convert(self, value: Any, name: str) -> Any:
        got = self.check(value, name) if self.named else self.check(value)
        return value if got is None else got

    def __str__(self) -> str:
        return self.words


Constraints = Mapping[str, Sequence["Constraint | None"]]


def max_processes() -> int:
    """The most worker processes (or threads) accepted anywhere: 4 x the usable CPUs."""
    return 4 * usable_cpus()


#: A number of worker processes: an int in 1..``max_processes()`` (read at each check).
WORKERS: Sequence[Constraint | None] = (Interval(int, 1, max_processes),)


def check_param(value: Any, name: str, constraints: Sequence[Constraint | None]) -> Any:
    """``value`` converted by the first of ``constraints`` it meets (None in the list: None is
    accepted). When none holds: the sole constraint's own error ("grid_m must be an integer <=
    10000, got 20000"), or a constraint's own detail when it took the value's type and says more
    than a range ("measures: unknown measure 'x'", "device 'cuda' requested but no CUDA GPU");
    else one error listing every accepted form ("every must be 'auto' or an integer >= 1, got
    0"): ``SpecboundValueError`` when some form took the value's type, else
    ``SpecboundTypeError``."""
    if value is None and None in constraints:
        return None
    forms = [c for c in constraints if c is not None]
    errors: list[SpecboundError] = []
    for c in forms:
        try:
            return c.convert(value, name)
        except SpecboundError as exc:
            if len(forms) == 1 or (c.detailed and not isinstance(exc, SpecboundTypeError)):
                raise
            errors.append(exc)
    words = ["None" if c is None else str(c) for c in constraints]
    accepted = ", ".join(words[:-1]) + f" or {words[-1]}"
    kind = (
        SpecboundTypeError
        if all(isinstance(e, SpecboundTypeError) for e in errors)
        else SpecboundValueError
    )
    raise kind(Param(name), f" must be {accepted}, got {value!r} ({_type_name(value)})")


def check_params(values: Mapping[str, Any], constraints: Constraints) -> dict[str, Any]:
    """Each named value converted by :func:`check_param` (names without constraints: as is)."""
    return {
        k: check_param(v, k, constraints[k]) if k in constraints else v for k, v in values.items()
    }


F = TypeVar("F", bound=Callable[..., Any])


def validate_params(constraints: Constraints) -> Callable[[F], F]:
    """Decorator: the function's arguments are checked against ``constraints`` (parameter ->
    list of :class:`Constraint`, None for "None is accepted") before its body runs, and replaced
    by their normalised values. Messages name the Python parameter (the CLI shows its flag).

    >>> @validate_params({"n": [Interval(int, 1)]})
    ... def f(n): return n
    >>> f(n=0)
    Traceback (most recent call last):
    specbound.errors.SpecboundValueError: n must be an integer >= 1, got 0
    """

    def decorate(fn: F) -> F:
        sig = inspect.signature(fn)
        missing = set(constraints) - set(sig.parameters)
        if missing:
            raise TypeError(f"{fn.__qualname__} has no parameter {sorted(missing)[0]!r}")

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(*args, **kwargs)  # a wrong call: Python's own TypeError
            for k, v in bound.arguments.items():
                if k in constraints:
                    bound.arguments[k] = check_param(v, k, constraints[k])
            return fn(*bound.args, **bound.kwargs)

        wrapper.__signature__ = sig  # type: ignore[attr-defined]
        wrapper.parameter_constraints = constraints  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


def validate_fields(obj: Any, constraints: Constraints) -> None:
    """A dataclass's ``__post_init__`` check: each field in ``constraints`` checked as by
    :func:`check_param` and set to its normalised value (frozen dataclasses too)."""
    for k, cs in constraints.items():
        object.__setattr__(obj, k, check_param(getattr(obj, k), k, cs))
