"""Table-driven checks: one test walks a table of cases and fails once, naming every case that
failed (instead of one collected test item per case).

``check_each(cases, check)`` calls ``check(case)`` for each case; an ``AssertionError``, a
``pytest.fail``/``pytest.raises`` failure or any other exception is recorded against the case's
label and the walk goes on. At the end one assertion lists every failed case with its message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import pytest

C = TypeVar("C")


def failures(
    cases: Iterable[C], check: Callable[[C], object], label: Callable[[C], str] = repr
) -> list[str]:
    """``label(case): what went wrong`` for each case whose ``check`` did not pass."""
    bad = []
    for case in cases:
        try:
            check(case)
        except (Exception, pytest.fail.Exception) as e:
            message = str(e).strip() or type(e).__name__
            bad.append(f"{label(case)}: {type(e).__name__}: {message}")
    return bad


def check_each(
    cases: Iterable[C], check: Callable[[C], object], label: Callable[[C], str] = repr
) -> None:
    """Run ``check`` on every case; fail once, naming each case that failed."""
    cases = list(cases)
    assert cases, "an empty table checks nothing"
    bad = failures(cases, check, label)
    assert bad == [], f"{len(bad)} of {len(cases)} cases failed:\n" + "\n".join(bad)
