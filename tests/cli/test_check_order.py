"""Without matplotlib (the plot extra), ``correlate`` and ``trajectory`` still tell a bad input
first: the cheap input checks (arguments, ``--out``, the folders or track read) run before the
extra is required; with good inputs the missing extra is the one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _without_matplotlib(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``specbound ARGS`` in a fresh interpreter where ``import matplotlib`` fails."""
    code = (
        "import sys; sys.modules['matplotlib'] = None; "
        "from specbound.cli import main; main(sys.argv[1:])"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def _one_line(r: subprocess.CompletedProcess[str]) -> str:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


def _zoo(root: Path) -> Path:
    """A zoo folder (its contents are never read: every case is refused before)."""
    root.mkdir()
    (root / "zoo.csv").write_text("model,train_acc,test_acc\nm1,1.0,0.5\n")
    return root


def test_correlate_tells_an_overlapping_out_before_the_missing_extra(tmp_path: Path) -> None:
    zoo = _zoo(tmp_path / "zoo")
    line = _one_line(_without_matplotlib("correlate", zoo, "--out", zoo / "results"))
    assert "lies inside the input" in line and "matplotlib" not in line
    line = _one_line(_without_matplotlib("correlate", zoo, "--out", tmp_path / "o"))
    assert "matplotlib" in line  # good inputs: the extra is what is missing
    assert not (tmp_path / "o").exists()


def test_correlate_tells_a_bad_correlate_folder_before_the_missing_extra(tmp_path) -> None:
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "correlate.json").write_text("{not json")
    (folder / "models.csv").write_text("model\n")
    line = _one_line(_without_matplotlib("correlate", folder, "--out", tmp_path / "o"))
    assert "correlate.json" in line and "matplotlib" not in line


def test_trajectory_tells_a_bad_track_before_the_missing_extra(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "track.csv").write_text("step\n0\n")
    line = _one_line(_without_matplotlib("trajectory", run, "--out", tmp_path / "o"))
    assert "matplotlib" not in line
    line = _one_line(_without_matplotlib("trajectory", run, "--out", run))
    assert "contains the input" in line
