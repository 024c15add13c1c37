"""What ``import specbound`` and the command line load before any command runs.

Heavy optional packages are imported lazily, inside the functions that need them (their places:
``tests/test_layout.py`` HEAVY_PLACES), and the CLI's command modules import the library inside
the command body: so ``specbound --version`` and ``--help`` start without numpy, pandas, scipy,
jinja2, torch, transformers, matplotlib or Ray. Each check runs in a fresh interpreter (the
test session itself has imported most of them).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

NOT_AT_START = (
    "torch",
    "transformers",
    "matplotlib",
    "ray",
    "pandas",
    "scipy",
    "numpy",
    "jinja2",
    "sklearn",
)


def _loaded_after(statement: str) -> list[str]:
    code = (
        "import json, sys\n"
        f"{statement}\n"
        f"print(json.dumps([m for m in {NOT_AT_START!r} if m in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "statement",
    ["import specbound", "import specbound.cli", "import specbound, specbound.cli.app"],
)
def test_start_path_loads_no_heavy_package(statement: str) -> None:
    assert _loaded_after(statement) == []


def test_the_probe_sees_a_heavy_package() -> None:
    """The check can fail: importing the library's pipeline does load numpy."""
    assert "numpy" in _loaded_after("import specbound.analysis")
