"""Pooled zoos and correlate folders re-evaluated from their models.csv (multizoo.pool).

Checked against the committed sparse-parity fixed-n result (47 real trained models): re-reading
its folder gives its point estimates back, and pooling its models split in two by seed gives the
same statistics as the whole (configurations pool by axis values, so the split must not matter).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specbound.errors import SpecboundError
from specbound.studies.correlate import multizoo as P
from tests.support.cli_runner import run_cli

RESULT = (
    Path(__file__).resolve().parents[4]
    / "benchmarks"
    / "generalization"
    / "results"
    / "sparse-parity-fixed-n"
)
POINTS = ["kendall_tau", "psi", "cmi", "sign_error"]


def _split(tmp_path: Path) -> tuple[Path, Path]:
    """The committed folder's models as two correlate folders: seed 0, and seeds 1 and 2."""
    models = pd.read_csv(RESULT / "models.csv").drop(columns="zoo", errors="ignore")
    meta = json.loads((RESULT / "correlate.json").read_text())
    meta.pop("zoos", None)
    out = []
    for name, keep in (("a", models["seed"] == 0), ("b", models["seed"] != 0)):
        d = tmp_path / name
        d.mkdir()
        models[keep].to_csv(d / "models.csv", index=False)
        n = int(keep.sum())  # the counts correlate.json holds agree with the split's tables
        counts = {"n_models": n, "n_skipped": 0, "n_listed": n}
        (d / "correlate.json").write_text(
            json.dumps({**meta, **counts, "manifest": f"zoo-{name}/zoo.csv"})
        )
        out.append(d)
    return out[0], out[1]


def test_a_folder_reread_gives_its_point_estimates_back():
    got = P.pool([P.read_part(RESULT)], bootstrap=0).correlation.set_index("measure")
    want = pd.read_csv(RESULT / "correlation.csv").set_index("measure")
    assert list(got.index) == list(want.index)
    for col in POINTS:
        np.testing.assert_allclose(got[col], want[col], rtol=0, atol=1e-12, equal_nan=True)


def test_pooling_a_split_zoo_equals_the_whole(tmp_path):
    a, b = _split(tmp_path)
    whole = P.pool([P.read_part(RESULT)], bootstrap=0)
    pooled = P.pool([P.read_part(a), P.read_part(b)], bootstrap=0)
    assert sorted(pooled.models["zoo"].unique()) == ["zoo-a", "zoo-b"]
    assert len(pooled.models) == len(whole.models)
    assert pooled.zoos == ["zoo-a", "zoo-b"]
    g = pooled.correlation.set_index("measure")
    w = whole.correlation.set_index("measure")
    for col in POINTS:
        np.testing.assert_allclose(g[col], w[col], rtol=0, atol=1e-12, equal_nan=True)
    assert pooled.n_configurations == whole.n_configurations


def test_zoos_of_different_axes_are_refused(tmp_path):
    a, b = _split(tmp_path)
    meta = json.loads((b / "correlate.json").read_text())
    (b / "correlate.json").write_text(json.dumps({**meta, "axes": meta["axes"][:-1]}))
    with pytest.raises(Exception, match="their axes differ"):
        P.pool([P.read_part(a), P.read_part(b)], bootstrap=0)


def test_a_folder_that_is_not_a_correlate_output_is_refused(tmp_path):
    with pytest.raises(Exception, match="not a folder written by 'specbound correlate'"):
        P.read_part(tmp_path)


def test_cli_pools_folders_and_refuses_contradictions(tmp_path):
    pytest.importorskip("matplotlib")
    a, b = _split(tmp_path)
    out = tmp_path / "pooled"
    r = run_cli("correlate", a, b, "--out", out, "--bootstrap", "200", "--quiet")
    assert r.code == 0, r.err
    models = pd.read_csv(out / "models.csv")
    assert set(models["zoo"]) == {"zoo-a", "zoo-b"}
    meta = json.loads((out / "correlate.json").read_text())
    assert meta["zoos"] == ["zoo-a", "zoo-b"] and meta["protocol"] == 5
    d = pd.read_csv(out / "differences.csv")
    # fixed n, 4 cells of depth x width with 4 lr x weight_decay configurations each: a zoo
    # designed for tau_arch (protocol v4), so its primary contrasts are A1-A3 on tau_arch
    prim = d[d["family"] == "primary"]
    assert set(prim["contrast"]) == {"A1", "A2", "A3"} and set(prim["statistic"]) == {"tau_arch"}
    assert set(prim["verdict_stable"]) <= {"yes", "no"}

    zoo = tmp_path / "zoo"
    shutil.copytree(a, zoo)
    (zoo / "correlate.json").unlink()
    (zoo / "zoo.csv").write_text("model\nm0\n")
    for args, words in (
        ((a, zoo), "not both"),
        ((a, "--data-measures"), "read from its models.csv"),
        ((a, "--bootstrap", "150"), "bootstrap"),
        ((a, "--grid", zoo, "--grid", zoo), "--grid"),
    ):
        r = run_cli("correlate", *args, "--out", tmp_path / "x")
        assert r.code != 0
        assert words in r.one_error_line()
        assert not (tmp_path / "x").exists()


