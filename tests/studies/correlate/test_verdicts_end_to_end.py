"""Protocol v3 in ``correlate`` (SPEC 10 "From statistics to verdicts"): the hidden cases of
issue 34 (tiny manifests, --bootstrap 1 / 150 / 999, constant baselines, missing grid points:
never a verdict) and the primary / exploratory families of differences.csv."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specbound.errors import SpecboundValueError
from specbound.studies import correlate as C
from specbound.studies.protocol import verdicts as V
from tests.support.checkpoints import write_tiny_bert
from tests.support.cli_runner import run_cli

WORDS = {"better", "worse"}


def _grid_rows(seeds=(0, 1), drop=()):
    """depth x width x train_size (12 configurations) x seeds, with a gap and measures."""
    rng = np.random.default_rng(3)
    rows = []
    for depth in (1, 2):
        for width in (4, 8):
            for n in (100, 200, 400):
                for seed in seeds:
                    if (depth, width, n) in drop:
                        continue
                    gap = 0.1 * depth + 0.01 * width + 20 / n + 0.02 * rng.standard_normal()
                    rows.append(
                        {
                            "model": f"d{depth}_w{width}_n{n}_s{seed}",
                            "depth": depth,
                            "width": width,
                            "train_size": n,
                            "seed": seed,
                            "train_acc": 1.0,
                            "test_acc": 1.0 - gap,
                            "converged": True,
                        }
                    )
    return pd.DataFrame(rows)


def _stub(table: pd.DataFrame, constant_params: bool = False):
    """An analyzer returning made-up measures: spectrum_adaptive follows the gap, norm_based
    is noise, num_parameters the architecture (or one value for every model)."""
    rng = np.random.default_rng(5)
    noise = dict(zip(table["model"], rng.standard_normal(len(table)), strict=True))
    by = table.set_index("model")

    def analyzer(path, init, cache, device, name):
        r = by.loc[name]
        gap = 1.0 - float(r["test_acc"])
        return {
            "spectrum_adaptive": gap + 0.01 * noise[name],
            "norm_based": noise[name],
            "num_parameters": 1000.0 if constant_params else float(r["depth"] * r["width"] ** 2),
        }

    return analyzer


def _manifest(tmp_path: Path, table: pd.DataFrame, grid: dict | None = None) -> Path:
    d = tmp_path / "zoo"
    d.mkdir(parents=True)
    table.to_csv(d / "zoo.csv", index=False)
    if grid is not None:
        axes = list(grid)
        (d / "zoo.json").write_text(json.dumps({"task": "toy", "axes": axes, "grid": grid}))
        return d
    return d / "zoo.csv"


GRID = {"depth": [1, 2], "width": [4, 8], "train_size": [100, 200, 400], "seed": [0, 1]}


def _no_verdict(res) -> None:
    d = res.differences
    assert not (set(d["verdict"]) & WORDS), d[d["verdict"].isin(WORDS)]
    assert not res.correlation["verdict"].str.startswith("predicts").any()


@pytest.mark.parametrize("b", [0, 1, 150, 199])
def test_bootstrap_below_200_refused_by_the_api(tmp_path, b):
    t = _grid_rows()
    with pytest.raises(SpecboundValueError, match="200") as info:
        C.correlate(_manifest(tmp_path, t), bootstrap=b, analyzer=_stub(t))
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("b", ["1", "150"])
def test_bootstrap_below_200_refused_by_the_cli(tmp_path, b):
    out = tmp_path / "out"
    r = run_cli("correlate", "--manifest", tmp_path / "zoo.csv", "--out", out, "--bootstrap", b)
    assert r.code == 2
    assert "--bootstrap" in r.one_error_line() and "200" in r.one_error_line()
    assert not out.exists()


def test_bootstrap_999_is_insufficient_evidence(tmp_path, capsys):
    t = _grid_rows()
    res = C.correlate(_manifest(tmp_path, t), bootstrap=999, analyzer=_stub(t))
    d = res.differences
    assert set(d["verdict"]) == {"insufficient evidence"}
    assert res.correlation["verdict"].str.startswith("insufficient evidence: B = 999").all()
    prim = res.primary
    assert list(prim["contrast"]) == ["P1", "P2", "P3"]
    assert (prim["B"] == 10_000).all()  # max(999, 10000) draws for the primary rows
    assert (d[d["family"] == "exploratory"]["B"] <= 999).all()
    from specbound.report.terminal_correlate import print_correlation

    print_correlation(res, width=80)
    printed = capsys.readouterr().out
    assert "primary contrasts on tau_fixed_n" in printed
    assert "P1 = spectrum_adaptive − norm_based: B = 10000" in printed
    assert all(len(line) <= 80 for line in printed.splitlines())


def test_tiny_manifest_two_models(tmp_path):
    t = _grid_rows().iloc[[0, 2]].reset_index(drop=True)  # two models, two configurations
    res = C.correlate(_manifest(tmp_path, t), bootstrap=1000, analyzer=_stub(t))
    _no_verdict(res)
    assert set(res.differences["verdict"]) <= {"insufficient evidence"}
    assert res.correlation["verdict"].str.startswith("insufficient evidence").all()
    assert "2 < 8 configurations" in res.correlation["verdict"].iloc[0]


def test_tiny_zoo_on_the_command_line(tmp_path):
    """Two real (tiny) checkpoints through the CLI: the primary rows are there, every verdict
    is "insufficient evidence" (terminal, --json, differences.csv)."""
    pytest.importorskip("matplotlib")
    d = tmp_path / "zoo"
    rows = ["model,depth,train_size,train_acc,test_acc,converged"]
    for k, depth in enumerate((1, 2)):
        write_tiny_bert(d / f"m{k}", layers=depth, hidden=8, heads=2, ffn=16, seed=k)
        rows.append(f"m{k},{depth},{100 * (k + 1)},1.0,{0.8 - 0.1 * k},true")
    (d / "zoo.csv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    r = run_cli("correlate", "--manifest", d / "zoo.csv", "--out", out, "--json", "--quiet")
    assert r.code == 0, r.err
    got = json.loads(r.out)
    assert got["protocol"] == 4
    assert [p["contrast"] for p in got["primary"]] == ["P1", "P2", "P3"]
    assert {x["verdict"] for x in got["differences"]} == {"insufficient evidence"}
    diffs = pd.read_csv(out / "differences.csv")
    assert set(diffs["verdict"]) == {"insufficient evidence"}
    assert {"cmi_low", "cmi_high"} <= set(pd.read_csv(out / "correlation.csv").columns)
    assert got["primary_statistic"] == "tau_fixed_n"  # n takes two values


def test_constant_baseline_is_not_comparable(tmp_path):
    t = _grid_rows()
    res = C.correlate(_manifest(tmp_path, t), bootstrap=1000, analyzer=_stub(t, True))
    d = res.differences
    vs = d[(d["versus"] == "num_parameters") | (d["measure"] == "num_parameters")]
    assert len(vs) and set(vs["verdict"]) == {"not comparable"}
    assert vs["evidence"].str.contains("; not comparable: ").all()
    # sample_size_only is constant within n and on every group of depth and width
    ss = d[(d["versus"] == "sample_size_only") & d["statistic"].isin(["psi", "psi_fixed_n"])]
    assert len(ss) and set(ss["verdict"]) == {"not comparable"}
    # the architecture-only baseline is blind to train_size: Psi rows against it
    res2 = C.correlate(_manifest(tmp_path / "b", t), bootstrap=1000, analyzer=_stub(t))
    d2 = res2.differences
    psi = d2[(d2["versus"] == "num_parameters") & (d2["statistic"] == "psi")]
    assert set(psi["verdict"]) == {"not comparable"}
    assert psi["evidence"].str.contains("constant on every group of axis train_size").all()


def test_missing_grid_points_are_named(tmp_path):
    t = _grid_rows(drop={(2, 8, 400)})
    t.loc[t["model"] == "d1_w4_n100_s0", "converged"] = False
    t.loc[t["model"] == "d1_w4_n100_s1", "converged"] = False
    res = C.correlate(_manifest(tmp_path, t, GRID), bootstrap=1000, analyzer=_stub(t))
    names = ["depth=1 width=4 train_size=100", "depth=2 width=8 train_size=400"]
    assert res.missing == names
    summary = res.summary()
    assert summary["missing"] == 2 and summary["missing_configurations"] == names
    assert res.differences["evidence"].str.contains("missing 2 of the grid: " + names[0]).all()
    assert res.correlation["verdict"].str.contains("missing 2 of the grid").all()
    # 10 configurations remain: verdicts are allowed, the missing points stay beside them


def test_primary_rows_holm_bh_and_verdicts_follow_the_rules(tmp_path):
    t = _grid_rows(seeds=(0, 1, 2))
    res = C.correlate(_manifest(tmp_path, t, GRID), bootstrap=1000, analyzer=_stub(t))
    d = res.differences
    prim, expl = d[d["family"] == "primary"], d[d["family"] == "exploratory"]
    assert list(prim.index) == [0, 1, 2] and list(prim["statistic"].unique()) == ["tau_fixed_n"]
    assert list(zip(prim["measure"], prim["versus"], strict=True)) == [
        ("spectrum_adaptive", "norm_based"),
        ("spectrum_adaptive", "num_parameters"),
        ("norm_based", "num_parameters"),
    ]
    assert prim["q_bh"].isna().all() and expl["p_holm"].isna().all()
    assert np.allclose(prim["p_holm"], V.holm(prim["p"].to_numpy()), equal_nan=True)
    assert np.allclose(expl["q_bh"], V.bh(expl["p"].to_numpy()), equal_nan=True)
    assert (expl["contrast"].fillna("") == "").all()
    # no exploratory row repeats a primary one
    keys = set(zip(prim["measure"], prim["versus"], prim["statistic"], strict=True))
    assert not keys & set(zip(expl["measure"], expl["versus"], expl["statistic"], strict=True))
    for r in d.to_dict("records"):
        assert r["verdict"] in V.VERDICTS
        if r["verdict"] in WORDS:
            adj = r["p_holm"] if r["family"] == "primary" else r["q_bh"]
            assert adj < 0.05 and (r["low"] > 0 or r["high"] < 0)
            assert (r["delta"] > 0) == (r["verdict"] == "better")
    # spectrum_adaptive follows the gap, norm_based is noise: P1 is a win here
    p1 = prim.iloc[0]
    assert p1["verdict"] == "better" and p1["p"] == pytest.approx(2 / 10_001)
    assert p1["evidence"].startswith("B = 10000; 12 configurations; 3 strata")
    # CMI intervals hold their estimate
    c = res.correlation
    ok = c["cmi"].notna()
    assert (
        (c.loc[ok, "cmi_low"] <= c.loc[ok, "cmi"]) & (c.loc[ok, "cmi"] <= c.loc[ok, "cmi_high"])
    ).all()


def test_cmi_draws_with_unit_weights_is_cmi():
    from specbound.studies.protocol.mutual_info import cmi, cmi_draws

    rng = np.random.default_rng(0)
    codes = rng.integers(0, 3, (30, 3))
    g = rng.standard_normal(30)
    mu = g + rng.standard_normal(30)
    got = cmi_draws(mu, g, codes, np.ones((2, 30)))
    assert got == pytest.approx([cmi(mu, g, codes)[0]] * 2, abs=1e-12)
    w = rng.integers(0, 3, (2, 30))
    for k in range(2):  # a resample is the list of copies
        rep = w[k]
        want = cmi(np.repeat(mu, rep), np.repeat(g, rep), np.repeat(codes, rep, axis=0))[0]
        assert cmi_draws(mu, g, codes, w[k : k + 1])[0] == pytest.approx(want, abs=1e-12)
    assert math.isnan(cmi_draws(mu, np.ones(30), codes, np.ones((1, 30)))[0])
