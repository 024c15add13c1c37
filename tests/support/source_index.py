"""One read and one parse of each source file per test session, for the convention tests.

``modules()`` maps each module of ``src/specbound`` to its file (``""`` is the package itself,
``"io.outdir"`` is ``specbound.io.outdir``); ``text(path)``, ``lines(path)`` and ``tree(path)``
are cached, so the rules in ``tests/test_layout.py`` walk the same parsed trees instead of each
re-reading the package. ``test_files()`` lists the test suite's own Python files.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "specbound"
TESTS = ROOT / "tests"


def _dotted(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@functools.cache
def modules() -> dict[str, Path]:
    """Every module of the package: dotted name below ``specbound`` -> its file."""
    return {_dotted(p, SRC): p for p in sorted(SRC.rglob("*.py"))}


@functools.cache
def test_files() -> tuple[Path, ...]:
    """Every Python file under ``tests/`` (tests, conftest files and support helpers)."""
    return tuple(sorted(TESTS.rglob("*.py")))


@functools.cache
def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@functools.cache
def lines(path: Path) -> tuple[str, ...]:
    return tuple(text(path).splitlines())


@functools.cache
def tree(path: Path) -> ast.Module:
    """The parsed file (shared: callers must not change it)."""
    return ast.parse(text(path), filename=str(path))
