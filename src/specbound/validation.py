"""Argument checks for public functions, in the manner of scikit-learn's ``check_scalar``.

Each check returns the value normalised to a plain Python type, or raises an error whose one-line
message names the parameter, the value it got and what was expected:

- wrong type: :class:`~specbound.errors.SpecboundTypeError` (also a ``TypeError``);
- wrong value: :class:`~specbound.errors.SpecboundValueError` (also a ``ValueError``).

Integers are Python ``int`` and numpy integers alike (``np.int64(3)`` is accepted everywhere
``3`` is); ``bool`` is never an integer or a real here (``True`` as a count is a bug).
Library messages name the Python parameter; the CLI maps them to its flags.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any, TypeVar

from .errors import SpecboundTypeError, SpecboundValueError

T = TypeVar("T")

__all__ = ["check_bool", "check_choice", "check_int", "check_real"]


def _type_name(value: Any) -> str:
    return type(value).__name__


def _is_int(value: Any) -> bool:
    """Python or numpy integer, not bool (``numpy.bool_`` is no ``numbers.Integral``)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_int(value: Any, name: str, *, min: int | None = None, max: int | None = None) -> int:
    """``value`` as a Python ``int``, checked ``min <= value <= max`` (bounds inclusive, None:
    unbounded).

    Accepts ``int`` and numpy integers; refuses ``bool``, floats (even ``3.0``) and strings with
    ``SpecboundTypeError``; out of range: ``SpecboundValueError``.
    """
    if not _is_int(value):
        raise SpecboundTypeError(f"{name} must be an integer, got {value!r} ({_type_name(value)})")
    v = int(value)
    if min is not None and v < min:
        raise SpecboundValueError(f"{name} must be an integer >= {min}, got {v}")
    if max is not None and v > max:
        raise SpecboundValueError(f"{name} must be an integer <= {max}, got {v}")
    return v


def check_bool(value: Any, name: str) -> bool:
    """``value`` as a Python ``bool``.

    Accepts ``True``/``False`` and ``numpy.bool_``; refuses everything else (``1``, ``"yes"``,
    ``None``) with ``SpecboundTypeError``: a flag is never guessed from a truthy value.
    """
    kind = type(value)
    numpy_bool = kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")  # numpy 2, 1
    if not (isinstance(value, bool) or numpy_bool):
        raise SpecboundTypeError(
            f"{name} must be True or False, got {value!r} ({_type_name(value)})"
        )
    return bool(value)


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
            f"{name} must be a real number, got {value!r} ({_type_name(value)})"
        )
    try:
        v = float(value)
    except (OverflowError, ValueError):  # an int beyond float64
        raise SpecboundValueError(
            f"{name} must be a finite real number, got {value!r} (beyond float64)"
        ) from None
    if finite and not math.isfinite(v):
        raise SpecboundValueError(f"{name} must be a finite real number, got {v!r}")
    if math.isnan(v) and (min is not None or max is not None):
        raise SpecboundValueError(f"{name} must be a real number, got nan")
    if min is not None and (v < min or (v == min and not include_min)):
        op = ">=" if include_min else ">"
        raise SpecboundValueError(f"{name} must be {op} {_fmt(min)}, got {v!r}")
    if max is not None and (v > max or (v == max and not include_max)):
        op = "<=" if include_max else "<"
        raise SpecboundValueError(f"{name} must be {op} {_fmt(max)}, got {v!r}")
    return v


def check_choice(value: T, name: str, choices: Iterable[Any]) -> T:
    """``value`` itself when it is one of ``choices`` (compared with ``==``), else
    ``SpecboundValueError`` listing the choices.

    A string choice list refuses non-strings with ``SpecboundTypeError`` (``1`` is no mode name).
    """
    options = list(choices)
    if options and all(isinstance(c, str) for c in options) and not isinstance(value, str):
        raise SpecboundTypeError(
            f"{name} must be one of {', '.join(options)}; got {value!r} ({_type_name(value)})"
        )
    try:
        ok = value in options
    except TypeError:  # an unhashable/uncomparable value
        ok = False
    if not ok:
        shown = ", ".join(str(c) for c in options)
        raise SpecboundValueError(f"{name} must be one of {shown}; got {value!r}")
    return value
