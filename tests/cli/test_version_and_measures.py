"""``specbound version`` and ``specbound measures``: what they print."""

from __future__ import annotations

import json
from pathlib import Path

import tomllib

from specbound._version import __version__
from specbound.measures import get_measure, measure_names
from tests.support.cli_runner import run_cli

ROOT = Path(__file__).resolve().parents[2]


def test_version_is_the_projects() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    r = run_cli("version")
    assert r.code == 0 and r.err == ""
    assert r.out == f"{__version__}\n" and __version__ == project["version"]


def test_measures_lists_each_measure_with_its_description() -> None:
    r = run_cli("measures")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert [ln.split()[0] for ln in lines] == measure_names()
    for line, name in zip(lines, measure_names(), strict=True):
        assert line.endswith(get_measure(name).description)
    rows = json.loads(run_cli("measures", "--json").out)
    assert [x["name"] for x in rows] == measure_names()
    assert {x["name"] for x in rows if x["needs_init"]} == {"distance_from_init"}
