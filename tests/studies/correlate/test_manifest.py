"""Manifest validation (trust issue): every bad manifest is one SpecboundError line, raised
before the first model is analyzed; and degenerate designs say what is undefined."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from specbound.errors import SpecboundError
from specbound.studies import correlate as C

HEADER = "model,lr,train_size,train_acc,test_acc,train_loss,test_loss"
GOOD = ["a,1,100,1.0,0.5,0.01,0.9", "b,2,200,1.0,0.6,0.02,0.8", "c,3,400,0.9,0.7,0.03,0.7"]


class Recorder:
    """A stub analyzer that records each call (none may happen for a bad manifest)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, path, init, cache, device, name):
        self.calls.append(name)
        return {"spectrum_adaptive": float(len(name)), "num_parameters": 10.0}


def write(tmp_path: Path, header: str, rows: list[str]) -> Path:
    p = tmp_path / "zoo.csv"
    p.write_text("\n".join([header, *rows]) + "\n")
    return p


def refused(path: Path, match: str, **kw) -> None:
    rec = Recorder()
    with pytest.raises(SpecboundError, match=match) as info:
        C.correlate(path, analyzer=rec, bootstrap=kw.pop("bootstrap", 200), **kw)
    assert rec.calls == []  # nothing analyzed
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("col", "value", "match"),
    [
        ("train_acc", "1.5", r"'train_acc' of model 'b' \(row 3\) is 1.5; it must be in \[0, 1\]"),
        ("test_acc", "-0.1", "'test_acc' of model 'b'.*in \\[0, 1\\]"),
        ("train_loss", "-1", "'train_loss' of model 'b'.*a finite >= 0"),
        ("test_loss", "inf", "'test_loss' of model 'b'.*a finite >= 0"),
        ("train_size", "1e400", "'train_size' of model 'b'.*a positive integer"),
        ("train_size", "0", "'train_size' of model 'b'.*a positive integer"),
        ("train_size", "-3", "'train_size' of model 'b'.*a positive integer"),
        ("train_size", "2.5", "'train_size' of model 'b'.*a positive integer"),
        ("train_acc", "abc", "'train_acc' of model 'b'.*not a number"),
    ],
)
def test_bad_values_are_refused_before_analysis(tmp_path, col, value, match):
    cols = HEADER.split(",")
    row = GOOD[1].split(",")
    row[cols.index(col)] = value
    refused(write(tmp_path, HEADER, [GOOD[0], ",".join(row), GOOD[2]]), match)


@pytest.mark.parametrize(
    "name", ["spectrum_adaptive", "gap", "sample_size_only", "norm_based_per_sqrt_n"]
)
def test_output_column_names_are_refused(tmp_path, name):
    rows = [f"{r},5" for r in GOOD]
    refused(write(tmp_path, f"{HEADER},{name}", rows), f"column '{name}' collides")


def test_duplicate_column_up_to_whitespace(tmp_path):
    rows = [f"{r},5" for r in GOOD]
    refused(write(tmp_path, f"{HEADER}, lr ", rows), "column 'lr' twice")


def test_own_models_csv_is_refused(tmp_path):
    res = C.correlate(write(tmp_path, HEADER, GOOD), analyzer=Recorder(), bootstrap=200)
    out = tmp_path / "out"
    out.mkdir()
    C.write_tables(res, out)
    refused(out / "models.csv", "correlate's own models.csv")


def test_tex_in_axis_names_and_values(tmp_path):
    d1 = tmp_path / "one"
    d1.mkdir()
    refused(write(d1, HEADER.replace("lr", "$\\foo$"), GOOD), r"axis name '\$\\foo\$'")
    d2 = tmp_path / "two"
    d2.mkdir()
    rows = [GOOD[0], GOOD[1].replace("b,2,", "b,$\\alpha$,"), GOOD[2]]
    refused(write(d2, HEADER, rows), "axis 'lr' of model 'b'.*TeX")


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"bootstrap": 100_001}, "bootstrap must be an integer <= 100000"),
        ({"bootstrap": -2}, "bootstrap must be an integer >= 0"),
        ({"bootstrap": 2.5}, "bootstrap must be an integer"),
    ],
)
def test_bad_options_before_analysis(tmp_path, kw, match):
    refused(write(tmp_path, HEADER, GOOD), match, **kw)


def test_bootstrap_counts_beyond_memory_are_refused():
    with pytest.raises(SpecboundError, match="lower bootstrap"):
        C.rules.check_size(100_000, 20_000, 100_000)


def test_default_axes_leave_out_seed(tmp_path):
    rows = [
        "a,1,0,100,1.0,0.5,0.01,0.9",
        "b,1,1,100,1.0,0.6,0.02,0.8",
        "c,2,0,100,0.9,0.7,0.03,0.7",
        "d,2,1,100,0.9,0.8,0.03,0.7",
    ]
    p = write(tmp_path, "model,lr,seed,train_size,train_acc,test_acc,train_loss,test_loss", rows)
    res = C.correlate(p, analyzer=Recorder(), bootstrap=200)
    assert res.axes == ["lr"] and res.n_configurations == 2
    assert any("train_size is constant" in n for n in res.notes)
    row = res.correlation.set_index("measure").loc["spectrum_adaptive"]
    assert math.isnan(row["tau_fixed_n"]) and row["psi_lr_groups"] == 1
    assert "sample_size_only" not in res.measures
    res = C.correlate(p, analyzer=Recorder(), bootstrap=200, axes="lr,seed")
    assert res.axes == ["lr", "seed"] and res.n_configurations == 4


def test_one_configuration_and_one_model(tmp_path):
    rows = ["a,1,100,1.0,0.5,0.01,0.9", "bb,1,100,1.0,0.6,0.02,0.8"]
    res = C.correlate(write(tmp_path, HEADER, rows), analyzer=Recorder(), bootstrap=200)
    assert res.axes == []
    assert any("no axes" in n for n in res.notes)
    row = res.correlation.set_index("measure").loc["spectrum_adaptive"]
    assert math.isnan(row["psi"]) and not math.isnan(row["kendall_tau"])
    d = tmp_path / "one"
    d.mkdir()
    res = C.correlate(write(d, HEADER, rows[:1]), analyzer=Recorder(), bootstrap=200)
    assert any("one model" in n for n in res.notes)
    assert math.isnan(res.correlation.loc[0, "kendall_tau"])
    assert isinstance(res.models, pd.DataFrame) and len(res.models) == 1


@pytest.mark.parametrize(
    ("rows", "flags", "match"),
    [
        ([GOOD[0], GOOD[1].replace(",200,", ",1e400,"), GOOD[2]], [], "train_size"),
        (GOOD, ["--seed", "-1"], "seed"),
        (GOOD, ["--bootstrap", "200000"], "bootstrap"),
    ],
)
def test_cli_exit_2_one_line_nothing_written(tmp_path, rows, flags, match):
    pytest.importorskip("matplotlib")
    import os
    import subprocess
    import sys

    out = tmp_path / "out"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "specbound.cli",
            "correlate",
            "--manifest",
            str(write(tmp_path, HEADER, rows)),
            "--out",
            str(out),
            *flags,
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and match in lines[0]
    assert not out.exists()
