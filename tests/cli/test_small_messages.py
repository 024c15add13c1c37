"""Smaller message defects of issue 54 (item 11): the several-prefixes error names the flag on
the command line and the parameter in Python (never a flag for Python or the reverse), and a
read-back value of 1e308 prints no numpy overflow warning."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import specbound
from specbound.errors import CheckpointError
from specbound.studies.protocol.stats import cell_r2
from tests.support.checkpoints import write_tiny_bert
from tests.support.cli_runner import run_cli
from tests.support.safetensors_np import load_file, save_file

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "generalization" / "results"


def _two_models(path: Path) -> Path:
    """A checkpoint holding the same BERT twice, under ``student.`` and ``teacher.``."""
    write_tiny_bert(path, prefix="student.")
    f = next(path.glob("*.safetensors"))
    sd = load_file(f)
    sd.update({"teacher." + k[len("student.") :]: v for k, v in sd.items()})
    save_file(sd, f)
    return path


def test_several_prefixes_name_the_flag_on_the_command_line(tmp_path):
    """Before: "choose one with --prefix (--prefix  in Python)"."""
    r = run_cli("analyze", _two_models(tmp_path / "m"), "-q")
    assert r.code == 2
    line = r.one_error_line()
    assert line.endswith("choose one, e.g. --prefix student.")
    assert "in Python" not in line and "prefix=" not in line


def test_several_prefixes_name_the_parameter_in_python(tmp_path):
    with pytest.raises(CheckpointError) as info:
        specbound.analyze(_two_models(tmp_path / "m"))
    msg = str(info.value)
    assert msg.endswith("choose one, e.g. prefix=student.") and "--prefix" not in msg


def test_cell_r2_of_values_whose_squares_overflow_is_the_scaled_share():
    rng = np.random.default_rng(0)
    v = rng.normal(size=40)
    cells = np.repeat(np.arange(8), 5)
    v[3] = 1e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = cell_r2(v, cells)
    # the share is invariant under scaling: the same values divided by 1e308, computed plainly
    s = v / 1e308
    means = np.array([s[cells == c].mean() for c in range(8)])
    want = 1 - np.sum((s - means[cells]) ** 2) / np.sum((s - s.mean()) ** 2)
    assert got == pytest.approx(want, rel=1e-12)
    assert 0 <= got <= 1


def test_cell_r2_of_ordinary_values_is_unchanged():
    v = np.array([1.0, 2.0, 3.0, 7.0, 8.0, 9.5])
    cells = np.array([0, 0, 0, 1, 1, 1])
    means = np.array([2.0, 8.166666666666666])
    want = 1 - np.sum((v - means[cells]) ** 2) / np.sum((v - v.mean()) ** 2)
    assert cell_r2(v, cells) == pytest.approx(want, rel=1e-15)


def test_correlate_of_a_norm_based_of_1e308_prints_no_warning(tmp_path):
    """Before: four "warning: overflow encountered in square" lines."""
    pytest.importorskip("matplotlib")  # correlate writes its page
    d = tmp_path / "c"
    shutil.copytree(RESULTS / "digits-arch", d, ignore=shutil.ignore_patterns("figures", "*.html"))
    m = pd.read_csv(d / "models.csv")
    m.loc[0, "norm_based"] = 1e308
    m.to_csv(d / "models.csv", index=False, float_format="%.17g")
    r = run_cli("correlate", d, "--out", tmp_path / "out", "--bootstrap", "200", "-q")
    assert r.code == 0, r.err
    assert "warning" not in r.err.lower() and "overflow" not in r.err.lower(), r.err