def test_the_page_names_its_zoo_and_links_its_files_and_siblings(tmp_path):
    from specbound.report.pages.correlate import write_correlation

    a, b = _split(tmp_path)
    for d in (a, b):  # only folders with a page are linked (no dead links)
        (d / "report.html").write_text("<html></html>")
    (tmp_path / "no-page").mkdir()
    result = P.pool([P.read_part(a), P.read_part(b)], bootstrap=0)
    write_correlation(result, tmp_path / "pooled", figures=False)
    html = (tmp_path / "pooled" / "report.html").read_text()
    assert (
        "Correlation study: sparse-parity, 2 zoos pooled: zoo-a + zoo-b, protocol v5, "
        "with data measures" in html
    )
    for f in ("models.csv", "differences.csv", "correlate.json"):
        assert f'href="{f}"' in html
    assert 'href="../a/report.html"' in html and 'href="../b/report.html"' in html
    assert "no-page" not in html
    assert "The training-set size n is the same for every model" in html  # fixed-n zoo
    for term in ("τ_n", "p_holm", "q_bh", "not comparable", "_per_sqrt_n"):
        assert term in html


def test_huge_finite_values_are_drawn_clipped_and_the_page_says_so(tmp_path):
    """Issue 35 item 14: a finite 1.7e308 in a measure must not crash the figures."""
    pytest.importorskip("matplotlib")
    from specbound.report.pages.correlate import write_correlation

    a, _b = _split(tmp_path)
    models = pd.read_csv(a / "models.csv")
    models.loc[models.index[0], "frobenius_sum"] = 1.7e308
    models.to_csv(a / "models.csv", index=False)
    result = P.pool([P.read_part(a)], bootstrap=0)
    write_correlation(result, tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text()
    assert "1 values beyond ±1e300 are drawn at ±1e300" in html
    assert (tmp_path / "out" / "figures" / "measure_frobenius_sum.svg").is_file()
    assert pd.read_csv(tmp_path / "out" / "models.csv")["frobenius_sum"].max() == 1.7e308


def test_skipped_names_are_kept_on_reevaluation_and_prefixed_only_when_shared(tmp_path):
    """Re-evaluating a folder in place leaves skipped.csv's names as they are (they used to
    gain one '<zoo>/' prefix per run); pooling prefixes a name with its zoo only where two
    zoos share it, as for models.csv."""
    pytest.importorskip("matplotlib")
    skipped = pd.DataFrame(
        {"model": ["models/m-unconverged", "models/m-shared"], "reason": ["unconverged"] * 2}
    )
    a, b = _split(tmp_path)
    for d in (a, b):
        skipped.iloc[[0 if d == a else 1]].to_csv(d / "skipped.csv", index=False)
        meta = json.loads((d / "correlate.json").read_text())
        counts = {"n_skipped": 1, "n_listed": meta["n_models"] + 1}
        (d / "correlate.json").write_text(json.dumps({**meta, **counts}))
    again = P.pool([P.read_part(a)], bootstrap=0)
    assert list(again.skipped["model"]) == ["models/m-unconverged"]
    (b / "skipped.csv").write_text("model,reason\nmodels/m-unconverged,unconverged\n")
    pooled = P.pool([P.read_part(a), P.read_part(b)], bootstrap=0)
    assert list(pooled.skipped["model"]) == [
        "zoo-a/models/m-unconverged",
        "zoo-b/models/m-unconverged",
    ]
    out = tmp_path / "re"
    assert run_cli("correlate", a, "--out", out, "-q").code == 0
    for _ in range(2):  # in place, as regenerate.sh does
        assert run_cli("correlate", out, "--out", out, "-q").code == 0
    assert list(pd.read_csv(out / "skipped.csv")["model"]) == ["models/m-unconverged"]


# --- a correlate folder is read back with the checks of the first read (issue 44) -------------


def _tamper(d: Path, row: int, column: str, value: object) -> None:
    m = pd.read_csv(d / "models.csv")
    m[column] = m[column].astype(object)
    m.loc[row, column] = value
    m.to_csv(d / "models.csv", index=False)


@pytest.mark.parametrize(
    ("column", "value", "needle"),
    [
        ("gap", 5.0, "row 3, column 'gap': 5.0 is outside"),
        ("depth", np.nan, "row 3, column 'depth': the cell is empty"),  # a new configuration
        ("train_size", 2.5, "row 3, column 'train_size': 2.5 is not a whole number"),
        ("spectrum_adaptive", "abc", "row 3, column 'spectrum_adaptive': 'abc' is not a number"),
        ("spectrum_adaptive", True, "row 3, column 'spectrum_adaptive': 'True' is not a number"),
        ("model", "models/m-x", None),  # a valid rename reads
    ],
)
def test_tampered_models_csv_is_one_line(tmp_path, column, value, needle):
    a, _ = _split(tmp_path)
    _tamper(a, 1, column, value)
    if needle is None:
        assert "models/m-x" in set(P.read_part(a).models["model"])
        return
    with pytest.raises(SpecboundError, match=needle.replace("(", r"\(")):
        P.read_part(a)


def test_duplicated_or_missing_rows_and_a_bad_gap_word_are_refused(tmp_path):
    a, _ = _split(tmp_path)
    m = pd.read_csv(a / "models.csv")
    pd.concat([m, m.iloc[[0]]]).to_csv(a / "models.csv", index=False)
    with pytest.raises(SpecboundError, match=r"column 'model'.*repeats row 2"):
        P.read_part(a)
    m.iloc[:0].to_csv(a / "models.csv", index=False)  # header only
    with pytest.raises(SpecboundError, match="0 rows"):
        P.read_part(a)
    m.iloc[1:].to_csv(a / "models.csv", index=False)  # a row less than correlate.json counts
    with pytest.raises(SpecboundError, match="'n_models'"):
        P.read_part(a)
    m.to_csv(a / "models.csv", index=False)
    meta = json.loads((a / "correlate.json").read_text())
    (a / "correlate.json").write_text(json.dumps({**meta, "gap": "happiness"}))
    with pytest.raises(SpecboundError, match="'gap' is 'happiness'"):
        P.read_part(a)


def test_a_folder_or_its_copy_given_twice_is_refused(tmp_path):
    pytest.importorskip("matplotlib")
    a, _ = _split(tmp_path)
    with pytest.raises(SpecboundError, match="given twice"):
        P.pool([P.read_part(a), P.read_part(tmp_path / "a" / ".." / "a")], bootstrap=0)
    shutil.copytree(a, tmp_path / "copy")
    with pytest.raises(SpecboundError, match="the same gap and measure values"):
        P.pool([P.read_part(a), P.read_part(tmp_path / "copy")], bootstrap=0)
    r = run_cli("correlate", a, tmp_path / "copy", "--out", tmp_path / "p", "--quiet")
    assert r.code == 2 and "the same gap and measure values" in r.one_error_line()
    r = run_cli("correlate", a, a, "--out", tmp_path / "p", "--quiet")
    assert r.code == 2 and "given twice" in r.one_error_line()
    assert not (tmp_path / "p").exists()


def _tiny_zoo(root: Path, offset: int) -> Path:
    """Four tiny BERTs (depth x width, one train size) with made-up metrics; ``offset`` makes
    other weights and other test accuracies (another zoo of the same grid)."""
    from tests.support.checkpoints import write_tiny_bert

    rows = ["model,depth,width,train_size,train_acc,test_acc,converged"]
    k = 0
    for depth in (1, 2):
        for width in (4, 8):
            k += 1
            name = f"m{k}"
            write_tiny_bert(
                root / name, layers=depth, hidden=width, heads=2, ffn=2 * width, seed=offset + k
            )
            rows.append(f"{name},{depth},{width},100,1.0,{0.9 - 0.07 * ((k + offset) % 4)},true")
    (root / "zoo.csv").write_text("\n".join(rows) + "\n")
    return root


def test_cli_pools_two_zoo_directories(tmp_path):
    """`correlate zA zB --out p` always exited 2 ("bootstrap 0 is too few draws")."""
    pytest.importorskip("matplotlib")
    from tests.studies.correlate.test_run import check_tables_against_reference

    za, zb = _tiny_zoo(tmp_path / "zA", 0), _tiny_zoo(tmp_path / "zB", 10)
    out = tmp_path / "p"
    r = run_cli("correlate", za, zb, "--out", out, "--bootstrap", "200", "--quiet")
    assert r.code == 0, r.err
    models = pd.read_csv(out / "models.csv")
    assert len(models) == 8 and sorted(set(models["zoo"])) == ["zA", "zB"]
    assert models["model"].is_unique  # m1..m4 in both: prefixed with their zoo
    for z in (za, zb):  # the gap is each zoo's recorded train - test accuracy
        listed = pd.read_csv(z / "zoo.csv")
        mine = models[models["zoo"] == z.name].reset_index(drop=True)
        assert list(mine["gap"]) == list(listed["train_acc"] - listed["test_acc"])
    check_tables_against_reference(out, ["depth", "width"])
    meta = json.loads((out / "correlate.json").read_text())
    assert meta["zoos"] == ["zA", "zB"] and meta["n_models"] == 8
    again = tmp_path / "again"  # the pooled folder reads back and re-evaluates to itself
    r = run_cli("correlate", out, "--out", again, "--bootstrap", "200", "--quiet")
    assert r.code == 0, r.err
    pd.testing.assert_frame_equal(pd.read_csv(again / "models.csv"), models)
    r = run_cli("correlate", za, tmp_path / "zA", "--out", tmp_path / "x", "--quiet")
    assert r.code == 2 and "given twice" in r.one_error_line()
    shutil.copytree(za, tmp_path / "copy")
    r = run_cli("correlate", za, tmp_path / "copy", "--out", tmp_path / "x", "--quiet")
    assert r.code == 2 and "the same gap and measure values" in r.one_error_line()
    assert not (tmp_path / "x").exists()
