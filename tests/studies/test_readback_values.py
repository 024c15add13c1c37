"""Value checks of the read-back readers (issue 54, item 3; and item 9): counts are integers
>= 1, the gap is the difference of its metric columns, a bootstrap p-value is at least
1/(B+1), correlate.json's protocol is one this version reads, and a models.csv or
correlate.json that is no regular file is named for what it is. Each is one ReadbackError line
naming the file, the row and the column; through the CLI exit 2 and nothing written."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specbound.io.readback import ReadbackError
from specbound.studies import readback as R
from specbound.studies.protocol.registry import PROTOCOL
from tests.support.cli_runner import run_cli

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "generalization" / "results"
FOLDER = RESULTS / "digits-arch"
OTHER = RESULTS / "digits-arch-replicate"


def _copy(tmp_path: Path, name: str = "c") -> Path:
    d = tmp_path / name
    shutil.copytree(FOLDER, d, ignore=shutil.ignore_patterns("figures", "report.html"))
    return d


def _set(path: Path, row: int, column: str, value: object) -> None:
    t = pd.read_csv(path)
    t[column] = t[column].astype(object)
    t.loc[row, column] = value
    t.to_csv(path, index=False, float_format="%.17g")


def _first_primary(path: Path) -> int:
    d = pd.read_csv(path)
    return int(np.flatnonzero(d["family"].to_numpy() == "primary")[0])


def test_every_committed_folder_passes_the_value_checks():
    """The checks refuse nothing specbound wrote: every committed correlate folder reads."""
    folders = sorted(p.parent for p in RESULTS.glob("*/correlate.json"))
    assert len(folders) >= 10
    for d in folders:
        meta = R.read_correlate_json(d)
        models = R.read_models_csv(d, meta)
        assert len(models) == meta["n_models"]
        R.read_differences_csv(d, meta)


@pytest.mark.parametrize("value", [-5, 0, 0.5])
def test_num_parameters_must_be_a_count(tmp_path, value):
    d = _copy(tmp_path)
    _set(d / "models.csv", 0, "num_parameters", value)
    meta = R.read_correlate_json(d)
    with pytest.raises(ReadbackError, match=r"models.csv: row 2, column 'num_parameters'"):
        R.read_models_csv(d, meta)


def test_gap_must_be_train_acc_minus_test_acc(tmp_path):
    d = _copy(tmp_path)
    m = pd.read_csv(d / "models.csv")
    want = m.loc[2, "train_acc"] - m.loc[2, "test_acc"]
    assert abs(m.loc[2, "gap"] - want) < 1e-12  # the committed row agrees
    _set(d / "models.csv", 2, "gap", 0.9)
    meta = R.read_correlate_json(d)
    with pytest.raises(
        ReadbackError, match=r"row 4, column 'gap': 0.9 is not train_acc - test_acc"
    ):
        R.read_models_csv(d, meta)


def test_gap_within_the_tolerance_reads(tmp_path):
    """1e-12 off (a different rounding of the same difference) is the same gap."""
    d = _copy(tmp_path)
    m = pd.read_csv(d / "models.csv")
    _set(d / "models.csv", 1, "gap", float(m.loc[1, "gap"]) + 1e-12)
    assert len(R.read_models_csv(d, R.read_correlate_json(d))) == len(m)


def test_loss_gap_must_be_test_loss_minus_train_loss(tmp_path):
    d = _copy(tmp_path)
    m = pd.read_csv(d / "models.csv")
    m["gap"] = m["test_loss"] - m["train_loss"]
    m.to_csv(d / "models.csv", index=False, float_format="%.17g")
    text = (d / "correlate.json").read_text()
    (d / "correlate.json").write_text(text.replace('"gap": "accuracy"', '"gap": "loss"'))
    meta = R.read_correlate_json(d)
    assert len(R.read_models_csv(d, meta)) == len(m)  # the loss gap reads
    _set(d / "models.csv", 5, "gap", float(m.loc[5, "train_loss"] - m.loc[5, "test_loss"]))
    with pytest.raises(ReadbackError, match=r"row 7, column 'gap': .* test_loss - train_loss"):
        R.read_models_csv(d, meta)


@pytest.mark.parametrize("p", ["0", "1e-05"])
def test_p_below_one_over_b_plus_one_is_refused(tmp_path, p):
    d = _copy(tmp_path)
    f = d / "differences.csv"
    i = _first_primary(f)
    b = int(pd.read_csv(f).loc[i, "B"])
    assert float(p) < 1 / (b + 1)
    _set(f, i, "p", p)
    with pytest.raises(ReadbackError, match=rf"row {i + 2}, column 'p': .* below 1/\(B\+1\)"):
        R.read_differences_csv(d, R.read_correlate_json(d))


def test_p_at_one_over_b_plus_one_reads(tmp_path):
    d = _copy(tmp_path)
    f = d / "differences.csv"
    i = _first_primary(f)
    b = int(pd.read_csv(f).loc[i, "B"])
    _set(f, i, "p", 1 / (b + 1))
    assert len(R.read_differences_csv(d, R.read_correlate_json(d)))


def test_p_without_resamples_is_refused(tmp_path):
    d = _copy(tmp_path)
    f = d / "differences.csv"
    i = _first_primary(f)
    _set(f, i, "B", 0)
    with pytest.raises(ReadbackError, match=rf"row {i + 2}, column 'B': .* needs B >= 1"):
        R.read_differences_csv(d, R.read_correlate_json(d))


@pytest.mark.parametrize("protocol", [99, 0, PROTOCOL + 1])
def test_unknown_protocol_is_refused(tmp_path, protocol):
    d = _copy(tmp_path)
    text = (d / "correlate.json").read_text()
    (d / "correlate.json").write_text(re.sub(r'"protocol": \d+', f'"protocol": {protocol}', text))
    with pytest.raises(ReadbackError, match=rf"'protocol' is {protocol}, but this version"):
        R.read_correlate_json(d)


@pytest.mark.parametrize("key", ["n_models", "bootstrap"])
def test_correlate_json_counts_must_be_at_least_one(tmp_path, key):
    d = _copy(tmp_path)
    text = (d / "correlate.json").read_text()
    (d / "correlate.json").write_text(re.sub(rf'"{key}": \d+', f'"{key}": 0', text, count=1))
    with pytest.raises(ReadbackError, match=rf"'{key}' is 0; it must be a number >= 1"):
        R.read_correlate_json(d)


def _tree(d: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_cli_correlate_refuses_a_negative_parameter_count(tmp_path):
    d = _copy(tmp_path)
    _set(d / "models.csv", 0, "num_parameters", -5)
    before = _tree(d)
    out = tmp_path / "out"
    r = run_cli("correlate", d, "--out", out, "-q", "--bootstrap", "200")
    assert r.code == 2
    assert "models.csv: row 2, column 'num_parameters': -5" in r.one_error_line()
    assert not out.exists()
    assert _tree(d) == before


def test_cli_study_refuses_p_zero(tmp_path):
    """Before: p = 0 of a primary row was copied into primary.csv."""
    d = _copy(tmp_path)
    _set(d / "differences.csv", _first_primary(d / "differences.csv"), "p", 0)
    before = _tree(d)
    out = tmp_path / "out"
    r = run_cli("study", d, OTHER, "--out", out, "-q")
    assert r.code == 2
    assert "differences.csv: row 2, column 'p': 0.0 is below 1/(B+1)" in r.one_error_line()
    assert not out.exists()
    assert _tree(d) == before


def test_cli_study_refuses_protocol_99(tmp_path):
    d = _copy(tmp_path)
    text = (d / "correlate.json").read_text()
    (d / "correlate.json").write_text(re.sub(r'"protocol": \d+', '"protocol": 99', text))
    r = run_cli("study", d, OTHER, "--out", tmp_path / "out", "-q")
    assert r.code == 2
    assert "correlate.json: 'protocol' is 99" in r.one_error_line()
    assert not (tmp_path / "out").exists()


def _directory(p: Path) -> None:
    p.unlink()
    p.mkdir()


def _loop(p: Path) -> None:
    p.unlink()
    os.symlink(p.name, p)


def _dev_zero(p: Path) -> None:
    p.unlink()
    os.symlink("/dev/zero", p)


@pytest.mark.parametrize("name", ["models.csv", "correlate.json"])
@pytest.mark.parametrize(
    ("make", "words"),
    [(_directory, "is a directory"), (_loop, "is a symlink loop"), (_dev_zero, "/dev/zero")],
)
@pytest.mark.parametrize("command", ["correlate", "study"])
def test_a_result_file_that_is_no_regular_file_is_named(tmp_path, name, make, words, command):
    """Before: "X is a directory without zoo.csv" (correlate took the folder for a zoo
    directory) or "not a folder written by 'specbound correlate'" (study)."""
    d = _copy(tmp_path)
    make(d / name)
    out = tmp_path / "out"
    args = [d, "--out", out, "-q", "--bootstrap", "200"] if command == "correlate" else [
        d, OTHER, "--out", out, "-q"]  # fmt: skip
    r = run_cli(command, *args)
    assert r.code == 2
    line = r.one_error_line()
    assert f"{d / name} " in line and words in line and "zoo.csv" not in line
    assert not out.exists()
