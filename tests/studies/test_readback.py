"""The readers of files specbound reads back (studies.readback, io.readback): a valid file
reads with every number as a plain ``pandas.read_csv`` gives it; a tampered one is one line
naming the file, the row and the column (issue 44)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specbound.io.readback import ReadbackError
from specbound.studies import readback as R
from specbound.studies.correlate.manifest import read_zoo_csv
from tests.support.cli_runner import run_cli

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "generalization"
FOLDER = BENCH / "results" / "sparse-parity-fixed-n"
ZOO = BENCH / "zoos" / "sparse-parity-fixed-n"


def _copy(tmp_path: Path) -> Path:
    d = tmp_path / "c"
    shutil.copytree(FOLDER, d, ignore=shutil.ignore_patterns("figures", "report.html"))
    return d


def _set(path: Path, row: int, column: str, value: object) -> None:
    t = pd.read_csv(path)
    t[column] = t[column].astype(object)
    t.loc[row, column] = value
    t.to_csv(path, index=False)


def test_valid_committed_files_read_as_a_plain_read_gives_them():
    meta = R.read_correlate_json(FOLDER)
    for name, got in [
        ("models.csv", R.read_models_csv(FOLDER, meta)),
        ("differences.csv", R.read_differences_csv(FOLDER, meta)),
        ("correlation.csv", R.read_correlation_csv(FOLDER)),
    ]:
        plain = pd.read_csv(FOLDER / name)
        assert list(got.columns) == list(plain.columns), name
        for c in plain.columns:
            if plain[c].dtype.kind == "f":
                np.testing.assert_array_equal(got[c].to_numpy(float), plain[c].to_numpy(float))
    assert len(R.read_skipped_csv(FOLDER, meta)) == meta["n_skipped"]
    assert R.read_zoo_json(ZOO)["grid"] == json.loads((ZOO / "zoo.json").read_text())["grid"]
    assert len(read_zoo_csv(ZOO)) == len(pd.read_csv(ZOO / "zoo.csv"))
    claims = R.read_claims_csv(BENCH / "claims.csv")
    assert claims.equals(pd.read_csv(BENCH / "claims.csv", dtype=str))


def test_extra_columns_of_other_versions_are_kept(tmp_path):
    d = _copy(tmp_path)
    m = pd.read_csv(d / "models.csv")
    m["adaptive_headroom_min"] = 0.25
    m.to_csv(d / "models.csv", index=False)
    diffs = pd.read_csv(d / "differences.csv")
    diffs["verdict_stable"] = True
    diffs.to_csv(d / "differences.csv", index=False)
    meta = R.read_correlate_json(d)
    assert (R.read_models_csv(d, meta)["adaptive_headroom_min"] == 0.25).all()
    assert R.read_differences_csv(d, meta)["verdict_stable"].all()


@pytest.mark.parametrize(
    ("column", "value", "needle"),
    [
        ("kendall_tau", 1.5, "row 3, column 'kendall_tau': 1.5 is outside [-1, 1]"),
        ("n_models", 4.5, "row 3, column 'n_models': 4.5 is not a whole number"),
        ("sign_error", -0.1, "row 3, column 'sign_error': -0.1 is outside [0, 1]"),
        ("measure", "norm_based", "row 3, column 'measure': measure=norm_based repeats"),
    ],
)
def test_tampered_correlation_csv_is_one_line(tmp_path, column, value, needle):
    d = _copy(tmp_path)
    if column == "measure":
        value = pd.read_csv(d / "correlation.csv")["measure"][0]
        needle = f"row 3, column 'measure': measure={value} repeats row 2"
    _set(d / "correlation.csv", 1, column, value)
    with pytest.raises(ReadbackError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        R.read_correlation_csv(d)


def test_tampered_json_skipped_and_claims_are_one_line(tmp_path):
    d = _copy(tmp_path)
    meta = json.loads((d / "correlate.json").read_text())
    for bad, needle in [
        ({**meta, "n_models": -1}, "'n_models' is -1"),
        ({**meta, "n_models": True}, "'n_models' is True"),
        ({**meta, "measures": [*meta["measures"], meta["measures"][0]]}, "names an entry twice"),
        ({**meta, "measures": [*meta["measures"], meta["axes"][0]]}, "both an axis and a measure"),
        ({k: v for k, v in meta.items() if k != "axes"}, "the key 'axes' is missing"),
        ({**meta, "n_listed": meta["n_listed"] + 1}, "is not n_listed"),
    ]:
        (d / "correlate.json").write_text(json.dumps(bad))
        with pytest.raises(ReadbackError, match=needle):
            R.read_correlate_json(d)
    (d / "correlate.json").write_text(json.dumps(meta))
    skipped = (d / "skipped.csv").read_text()
    (d / "skipped.csv").write_text(skipped + skipped.splitlines()[1] + "\n")
    with pytest.raises(ReadbackError, match=r"skipped\.csv: row 3, column 'model'"):
        R.read_skipped_csv(d, meta)
    (d / "skipped.csv").write_text(skipped.rstrip("\n"))  # cut short: no final line end
    with pytest.raises(ReadbackError, match="no line end"):
        R.read_skipped_csv(d, meta)
    zoo = tmp_path / "zoo.json"
    zoo.write_text(json.dumps({"task": "t", "grid": {"depth": []}}))
    with pytest.raises(ReadbackError, match="grid axis 'depth'"):
        R.read_zoo_json(zoo)
    claims = tmp_path / "claims.csv"
    shutil.copy(BENCH / "claims.csv", claims)
    _set(claims, 0, "verdict", "splendid")
    with pytest.raises(ReadbackError, match="row 2, column 'verdict': 'splendid'"):
        R.read_claims_csv(claims)


def test_cli_reevaluation_of_a_tampered_folder_is_one_line_and_writes_nothing(tmp_path):
    pytest.importorskip("matplotlib")
    d = _copy(tmp_path)
    _set(d / "models.csv", 4, "gap", 5.0)
    before = {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()}
    r = run_cli("correlate", d, "--out", d, "--quiet")
    assert r.code == 2
    line = r.one_error_line()
    assert "models.csv: row 6, column 'gap': 5.0 is outside [-1, 1]" in line
    assert {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()} == before


def test_arch_contrasts_of_a_zoo_designed_for_tau_arch_read_back(tmp_path):
    """Protocol v4: a folder whose primary statistic is tau_arch holds A1-A3 (spectrum_adaptive
    against norm_based, log_spectral_product, distance_from_init), not P1-P3."""
    d = _copy(tmp_path)
    meta = json.loads((d / "correlate.json").read_text())
    meta["primary_statistic"] = "tau_arch"
    (d / "correlate.json").write_text(json.dumps(meta))
    diffs = pd.read_csv(d / "differences.csv")
    prim = diffs.index[diffs["family"] == "primary"]
    arch = [("A1", "norm_based"), ("A2", "log_spectral_product"), ("A3", "distance_from_init")]
    for i, (c, versus) in zip(prim, arch, strict=True):
        diffs.loc[i, ["contrast", "measure", "versus", "statistic"]] = [
            c, "spectrum_adaptive", versus, "tau_arch"
        ]  # fmt: skip
    diffs.to_csv(d / "differences.csv", index=False)
    got = R.read_differences_csv(d, R.read_correlate_json(d))
    assert sorted(got.loc[got["family"] == "primary", "contrast"]) == ["A1", "A2", "A3"]
    diffs.loc[prim[0], "contrast"] = "P1"  # a P contrast in an A family: refused, one line
    diffs.to_csv(d / "differences.csv", index=False)
    with pytest.raises(ReadbackError, match="contrast"):
        R.read_differences_csv(d, R.read_correlate_json(d))


def test_arch_primary_rows_read_back(tmp_path):
    """A folder whose primary family is A1-A3 on tau_arch (protocol v4) reads back with and
    without its correlate.json; an A-row relabelled P1 is refused (issue 45)."""
    meta = R.read_correlate_json(FOLDER)
    assert meta["primary_statistic"] == "tau_arch"
    for m in (meta, None):
        d = R.read_differences_csv(FOLDER, m)
        assert set(d.loc[d["family"] == "primary", "contrast"]) == {"A1", "A2", "A3"}
    c = _copy(tmp_path)
    diffs = pd.read_csv(c / "differences.csv")
    row = int(np.flatnonzero((diffs["contrast"] == "A1").to_numpy())[0])
    _set(c / "differences.csv", row, "contrast", "P1")
    with pytest.raises(ReadbackError, match="not a primary contrast"):
        R.read_differences_csv(c, R.read_correlate_json(c))


def _set_text(path: Path, line: int, column: str, text: str) -> None:
    """Put ``text`` verbatim into ``column`` of file line ``line`` (the header is line 1)."""
    rows = path.read_text().splitlines()
    j = rows[0].split(",").index(column)
    import csv
    import io

    cells = next(csv.reader(io.StringIO(rows[line - 1])))
    cells[j] = text
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(cells)
    rows[line - 1] = buf.getvalue()
    path.write_text("\n".join(rows) + "\n")


@pytest.mark.parametrize("word", ["nan", "NaN", "NA", "null", "-nan", "N/A"])
@pytest.mark.parametrize(
    ("name", "column"),
    [("models.csv", "train_size"), ("models.csv", "spectrum_adaptive"), ("differences.csv", "p"),
     ("correlation.csv", "kendall_tau")],
)  # fmt: skip
def test_a_word_read_as_undefined_in_a_number_column_is_refused(tmp_path, word, name, column):
    """specbound writes an undefined number as an empty cell; ``nan`` / ``NA`` / ``null`` there
    were put by hand and ``pandas.read_csv`` would read them as undefined (a NaN train_size made
    a new configuration; a NaN p dropped a contrast from Holm)."""
    d = _copy(tmp_path)
    _set_text(d / name, 3, column, word)
    meta = R.read_correlate_json(d)
    read = {
        "models.csv": lambda: R.read_models_csv(d, meta),
        "differences.csv": lambda: R.read_differences_csv(d, meta),
        "correlation.csv": lambda: R.read_correlation_csv(d),
    }[name]
    with pytest.raises(ReadbackError, match=f"row 3, column '{column}': '{word}' is not a number"):
        read()


def test_train_size_empty_in_one_row_only_is_refused(tmp_path):
    d = _copy(tmp_path)
    _set_text(d / "models.csv", 4, "train_size", "")
    with pytest.raises(ReadbackError, match="row 4, column 'train_size': the cell is empty"):
        R.read_models_csv(d, R.read_correlate_json(d))


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [("max_steps", float("nan"), "'max_steps' is nan"), ("max_steps", "happiness", "'max_steps'"),
     ("max_steps", 0, "'max_steps' is 0"), ("target_loss", float("inf"), "'target_loss' is inf"),
     ("target_loss", -1, "'target_loss' is -1"), ("num_models", 2.5, "'num_models' is 2.5"),
     ("axes", ["seed", "seed"], "'axes' names an entry twice"),
     ("size_axis", 3, "'size_axis' is 3"),
     ("design", "adaptive", "'design' is 'adaptive', not one of adaptivity"),
     ("design", 1, "'design' is 1, not str or null")],
)  # fmt: skip
def test_tampered_zoo_json_fields_are_refused(tmp_path, key, value, needle):
    """zoo.json's recipe fields are read back checked (``NaN`` and ``"happiness"`` as
    ``max_steps`` were accepted)."""
    meta = json.loads((ZOO / "zoo.json").read_text())
    meta[key] = value
    p = tmp_path / "zoo.json"
    p.write_text(json.dumps(meta))
    with pytest.raises(ReadbackError, match=needle):
        R.read_zoo_json(p)


@pytest.mark.parametrize("cut", ["header-only", "one-row-gone"])
def test_correlation_csv_holds_one_row_per_measure_of_correlate_json(tmp_path, cut):
    d = _copy(tmp_path)
    lines = (d / "correlation.csv").read_text().splitlines(keepends=True)
    (d / "correlation.csv").write_text(lines[0] if cut == "header-only" else "".join(lines[:-1]))
    meta = R.read_correlate_json(d)
    R.read_correlation_csv(d)  # alone, a table of fewer measures is well formed
    with pytest.raises(ReadbackError, match=r"its measures are not correlate\.json's"):
        R.read_correlation_csv(d, meta)


def test_v5_fields_read_back_checked(tmp_path):
    """correlate.json's ``design`` is one of the designs; pstar.csv's p* lies in [0, 2] and
    its matrix types are SPEC's."""
    from specbound.studies import correlate as C
    from tests.studies.correlate.test_v5_modal import write_zoo

    zoo = write_zoo(tmp_path / "zoo", (0,), design="adaptivity")
    d = C.correlate(zoo, bootstrap=200, cache=False).to_dir(tmp_path / "out")
    meta = R.read_correlate_json(d)
    assert meta["design"] == "adaptivity" and meta["primary_family"] == "adaptivity"
    assert len(R.read_pstar_csv(d)) == 6 * 3 + 6 * 6  # depth 1: 6 matrices, depth 2: 12
    bad = json.loads((d / "correlate.json").read_text())
    bad["design"] = "adaptive"
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "correlate.json").write_text(json.dumps(bad))
    with pytest.raises(ReadbackError, match="'design' is 'adaptive'"):
        R.read_correlate_json(tmp_path / "j")
    _set_text(d / "pstar.csv", 2, "p_star", "2.5")
    with pytest.raises(ReadbackError, match="row 2, column 'p_star'"):
        R.read_pstar_csv(d)
