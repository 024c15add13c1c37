"""The second answer (benchmarks/generalization/README.md) against its committed tables.

Every measure row of the README's tables must be a row that tables.py prints from the committed
correlation.csv / differences.csv files, and every committed interval must hold its estimate.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
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


# --- claims that can be checked (issue 45 item 4) ----------------------------------------------


def test_check_without_a_text_is_an_error():
    r = subprocess.run(
        [sys.executable, str(TABLES), "--check"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2
    assert r.stderr.startswith("error:") and len(r.stderr.strip().splitlines()) == 1


def test_a_negated_verdict_is_not_the_verdict(tmp_path):
    text = (HERE / "README.md").read_text()
    # C2 is "worse": the same sentence saying "is not shown to be worse than" must fail
    said = "spectrum-adaptive proxy is worse than the norm-based proxy in the replicate zoo"
    assert said in text
    bad = text.replace(said, said.replace("is worse than", "is not shown to be worse than"), 1)
    (tmp_path / "README.md").write_text(bad)
    r = check(tmp_path / "README.md")
    assert r.returncode == 1 and "[C2] asserts 'worse'" in r.stderr


def test_no_better_than_is_not_better(tmp_path):
    text = (HERE / "README.md").read_text()
    said = "the norm-based proxy is better than parameter count"
    assert said in text  # C5, C6: "better"
    (tmp_path / "README.md").write_text(
        text.replace(said, said.replace("is better", "is no better"), 1)
    )
    r = check(tmp_path / "README.md")
    assert r.returncode == 1 and "[C5] asserts 'better'" in r.stderr


def test_duplicate_claim_id_and_uncited_claim(tmp_path, monkeypatch):
    t = _tables_module()
    claims = pd.read_csv(t.CLAIMS, dtype=str)
    dup = pd.concat([claims, claims.iloc[[0]]], ignore_index=True)
    extra = claims.iloc[[0]].copy()
    extra["claim"] = "C999"
    path = tmp_path / "claims.csv"
    pd.concat([dup, extra], ignore_index=True).to_csv(path, index=False)
    monkeypatch.setattr(t, "CLAIMS", path)
    texts = {"README.md": (HERE / "README.md").read_text(), "main": MAIN_README.read_text()}
    problems = t.claim_problems(texts)
    first = claims.loc[0, "claim"]
    assert f"claims.csv: claim id {first} is listed 2 times" in problems
    assert any(p.startswith("claim C999: no sentence") for p in problems)


@pytest.mark.parametrize(
    ("piece", "fits", "fails"),
    [
        ("X is worse than Y", "worse", "undetermined"),
        ("X is not shown to be worse than Y", "undetermined", "worse"),
        ("X is no better than Y", "borderline", "better"),
        ("X is never shown to beat Y", "insufficient evidence", "better"),
        ("the two are not shown to differ", "undetermined", "worse"),
        ("X beats Y", "better", "worse"),
        ("the difference is borderline", "borderline", "undetermined"),
        ("X and Y are not comparable", "not comparable", "worse"),
        ("on digits", None, "undetermined"),  # asserts nothing: fits no claim
    ],
)
def test_what_a_piece_of_sentence_asserts(piece, fits, fails):
    t = _tables_module()
    said = t.stated(piece)
    if fits is not None:
        assert t.fits(fits, said)
    assert not t.fits(fails, said)


def test_tags_take_their_own_clause():
    t = _tables_module()
    s = (
        "Sample size ranks the gap better than both: A is worse than B on digits [C1], "
        "modular addition [C2], but not shown on parity [C3]; in the zoos of x [C4] and y [C5] "
        "the two are not shown to differ."
    )
    got = {cid: t.stated(piece) for cid, piece in t.tagged_pieces(s)}
    assert got["C1"] == {"worse"} and got["C2"] == {"worse"}
    assert got["C3"] == {t.NO_VERDICT}
    assert got["C4"] == {t.NO_VERDICT} and got["C5"] == {t.NO_VERDICT}


def test_ladder_check_covers_the_per_depth_slopes(tmp_path):
    """ladder.py --check refits each depth's width exponent (growth.csv's per_fixed rows) with
    numpy alone: a changed per-depth norm-based slope is reported."""
    import shutil

    sys.path.insert(0, str(HERE))
    try:
        import ladder
    finally:
        sys.path.remove(str(HERE))
    src = HERE / "results" / "digits-ladder"
    for name in ("models.csv", "growth.csv"):
        shutil.copy(src / name, tmp_path / name)
    assert ladder.check(tmp_path) == []
    g = pd.read_csv(tmp_path / "growth.csv")
    row = (g["fit"] == "per_fixed") & (g["measure"] == "norm_based")
    row &= (g["axis"] == "hidden_size") & (g["fixed_value"] == 4)
    assert row.sum() == 1
    g.loc[row, "exponent"] += 0.5
    g.to_csv(tmp_path / "growth.csv", index=False)
    assert any("depth 4" in p for p in ladder.check(tmp_path))


def test_ladder_transition_refits():
    """The transition of the pooled width exponent, refitted from models.csv: widths >= 256 alone
    give the spectrum-adaptive proxy an exponent near the ceiling's 1, the norm-based one far more;
    the local exponent from width 32 to 64 exceeds the one from 256 to 512 at every depth."""
    sys.path.insert(0, str(HERE))
    try:
        import ladder
    finally:
        sys.path.remove(str(HERE))
    m = pd.read_csv(HERE / "results" / "digits-ladder" / "models.csv")
    big = ladder.per_depth_fits(m, "spectrum_adaptive", 256).set_index("depth")
    assert abs(big.loc["pooled", "exponent"] - 1.0) < 0.1
    nb = ladder.per_depth_fits(m, "norm_based", 256).set_index("depth")
    assert nb.loc["pooled", "exponent"] > 5 * big.loc["pooled", "exponent"]
    loc = ladder.local_exponents(m, "spectrum_adaptive")
    for depth, sub in loc.groupby("depth"):
        s = sub.set_index("step")["exponent"]
        assert s["32-64"] > s["256-512"], depth


def test_tau_b_by_brute_force_matches_scipy():
    from scipy.stats import kendalltau

    t = _tables_module()
    rng = np.random.default_rng(7)
    for _ in range(20):
        x = rng.integers(0, 4, size=12).astype(float)  # ties on both sides
        y = rng.integers(0, 5, size=12).astype(float)
        want = kendalltau(x, y, variant="b").statistic
        got = t.tau_b(x, y)
        assert (np.isnan(want) and np.isnan(got)) or abs(got - want) < 1e-12
    assert np.isnan(t.tau_b(np.ones(5), np.arange(5.0)))  # constant: no tau-b


def test_a_changed_tau_arch_is_caught(tmp_path, monkeypatch):
    """--check recomputes tau_arch of each A1-A3 measure as the mean of per-cell tau-b."""
    import shutil

    t = _tables_module()
    src = HERE / "results" / "digits-arch"
    dst = tmp_path / "results" / "digits-arch"
    dst.mkdir(parents=True)
    for name in ("correlate.json", "models.csv", "correlation.csv"):
        shutil.copy(src / name, dst / name)
    monkeypatch.setattr(t, "HERE", tmp_path)
    assert t.arch_problems() == []
    c = pd.read_csv(dst / "correlation.csv")
    c.loc[c["measure"] == "norm_based", "tau_arch"] += 0.01
    c.to_csv(dst / "correlation.csv", index=False)
    assert any("tau_arch of norm_based" in p for p in t.arch_problems())
