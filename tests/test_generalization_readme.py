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


MAIN_README = HERE.parents[1] / "README.md"


def check(readme: Path, *more: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(TABLES), "--check", str(readme), *map(str, more)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_readme_rows_are_printed_by_tables_py():
    r = check(HERE / "README.md", MAIN_README)
    assert r.returncode == 0, r.stderr


def _tables_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_tables", TABLES)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(HERE))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(HERE))
    return mod


def test_a_verdict_sentence_without_a_claim_is_caught(tmp_path):
    text = (HERE / "README.md").read_text()
    bad = "On digits the spectrum-adaptive proxy is better than every other measure."
    (tmp_path / "README.md").write_text(text + "\n" + bad + "\n")
    r = check(tmp_path / "README.md")
    assert r.returncode == 1 and "cites no claim" in r.stderr and bad[:40] in r.stderr


def test_a_sentence_that_misstates_its_claim_is_caught(tmp_path):
    text = (HERE / "README.md").read_text()
    # C1 is "undetermined" (not shown); a sentence calling it worse must fail
    bad = "On digits the spectrum-adaptive proxy is worse than the norm-based proxy [C1]."
    (tmp_path / "README.md").write_text(text + "\n" + bad + "\n")
    r = check(tmp_path / "README.md")
    assert r.returncode == 1 and "[C1] asserts 'undetermined'" in r.stderr


def test_claims_table_against_the_committed_rows(tmp_path, monkeypatch):
    t = _tables_module()
    claims = pd.read_csv(t.CLAIMS, dtype=str)
    assert t.claim_problems({}) == []
    wrong = claims.copy()
    wrong.loc[0, "verdict"] = "better" if wrong.loc[0, "verdict"] != "better" else "worse"
    wrong.loc[1, "measure"] = "no_such_measure"
    path = tmp_path / "claims.csv"
    wrong.to_csv(path, index=False)
    monkeypatch.setattr(t, "CLAIMS", path)
    problems = t.claim_problems({})
    assert any(p.startswith(f"claim {claims.loc[0, 'claim']}: asserts") for p in problems)
    assert any(p.startswith(f"claim {claims.loc[1, 'claim']}: no committed row") for p in problems)


def test_a_changed_number_is_caught(tmp_path):
    text = (HERE / "README.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| P1 |"))
    bad = row.replace("[", "[+9.99 ", 1)
    (tmp_path / "README.md").write_text(text.replace(row, bad, 1))
    r = check(tmp_path / "README.md")
    assert r.returncode == 1 and bad in r.stderr


@pytest.mark.parametrize(
    "folder",
    sorted(p.name for p in (HERE / "results").iterdir() if (p / "correlation.csv").is_file()),
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


def test_ladder_exponents_match_an_independent_refit():
    r = subprocess.run(
        [sys.executable, str(HERE / "ladder.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
