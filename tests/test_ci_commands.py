"""The README's two test commands are exactly the commands .ci/run runs, and the second runs the
whole suite (not one file) in the core-only environment."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Tests\n", 1)[1]
    block = re.search(r"```bash\n(.*?)\n```", section, re.S)
    assert block is not None, "README's Tests section has no bash block"
    return block.group(1).splitlines()


def _ci_commands() -> list[str]:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    return [l.removesuffix(" || exit 1") for l in lines if l.startswith("python3 -m venv ")]


def test_readme_and_ci_run_the_same_commands() -> None:
    readme = _readme_commands()
    assert len(readme) == 2
    assert readme == _ci_commands()


def test_core_command_runs_the_whole_suite() -> None:
    core = _readme_commands()[1]
    assert "--noconftest" not in core
    assert core.endswith("-m pytest -n 2 -q -p no:cacheprovider"), core
    # conftest.py and property tests need hypothesis; -n 2 needs pytest-xdist
    assert "pytest pytest-xdist hypothesis" in core


def test_both_commands_run_the_suite_on_two_workers() -> None:
    full, core = _readme_commands()
    assert "python -m pytest -n 2 -q &&" in full and "-m pytest -n 2 -q" in core


def test_the_slow_rule_lists_unmarked_tests_over_the_limit() -> None:
    """``pytest --check-durations`` (by hand) fails on these; CI never times a test."""
    from tests.conftest import SLOW_S, over_the_limit

    durations = {"a": SLOW_S + 5, "b": SLOW_S + 1, "c": SLOW_S, "d": 3 * SLOW_S}
    assert over_the_limit(durations, marked={"d"}) == [("a", SLOW_S + 5), ("b", SLOW_S + 1)]
    assert over_the_limit(durations, marked=set(), limit=10 * SLOW_S) == []
