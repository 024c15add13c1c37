"""The one number formatter of every page and terminal table: plain text, no markup.

A value that is not defined (None, NaN, pandas' missing) is written :data:`UNDEFINED`, the word
of the pages' glossary; a positive value beyond the float64 range :data:`BEYOND` (its log10 is
kept elsewhere). Never ``nan``, ``+nan`` or ``inf``. Every formatter here goes through
:func:`number`, which handles those cases once and hands finite floats to its ``spec``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

#: The one way a page or a terminal writes a value that is not defined (NaN, missing).
UNDEFINED = "undefined"
#: How a page writes a cell that has no meaning for its row (a feed-forward matrix's head).
NOT_APPLICABLE = "n/a"
#: How a page writes a positive value beyond the float64 range (its log10 is kept).
BEYOND = "> 1.8e308"
#: ... and a negative one.
BEYOND_NEG = "< -1.8e308"


def as_float(v: Any) -> float:
    """A table cell as a float; NaN when it is no number (None, empty text, a word)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def is_undefined(v: Any) -> bool:
    """None, NaN and pandas' missing values are undefined."""
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return math.isnan(float(v))
    try:
        import pandas as pd

        r = pd.isna(v)
    except (TypeError, ValueError):  # pragma: no cover
        return False
    return bool(r) if isinstance(r, (bool, np.bool_)) else False


def is_number(v: Any) -> bool:
    """An int or float (numpy's included), not a bool."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
        v, (bool, np.bool_)
    )


def number(v: Any, finite: Callable[[float], str]) -> str:
    """``finite(float(v))`` for a finite number; :data:`UNDEFINED` for None/NaN/missing or a
    value that is not a number; :data:`BEYOND` (or its negative) for +-inf."""
    if is_undefined(v):
        return UNDEFINED
    try:
        f = float(v)
    except (TypeError, ValueError):
        return UNDEFINED
    if math.isnan(f):
        return UNDEFINED
    if math.isinf(f):
        return BEYOND if f > 0 else BEYOND_NEG
    return finite(f)


def spec(v: Any, fmt_spec: str) -> str:
    """``format(v, fmt_spec)`` for a finite number (``"+.3g"``, ``".3f"``, ``",.0f"``); the
    undefined and beyond-float64 words otherwise (a sign spec never gives ``+nan``)."""
    return number(v, lambda f: format(f + 0.0, fmt_spec))  # + 0.0: never "-0"


def fixed(v: Any, decimals: int) -> str:
    """``v`` with ``decimals`` decimals and thousands separators, never ``-0.00``."""
    return number(v, lambda f: f"{round(f, decimals) + 0.0:,.{decimals}f}")


def sig3(v: Any) -> str:
    """A measured value with 3 significant digits (``8.21``, ``0.00186``, ``1.86e+04``), never
    rounded to an integer (a whole number, a count, keeps every digit: ``223,775``); bools and
    text as :func:`fmt`."""
    if not is_number(v):
        return fmt(v)

    def finite(f: float) -> str:
        if f == 0:
            return "0"
        if f.is_integer() and abs(f) < 1e15:  # a count (parameters): every digit
            return f"{int(f):,}"
        return f"{f:.3g}"

    return number(v, finite)


def sig_small(v: Any) -> str:
    """A statistic or a difference: 3 decimals, or 3 significant digits below 0.01 (a value
    near 0 never rounds to 0 or across a threshold)."""
    return number(v, lambda f: f"{f:.3g}" if f != 0 and abs(f) < 0.01 else f"{f:.3f}")


def fmt(v: Any, digits: int | None = None) -> str:
    """One format per quantity: integers (counts, parameters) with thousands separators; floats
    with 4 significant digits, from 1e3 to 1e6 rounded to an integer with thousands separators
    (5 significant digits from 1e6 on); ``digits`` fixes the decimals instead; undefined ->
    :data:`UNDEFINED`; +-inf -> beyond float64; text as it is."""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        if digits is not None:
            return fixed(v, digits) if math.isfinite(float(v)) else number(v, str)

        def finite(f: float) -> str:
            if f == 0:  # also -0.0: never "-0"
                return "0"
            if f.is_integer() and abs(f) < 1e15:  # counts (parameters, ranks): every digit
                return f"{int(f):,}"
            if 1e3 <= abs(f) < 1e6:  # 1,890 like 29,376: one format for the whole range
                return f"{f:,.0f}"
            return f"{f:.4g}" if abs(f) < 1e4 else f"{f:.5g}"

        return number(v, finite)
    if is_undefined(v):
        return UNDEFINED
    return str(v)


def percent(share: Any, spec_: str = ".0f") -> str:
    """A share in [0, 1] as a percentage (``42%``)."""
    return number(share, lambda f: f"{100 * f:{spec_}}%")


def interval(lo: Any, hi: Any, digits: int = 2) -> str:
    """``[lo, hi]`` with ``digits`` decimals, or "no interval" when either end is undefined."""
    try:
        a, b = float(lo), float(hi)
    except (TypeError, ValueError):
        return "no interval"
    if not (math.isfinite(a) and math.isfinite(b)):
        return "no interval"
    a, b = round(a, digits) + 0.0, round(b, digits) + 0.0  # never "-0.00"
    return f"[{a:.{digits}f}, {b:.{digits}f}]"
