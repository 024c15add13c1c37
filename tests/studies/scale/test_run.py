"""Scaling study: models.csv / growth.csv against individual analyses and hand-made OLS."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import specbound
from specbound.cli import app
from specbound.errors import SpecboundError
from specbound.studies.scale import growth_table, ols, read_manifest, scale
from tests.support.study_helpers import write_grid

pytest.importorskip("safetensors")


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_grid(tmp_path_factory.mktemp("grid"))


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECBOUND_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def study_out(grid: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("study") / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECBOUND_CACHE_DIR", str(out.parent / "cache"))
        res = CliRunner().invoke(app, ["scale", *map(str, grid), "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    return out


def test_ols_hand_computed() -> None:
    # y = [0, 1, 3] on x = [0, 1, 2]: slope 3/2, RSS 1/6, se = sqrt((1/6) / 1 / Sxx=2)
    b, se = ols(np.array([0.0, 1, 2]), np.array([0.0, 1, 3]))
    assert b == pytest.approx(1.5)
    assert se == pytest.approx(math.sqrt(1 / 12))
    b2, se2 = ols(np.array([1.0, 2]), np.array([5.0, 9]))
    assert b2 == pytest.approx(4.0) and math.isnan(se2)


def test_models_csv_matches_individual_analyses(grid: list[Path], study_out: Path) -> None:
    m = pd.read_csv(study_out / "models.csv")
    assert len(m) == 4
    assert list(m.columns[:7]) == [
        "model",
        "num_layers",
        "hidden_size",
        "num_heads",
        "intermediate_size",
        "spectrum_adaptive",
        "norm_based",
    ]
    assert {"share_p0", "share_p2"} <= set(m.columns)
    for path in grid:
        a = specbound.analyze(str(path), cache=False)
        row = m[m["model"] == str(path)].iloc[0]
        assert row["num_layers"] == a.spec.num_layers
        assert row["hidden_size"] == a.spec.hidden_size
        assert row["num_heads"] == a.spec.num_heads
        assert row["num_parameters"] == a.num_parameters
        assert row["spectrum_adaptive"] == pytest.approx(
            a.bounds.spectrum_adaptive.log10, rel=1e-12
        )
        assert row["norm_based"] == pytest.approx(a.bounds.norm_based.log10, rel=1e-12)
        for name, value in a.measures.items():  # one column per measure, as analyze gives them
            if value is None:
                assert np.isnan(row[name])
            else:
                assert row[name] == pytest.approx(value, rel=1e-12)
        assert row["share_p0"] == pytest.approx(np.mean(a.details.p_star == 0))
        # the rank-ceiling diagnosis (SPEC 10), recomputed from the ranks and contributions
        ranks = a.spectra.rank.astype(float)
        N, L = a.spec.hidden_size, a.spec.num_layers
        ceiling = np.log10(np.sqrt(ranks * N).sum() + np.sqrt(L))
        assert row["log10_spectrum_adaptive_ceiling"] == pytest.approx(ceiling, abs=1e-12)
        gap = ceiling - a.bounds.spectrum_adaptive.log10
        assert row["spectrum_adaptive_ceiling_gap"] == pytest.approx(gap, abs=1e-9)
        assert row["spectrum_adaptive_ceiling_gap"] >= 0
        assert row["spectrum_adaptive_share_p0"] == pytest.approx(np.mean(a.details.p_star == 0))
        assert row["share_p2"] == pytest.approx(np.mean(a.details.p_star == 2))


def _hand_pooled(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> tuple[float, float]:
    """Normal equations with one dummy per group, written out independently of ``ols``."""
    levels = sorted(set(z))
    X = np.column_stack([x] + [[1.0 if zi == g else 0.0 for zi in z] for g in levels])
    beta = np.linalg.inv(X.T @ X) @ X.T @ y
    r = y - X @ beta
    s2 = (r @ r) / (len(y) - X.shape[1])
    return beta[0], math.sqrt(s2 * np.linalg.inv(X.T @ X)[0, 0])


def test_growth_csv_against_hand_fit(study_out: Path) -> None:
    m = pd.read_csv(study_out / "models.csv")
    g = pd.read_csv(study_out / "growth.csv")
    # every measure with a log10 on all models is fitted (no init here: no distance_from_init;
    # a non-log measure that is not positive everywhere has no log to fit)
    logs = {"spectrum_adaptive", "norm_based", "log_spectral_product", "log_frobenius_product"}
    diag = ["spectrum_adaptive_share_p0", "spectrum_adaptive_ceiling_gap"]
    ceiling = "log10_spectrum_adaptive_ceiling"
    from specbound.studies.scale.run import HTSR_FIT_COLUMNS

    k = len(HTSR_FIT_COLUMNS)  # last: the HTSR means over ok fits and their counts (not fitted)
    assert list(m.columns[-k:]) == HTSR_FIT_COLUMNS
    forms = [f"spectrum_adaptive_fixed_p{q}" for q in ("0.5", "1", "2")]  # protocol v5
    tail = [*diag, ceiling, "adaptive_headroom_min", *forms, "share_p0", "share_p2"]
    assert list(m.columns[-len(tail) - k : -k]) == tail
    want = {
        c
        for c in m.columns[5 : -len(tail) - k]
        if m[c].notna().all() and (c in logs or (m[c] > 0).all())
    }
    assert "distance_from_init" not in want and "frobenius_sum" in want
    assert set(g.measure) == want | {ceiling}  # the rank ceiling is fitted like a measure
    for r in g[g.measure == ceiling].itertuples():  # fitted as log10 values, like the proxies
        if r.fit == "per_fixed":
            other = "num_layers" if r.axis == "hidden_size" else "hidden_size"
            sub = m[m[other] == int(r.fixed_value)].sort_values(r.axis)
            x, y = sub[r.axis].to_numpy(float), sub[ceiling].to_numpy(float)
            assert r.exponent == pytest.approx((y[1] - y[0]) / np.log10(x[1] / x[0]))
            assert r.resid_df == 0 and np.isnan(r.exponent_se)
        else:
            assert r.resid_df == 4 - 1 - 2
    fro = g[
        (g.measure == "frobenius_sum") & (g.fit == "per_fixed") & (g.axis == "hidden_size")
    ].iloc[0]
    sub = m[m.num_layers == int(fro.fixed_value)].sort_values("hidden_size")
    y = np.log10(sub.frobenius_sum.to_numpy(float))  # a non-log measure is fitted as log10
    assert fro.exponent == pytest.approx((y[1] - y[0]) / np.log10(2.0), rel=1e-9)
    for proxy in ("spectrum_adaptive", "norm_based"):
        for axis, other in (("hidden_size", "num_layers"), ("num_layers", "hidden_size")):
            rows = g[(g.measure == proxy) & (g.axis == axis)]
            per = rows[rows.fit == "per_fixed"]
            assert sorted(per.fixed_value.astype(int)) == sorted(m[other].unique())
            for r in per.itertuples():
                sub = m[m[other] == int(r.fixed_value)].sort_values(axis)
                x, y = sub[axis].to_numpy(float), sub[proxy].to_numpy(float)
                assert r.n_points == 2
                assert r.exponent == pytest.approx((y[1] - y[0]) / np.log10(x[1] / x[0]))
                assert r.log10_per_unit == pytest.approx((y[1] - y[0]) / (x[1] - x[0]))
            pooled = rows[rows.fit == "pooled"].iloc[0]
            x, y, z = m[axis].to_numpy(float), m[proxy].to_numpy(float), m[other]
            e, e_se = _hand_pooled(np.log10(x), y, z.to_numpy())
            u, u_se = _hand_pooled(x, y, z.to_numpy())
            assert pooled.n_points == 4
            assert pooled.exponent == pytest.approx(e, rel=1e-9)
            assert pooled.exponent_se == pytest.approx(e_se, rel=1e-6)
            assert pooled.log10_per_unit == pytest.approx(u, rel=1e-9)
            assert pooled.log10_per_unit_se == pytest.approx(u_se, rel=1e-6)
            # balanced 2x2 grid: the pooled slope is the mean of the per-fixed slopes
            assert pooled.exponent == pytest.approx(per.exponent.mean(), rel=1e-9)


def test_study_outputs(study_out: Path) -> None:
    svgs = sorted((study_out / "figures").glob("*.svg"))
    assert len(svgs) >= 2 and len(list((study_out / "figures").iterdir())) == len(svgs)
    for p in svgs:
        assert p.read_text().lstrip().startswith(("<?xml", "<svg"))
    assert {"growth_vs_hidden_size.svg", "growth_vs_num_layers.svg"} <= {p.name for p in svgs}
    html = (study_out / "report.html").read_text()
    assert html.count('src="data:image/svg+xml;base64,') == len(svgs)
    # no temp leftovers (beside it or inside); the manifest lists what specbound wrote
    assert [p.name for p in study_out.glob(".*")] == [".specbound-manifest.json"]
    assert not list(study_out.parent.glob(".specbound-*"))


def test_python_api_and_manifest(grid: list[Path], tmp_path: Path) -> None:
    man = tmp_path / "models.txt"
    man.write_text("# grid\n" + "\n".join(str(p) for p in grid[:2]) + "\n\n")
    assert read_manifest(man) == [str(p) for p in grid[:2]]
    s = scale(read_manifest(man))
    assert len(s.models) == 2 and set(s.models.hidden_size) == {64, 128}
    # only N varies: growth along N, nothing along L
    assert set(s.growth.axis) == {"hidden_size"}
    out = tmp_path / "o"
    res = CliRunner().invoke(app, ["scale", "--manifest", str(man), "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    assert len(pd.read_csv(out / "models.csv")) == 2


def test_growth_table_skips_single_points() -> None:
    m = pd.DataFrame(
        {
            "num_layers": [2, 4, 6],
            "hidden_size": [64, 64, 128],
            "spectrum_adaptive": [1.0, 2.0, 3.5],
            "norm_based": [1.0, 3.0, 9.0],
        }
    )
    g = growth_table(m)
    assert set(g.axis) == {"num_layers"}  # no N with >= 2 values at a fixed L
    assert set(g.measure) == {"spectrum_adaptive", "norm_based"}  # the measures present
    row = g[(g.measure == "norm_based") & (g.fit == "per_fixed")].iloc[0]
    assert row.fixed_value == 64 and row.log10_per_unit == pytest.approx(1.0)


def test_scale_errors_leave_no_output(grid: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "o"
    # every model broken: one error line, nothing written (one broken among good ones is
    # skipped with a warning instead: tests/cli/test_safe_outputs.py)
    r = CliRunner().invoke(
        app, ["scale", str(tmp_path / "nope"), str(tmp_path / "nope2"), "--out", str(out), "-q"]
    )
    assert r.exit_code == 2
    assert r.output.count("error:") == 1 and "nope" in r.output
    assert not out.exists()
    r = CliRunner().invoke(app, ["scale", "--out", str(out)])
    assert r.exit_code == 2 and "--manifest" in r.output


def test_without_matplotlib(
    grid: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    from specbound.report.figures.style import require_matplotlib

    with pytest.raises(SpecboundError, match=r"specbound\[plot\]"):
        require_matplotlib()
    out = tmp_path / "o"
    r = CliRunner().invoke(app, ["scale", str(grid[0]), "--out", str(out), "-q"])
    assert r.exit_code == 2 and "specbound[plot]" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert not out.exists()
    r = CliRunner().invoke(app, ["analyze", str(grid[0]), "--out", str(out), "--report", "-q"])
    assert r.exit_code == 2 and "specbound[plot]" in r.output
