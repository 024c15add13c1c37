"""Every count and version the README states equals what the code says: preset sizes and step
caps (from the zoo task registry), the protocol version (from the code that writes
correlate.json), the built-in architectures (adapter registry), the measures (measure
registry), the BERT Miniatures, the bootstrap floor. A number changed in the code and not in
the README (or the other way round) fails here."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SRC = ROOT / "src" / "specbound"


def preset_sizes(preset: str) -> set[int]:
    """The number of models of ``preset`` on each task (the product of its axes' lengths)."""
    from specbound.studies.zoo.tasks import TASKS

    return {math.prod(len(v) for v in t.presets[preset].axes.values()) for t in TASKS.values()}


def code_protocol() -> int:
    """The protocol version the code writes into correlate.json / study.json: every literal
    ``"protocol": N`` and every ``PROTOCOL... = N`` constant under src/ (the newest)."""
    literal = re.compile(r"\"protocol\":\s*(\d+)")
    constant = re.compile(r"^PROTOCOL\w*\s*(?::\s*\w+\s*)?=\s*(\d+)", re.M)
    found = set()
    for p in SRC.rglob("*.py"):
        text = p.read_text()
        found |= {int(n) for n in literal.findall(text) + constant.findall(text)}
    assert found, "no protocol version found in the code"
    return max(found)


def test_preset_sizes() -> None:
    (standard,) = preset_sizes("standard")  # the same on every task, as the README says
    (fixed,) = preset_sizes("fixed-n")
    (v1,) = preset_sizes("standard-v1")
    (tiny,) = preset_sizes("tiny")
    assert f'# preset "standard": {standard} models' in README
    assert f"`standard` ({standard} models:" in README
    assert f"`fixed-n` ({fixed}\nmodels:" in README or f"`fixed-n` ({fixed} models:" in README
    assert f"`standard-v1` (the {v1}-model grids" in README
    assert f"`tiny` ({tiny} models:" in README
    assert f"--preset tiny --out z/           # {tiny} models" in README
    # no other "N models" beside a preset name
    for n in re.findall(r"preset \"standard\": (\d+) models", README):
        assert int(n) == standard


def test_step_caps_and_sizes_of_the_standard_grids() -> None:
    from specbound.studies.zoo.tasks import TASKS

    for name, task in TASKS.items():
        row = next(ln for ln in README.splitlines() if ln.startswith(f"| `{name}` |"))
        p = task.presets["standard"]
        assert row.endswith(f"; {p.max_steps} steps |"), row
        sizes = ", ".join(f"{v:g}" for v in p.axes[task.size_axis])
        assert f"{task.size_axis} ({sizes})" in row, row
        assert f"seed ({len(p.axes['seed'])})" in row, row
    tiny = TASKS["digits"].presets["tiny"]
    assert f"every one converges within {tiny.max_steps} steps" in README
    others = {t.presets["tiny"].max_steps for n, t in TASKS.items() if n != "digits"}
    (steps,) = others
    assert f"on the other two tasks {steps}\nsteps" in README or f"tasks {steps} steps" in README


def test_protocol_version() -> None:
    stated = {int(n) for n in re.findall(r"\*\*Protocol v(\d+)\*\*", README)}
    assert stated == {code_protocol()}


def test_architectures() -> None:
    from specbound.adapters.registry import supported_model_types

    section = README.split("Built-in adapters (`model_type` in config.json):", 1)[1]
    listed = re.findall(r"`([\w-]+)`", section.split(". Each is checked", 1)[0])
    assert sorted(listed) == sorted(supported_model_types())


def test_measures_table() -> None:
    from specbound.measures import measure_names

    table = README.split("| measure | value |", 1)[1].split("\n\n", 1)[0]
    listed = re.findall(r"`(\w+)`", "\n".join(ln.split("|")[1] for ln in table.splitlines()[1:]))
    assert sorted(listed) == sorted(measure_names())


def test_miniatures_and_bootstrap_floor() -> None:
    from specbound.studies.correlate import verdicts
    from specbound.studies.scale.miniatures import MINIATURE_HIDDEN, MINIATURE_LAYERS

    n = len(MINIATURE_LAYERS) * len(MINIATURE_HIDDEN)
    assert f"the paper's {n} BERT Miniatures" in README
    assert f"`--bootstrap` below {verdicts.MIN_BOOTSTRAP} is refused" in README


@pytest.mark.parametrize("venv", [".venv-test", ".venv-core"])
def test_the_test_section_has_its_own_environments(venv: str) -> None:
    section = README.split("\n## Tests\n", 1)[1].split("\n## ", 1)[0]
    assert f"python3 -m venv {venv} " in section
    assert "python3 -m venv .venv " not in section  # not the quick start's environment
    assert "Measured:" in section  # the suite's duration (filled in by whoever measures it)
