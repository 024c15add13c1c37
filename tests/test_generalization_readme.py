"""The second answer (benchmarks/generalization/README.md) against its committed tables.

Every measure row of the README's tables must be a row that tables.py prints from the committed
correlation.csv / differences.csv files, and every committed interval must hold its estimate.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

HERE = Path(__file__).resolve().parents[1] / "benchmarks" / "generalization"
TABLES = HERE / "tables.py"


def check(readme: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(TABLES), "--check", str(readme)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_readme_rows_are_printed_by_tables_py():
    r = check(HERE / "README.md")
    assert r.returncode == 0, r.stderr


def test_a_changed_number_is_caught(tmp_path):
    text = (HERE / "README.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `norm_based` |"))
    bad = row.replace("[", "[+9.99 ", 1)
    (tmp_path / "README.md").write_text(text.replace(row, bad, 1))
    r = check(tmp_path / "README.md")
    assert r.returncode == 1 and bad in r.stderr


@pytest.mark.parametrize(
    "folder", sorted(p.name for p in (HERE / "results").iterdir() if p.is_dir())
)
def test_committed_intervals_hold_their_estimates(folder):
    d = HERE / "results" / folder
    if (d / "differences.csv").exists():
        diffs = pd.read_csv(d / "differences.csv").dropna(subset=["low"])
        assert ((diffs["low"] <= diffs["delta"]) & (diffs["delta"] <= diffs["high"])).all()
    c = pd.read_csv(d / "correlation.csv")
    for st in ("kendall_tau", "psi", "tau_fixed_n", "psi_fixed_n"):
        if f"{st}_low" in c:
            rows = c.dropna(subset=[f"{st}_low"])
            assert ((rows[f"{st}_low"] <= rows[st]) & (rows[st] <= rows[f"{st}_high"])).all()
