"""SPEC 10 correlation protocol: hand-computed tables, a brute-force reimplementation, the CLI.

The brute-force functions below share no code with specbound: plain loops over pairs and dicts.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specbound.errors import SpecboundError
from specbound.studies import correlate as C
from tests.support.checkpoints import write_tiny_bert
from tests.support.cli_runner import run_cli_process
from tests.support.correlate_reference import reference

# --- brute force (independent of the package) ----------------------------------------------


def bf_tau(x, y):
    """Kendall tau-b from pair counts; NaN when x or y has no untied pair."""
    conc = disc = tx = ty = npairs = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        npairs += 1
        dx, dy = x[i] - x[j], y[i] - y[j]
        if dx == 0:
            tx += 1
        if dy == 0:
            ty += 1
        if dx * dy > 0:
            conc += 1
        elif dx * dy < 0:
            disc += 1
    den = (npairs - tx) * (npairs - ty)
    return (conc - disc) / math.sqrt(den) if den > 0 else math.nan


def bf_cmi_s(mu, g, theta, s):
    cells = defaultdict(list)
    for a in range(len(mu)):
        for b in range(len(mu)):
            if a == b or g[a] == g[b]:
                continue
            u = (tuple(theta[a][i] for i in s), tuple(theta[b][i] for i in s))
            cells[u].append((mu[a] > mu[b], g[a] > g[b]))
    total = sum(len(v) for v in cells.values())
    num = den = 0.0
    for pairs in cells.values():
        pu = len(pairs) / total
        n = len(pairs)
        joint = Counter(pairs)
        pm = Counter(v for v, _ in pairs)
        pg = Counter(w for _, w in pairs)
        info = sum(
            c / n * math.log2((c / n) / (pm[v] / n * pg[w] / n)) for (v, w), c in joint.items()
        )
        ent = -sum(c / n * math.log2(c / n) for c in pg.values())
        num += pu * info
        den += pu * ent
    return num / den if den > 1e-12 else math.nan


def bf_cmi(mu, g, theta):
    k = len(theta[0])
    subsets = [()] + [(a,) for a in range(k)] + list(itertools.combinations(range(k), 2))
    vals = {s: bf_cmi_s(mu, g, theta, s) for s in subsets}
    vals = {s: v for s, v in vals.items() if not math.isnan(v)}
    if not vals:
        return math.nan, vals
    return min(vals.values()), vals


def frame(theta, mu, g, axes=("A", "B")):
    df = pd.DataFrame(theta, columns=list(axes))
    df["mu"] = mu
    df["gap"] = g
    return df


# --- hand-computed tables --------------------------------------------------------------------

# T2: axes A in {0,1}, B in {0,1,2}; six models.
T2_THETA = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
T2_MU = [1.0, 2.0, 3.0, 2.0, 2.0, 5.0]
T2_G = [0.1, 0.3, 0.2, 0.4, 0.5, 0.4]


def test_tau_hand_t2():
    # 15 pairs: concordant (0,1)(0,2)(0,3)(0,4)(0,5)(1,5)(2,5) = 7; discordant (1,2)(2,3)(2,4)(4,5)
    # = 4; tied in mu (1,3)(1,4)(3,4) = 3; tied in g (3,5) = 1.
    # tau_b = (7 - 4) / sqrt((15 - 3) (15 - 1)) = 3 / sqrt(168)
    expected = 3 / math.sqrt(168)
    assert C.kendall_tau(np.array(T2_MU), np.array(T2_G)) == pytest.approx(expected, abs=1e-15)
    assert bf_tau(T2_MU, T2_G) == pytest.approx(expected, abs=1e-15)
    from scipy.stats import kendalltau

    assert kendalltau(T2_MU, T2_G).statistic == pytest.approx(expected, abs=1e-15)


def test_psi_hand_t2():
    # Jiang's form (a pair tied in mu or g counts 0).
    # psi_A: groups by B. B=0 {0,3}: +1. B=1 {1,4}: mu tied -> 0. B=2 {2,5}: +1. psi_A = 2/3.
    # psi_B: groups by A. A=0 {0,1,2}: (0,1) C, (0,2) C, (1,2) D -> 1/3.
    #   A=1 {3,4,5}: (3,4) mu tie 0, (3,5) g tie 0, (4,5) D -> -1/3. psi_B = 0. Psi = 1/3.
    codes = C.axis_codes(frame(T2_THETA, T2_MU, T2_G), ["A", "B"])
    psi, psis = C.granulated_psi(np.array(T2_MU), np.array(T2_G), codes)
    assert psis == pytest.approx([2 / 3, 0.0], abs=1e-15)
    assert psi == pytest.approx(1 / 3, abs=1e-15)


def test_psi_group_of_one_and_single_valued_axis():
    # a seventh model alone in its groups for both axes changes nothing; an axis C with one
    # value has no groups: psi_C undefined and left out of Psi.
    theta = [*((a, b, 7) for a, b in T2_THETA), (2, 3, 7)]
    df = frame(theta, [*T2_MU, 9.0], [*T2_G, 0.0], axes=("A", "B", "C"))
    t = C.correlation_table(df, ["mu"], ["A", "B", "C"], bootstrap=0)
    r = t.iloc[0]
    assert r["psi_A"] == pytest.approx(2 / 3)
    assert r["psi_B"] == pytest.approx(0.0)
    assert math.isnan(r["psi_C"]) and r["psi_C_groups"] == 0 and r["psi_C_pairs"] == 0
    assert r["psi"] == pytest.approx(1 / 3)
    assert r["n_models"] == 7 and r["psi_A_groups"] == 3 and r["psi_B_pairs"] == 6


def test_sign_error_hand_t2():
    # one-axis pairs. Axis B (same A): (0,1) C -> 0, (0,2) C -> 0, (1,2) D -> 1, (3,4) dmu = 0
    #   -> 1/2, (3,5) dg = 0 -> excluded, (4,5) D -> 1: mean 2.5 / 5 = 0.5.
    # Axis A (same B): (0,3) C -> 0, (1,4) dmu = 0 -> 1/2, (2,5) C -> 0: mean 1/6.
    # all: 3 / 8 = 0.375; no axis has >= 10 pairs: the robust figure is "too few pairs".
    codes = C.axis_codes(frame(T2_THETA, T2_MU, T2_G), ["A", "B"])
    mean, robust, axis = C.sign_error(np.array(T2_MU), np.array(T2_G), codes)
    assert mean == pytest.approx(0.375, abs=1e-15)
    assert math.isnan(robust) and axis is None
    t = C.correlation_table(frame(T2_THETA, T2_MU, T2_G), ["mu"], ["A", "B"], bootstrap=0)
    assert t.loc[0, "sign_error_robust_axis"] == C.TOO_FEW_PAIRS
    assert t.loc[0, "sign_error_B"] == pytest.approx(0.5) and t.loc[0, "sign_error_B_pairs"] == 5
    assert t.loc[0, "sign_error_A"] == pytest.approx(1 / 6) and t.loc[0, "sign_error_A_pairs"] == 3


# T4: one axis A = [0, 0, 1, 1], mu = [1, 1, 5, 5] (mu only tracks A), g = [1, 2, 3, 4].
T4_THETA = [(0,), (0,), (1,), (1,)]
T4_MU = [1.0, 1.0, 5.0, 5.0]
T4_G = [1.0, 2.0, 3.0, 4.0]


def test_cmi_hand_t4():
    # 12 ordered pairs, all with dg != 0; (V_mu, V_g) with a mu tie counting as V_mu = 0:
    #   (0,0): (0,1)(0,2)(0,3)(1,2)(1,3)(2,3) = 6; (1,1): (2,0)(3,0)(2,1)(3,1) = 4;
    #   (0,1): (1,0)(3,2) = 2; (1,0): 0.
    # S = {}: P(V_mu=0) = 2/3, P(V_g=0) = 1/2, I = 1/2 log2(3/2) + 1/3 log2 2 + 1/6 log2(1/2)
    #   = 1/2 log2 1.5 + 1/6; H(V_g) = 1.
    # S = {A}: cell (0,0) = {(0,1): (0,0), (1,0): (0,1)}: V_mu constant, I = 0, H = 1;
    #   cells (0,1), (1,0): V_g constant, H = 0; cell (1,1) like (0,0). CMI_A = 0 / (4/12) = 0.
    mu, g = np.array(T4_MU), np.array(T4_G)
    codes = C.axis_codes(pd.DataFrame({"A": [0, 0, 1, 1]}), ["A"])
    expected_empty = 0.5 * math.log2(1.5) + 1 / 6
    assert C.cmi(mu, g, codes[:, :0]) == (pytest.approx(expected_empty, abs=1e-12), ())
    assert bf_cmi_s(T4_MU, T4_G, T4_THETA, ()) == pytest.approx(expected_empty, abs=1e-12)
    val, s = C.cmi(mu, g, codes)
    assert val == pytest.approx(0.0, abs=1e-12)
    assert s == (0,)
    t = C.correlation_table(
        pd.DataFrame({"A": [0, 0, 1, 1], "mu": T4_MU, "gap": T4_G}), ["mu"], ["A"], bootstrap=0
    )
    assert t.loc[0, "cmi_axes"] == "A"


def test_cmi_independent_is_zero_at_empty_set():
    # mu = [1,2,3,4], g = [1,2,2,1]: the 8 ordered pairs with dg != 0 split 2/2/2/2 over the four
    # (V_mu, V_g) cells: I = 0 at S = {} (reported as "(none)", the first S).
    df = pd.DataFrame({"A": [0, 0, 1, 1], "mu": [1.0, 2, 3, 4], "gap": [1.0, 2, 2, 1]})
    t = C.correlation_table(df, ["mu"], ["A"], bootstrap=0)
    assert t.loc[0, "cmi"] == pytest.approx(0.0, abs=1e-12)
    assert t.loc[0, "cmi_axes"] == C.EMPTY_SET


def test_undefined_cases():
    codes = np.zeros((3, 1), dtype=np.int64)
    # constant measure: tau undefined; all gaps equal: no pair for CMI or sign-error
    assert math.isnan(C.kendall_tau(np.ones(3), np.arange(3.0)))
    assert C.cmi(np.arange(3.0), np.ones(3), codes) == (pytest.approx(math.nan, nan_ok=True), None)
    se = C.sign_error(np.arange(3.0), np.ones(3), np.array([[0], [1], [2]]))
    assert math.isnan(se[0]) and math.isnan(se[1]) and se[2] is None
    # a measure undefined on some models is evaluated over the others
    df = pd.DataFrame({"A": [0, 1, 2, 3], "mu": [1.0, np.nan, 3.0, 2.0], "gap": [1.0, 5, 2, 3]})
    t = C.correlation_table(df, ["mu"], ["A"], bootstrap=200)
    assert t.loc[0, "n_models"] == 3
    assert t.loc[0, "kendall_tau"] == pytest.approx(bf_tau([1.0, 3, 2], [1.0, 2, 3]))


# --- random tables against the brute force ---------------------------------------------------


@st.composite
def tables(draw):
    n = draw(st.integers(2, 9))
    k = draw(st.integers(1, 3))
    levels = [draw(st.integers(1, 3)) for _ in range(k)]
    theta = [tuple(draw(st.integers(0, lv - 1)) for lv in levels) for _ in range(n)]
    small = st.integers(0, 4).map(float)  # few values: ties are frequent
    mu = [draw(small) for _ in range(n)]
    g = [draw(small) / 4 for _ in range(n)]
    return theta, mu, g


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_statistics_match_brute_force(tab):
    # the whole correlation row (through pandas) against the pair loops of correlate_reference
    theta, mu, g = tab
    axes = [f"x{i}" for i in range(len(theta[0]))]
    df = frame(theta, mu, g, axes=axes)
    row = C.correlation_table(df, ["mu"], axes, bootstrap=0).iloc[0]
    same = lambda a, b: (math.isnan(a) and math.isnan(b)) or abs(a - b) < 1e-12  # noqa: E731
    assert same(float(row["kendall_tau"]), bf_tau(mu, g))
    ref = reference(mu, g, theta)
    assert same(float(row["psi"]), ref["psi"])
    for i, a in enumerate(axes):
        assert same(float(row[f"psi_{a}"]), ref["psi_axes"][i])
        assert row[f"psi_{a}_groups"] == ref["psi_groups"][i]
        assert row[f"psi_{a}_pairs"] == ref["psi_pairs"][i]
        assert same(float(row[f"sign_error_{a}"]), ref["sign_axes"][i])
        assert row[f"sign_error_{a}_pairs"] == ref["sign_pairs"][i]
    best, vals = bf_cmi(mu, g, theta)
    assert same(float(row["cmi"]), best)
    if vals:
        names = {s: "+".join(axes[i] for i in s) if s else C.EMPTY_SET for s in vals}
        assert row["cmi_axes"] in {names[s] for s, v in vals.items() if abs(v - best) < 1e-9}
    assert same(float(row["sign_error"]), ref["sign_error"])
    enough = [i for i, p in enumerate(ref["sign_pairs"]) if p >= 10]
    worst = max((ref["sign_axes"][i] for i in enough), default=math.nan)
    assert same(float(row["sign_error_robust"]), worst)
    if not enough:
        assert row["sign_error_robust_axis"] == C.TOO_FEW_PAIRS


def test_bootstrap_is_seeded_and_resamples_configurations():
    rng = np.random.default_rng(3)
    n = 24
    theta = [
        (int(a), int(b)) for a, b in zip(rng.integers(0, 3, n), rng.integers(0, 2, n), strict=True)
    ]
    g = rng.standard_normal(n)
    mu = g + rng.standard_normal(n)
    df = frame(theta, mu, g)
    t1 = C.correlation_table(df, ["mu"], ["A", "B"], bootstrap=200, seed=11)
    t2 = C.correlation_table(df, ["mu"], ["A", "B"], bootstrap=200, seed=11)
    pd.testing.assert_frame_equal(t1, t2)
    t3 = C.correlation_table(df, ["mu"], ["A", "B"], bootstrap=200, seed=12)
    assert t3.loc[0, "kendall_tau_low"] != t1.loc[0, "kendall_tau_low"]
    r = t1.iloc[0]
    assert r["n_configurations"] == len(set(theta))
    assert r["kendall_tau_low"] <= r["kendall_tau"] <= r["kendall_tau_high"]
    assert r["psi_low"] <= r["psi"] <= r["psi_high"]


def test_bound_forms_and_sample_size_only():
    df = pd.DataFrame(
        {
            "spectrum_adaptive": [3.0, 4.0],
            "num_parameters": [1000.0, 100.0],
            "mean_stable_rank": [1.0, 2.0],
            "train_size": [100, 10000],
        }
    )
    added = C.add_bound_forms(
        df,
        ["spectrum_adaptive", "num_parameters", "mean_stable_rank"],
        {"spectrum_adaptive": True, "num_parameters": False},
    )
    assert added == [
        "spectrum_adaptive_per_sqrt_n",
        "num_parameters_per_sqrt_n",
        "sample_size_only",
    ]
    assert list(df["spectrum_adaptive_per_sqrt_n"]) == pytest.approx([2.0, 2.0])
    assert list(df["num_parameters_per_sqrt_n"]) == pytest.approx([2.0, 0.0])
    assert list(df["sample_size_only"]) == pytest.approx([-1.0, -2.0])
    same_n = pd.DataFrame({"spectrum_adaptive": [3.0, 4.0], "train_size": [100, 100]})
    assert C.add_bound_forms(same_n, ["spectrum_adaptive"], {"spectrum_adaptive": True}) == [
        "spectrum_adaptive_per_sqrt_n"
    ]


def test_read_zoo_axes_and_errors(tmp_path):
    (tmp_path / "zoo.csv").write_text(
        "model,init,train_size,test_size,converged,train_acc,test_acc,train_loss,test_loss,"
        "steps,wall_s,depth,width,seed\n"
        "a,,100,50,True,1,0.5,0.01,1,10,1,1,8,0\n"
        "b,,200,50,True,1,0.6,0.01,1,10,1,1,16,0\n"
        "c,,200,50,True,1,0.6,0.01,1,10,1,1,16,1\n"
    )
    z = C.read_zoo(tmp_path / "zoo.csv")
    assert z.axes == ["train_size", "width"]  # varying, not bookkeeping, not seed
    (tmp_path / "zoo.json").write_text(
        json.dumps({"task": "t", "axes": ["depth", "width", "train_size", "seed"]})
    )
    z = C.read_zoo(tmp_path)
    assert z.axes == ["width", "train_size"] and z.task == "t"  # the zoo's axes, seeds replicate
    assert C.read_zoo(tmp_path, "depth,seed").axes == ["depth", "seed"]
    (tmp_path / "zoo.json").write_text(json.dumps({"task": "t", "axes": "width"}))
    with pytest.raises(SpecboundError, match="'axes' is 'width', not list"):
        C.read_zoo(tmp_path)
    (tmp_path / "zoo.json").write_text(json.dumps({"task": "t", "axes": ["width"]}))
    with pytest.raises(SpecboundError, match="axis 'lr'"):
        C.read_zoo(tmp_path, "lr")
    (tmp_path / "bad.csv").write_text("x,y\n1,2\n")
    with pytest.raises(SpecboundError, match="no 'model' column"):
        C.read_zoo(tmp_path / "bad.csv")
    with pytest.raises(SpecboundError, match="needs columns test_loss and train_loss"):
        C.gap_values(pd.DataFrame({"train_acc": [1.0], "test_acc": [0.5]}), "loss")


# --- the study and the command ---------------------------------------------------------------


def _zoo(tmp_path: Path) -> Path:
    """Six tiny BERTs (one unconverged), inits, a missing and a broken model; made-up metrics."""
    d = tmp_path / "zoo"
    rows = ["model,init,depth,width,train_size,train_acc,test_acc,train_loss,test_loss,converged"]
    k = 0
    for depth in (1, 2):
        for width in (4, 8):
            for n in (100, 400):
                k += 1
                if k > 6:
                    break
                write_tiny_bert(
                    d / f"m{k}", layers=depth, hidden=width, heads=2, ffn=2 * width, seed=k
                )
                write_tiny_bert(
                    d / f"m{k}" / "init",
                    layers=depth,
                    hidden=width,
                    heads=2,
                    ffn=2 * width,
                    seed=100 + k,
                )
                rows.append(
                    f"m{k},m{k}/init,{depth},{width},{n},1.0,{0.9 - 0.05 * (k % 4)},"
                    f"0.01,{0.2 + 0.1 * (k % 3)},{'false' if k == 6 else 'true'}"
                )
    rows.append("gone,,1,4,100,1.0,0.6,0.01,0.5,true")
    (d / "broken").mkdir()
    (d / "broken" / "config.json").write_text("{not json")
    rows.append("broken,,2,4,100,1.0,0.7,0.01,0.5,true")
    (d / "zoo.csv").write_text("\n".join(rows) + "\n")
    return d


def tau_arch_by_hand(models: pd.DataFrame, measure: str) -> float:
    """SPEC 10 protocol v4 by hand: the mean over cells of equal depth, width (and n) of
    scipy's tau-b within the cell, cells with >= 3 models and a defined tau-b."""
    from scipy.stats import kendalltau

    keys = [c for c in ("depth", "width", "train_size") if c in models.columns]
    ok = models[models[measure].notna() & models["gap"].notna()]
    taus = []
    for _, cell in ok.groupby(keys):
        if len(cell) >= 3:
            t = kendalltau(cell[measure], cell["gap"]).statistic
            if not math.isnan(t):
                taus.append(t)
    return sum(taus) / len(taus) if taus else math.nan


def check_tables_against_reference(out: Path, axes: list[str]) -> None:
    """Recompute correlation.csv and differences.csv from models.csv with the brute force:
    what a reader can check."""
    models = pd.read_csv(out / "models.csv")
    corr = pd.read_csv(out / "correlation.csv")
    diffs = pd.read_csv(out / "differences.csv")
    assert list(diffs.columns) == [
        *["measure", "versus", "statistic", "delta", "low", "high", "family", "contrast"],
        *["B", "p", "p_holm", "q_bh", "verdict", "evidence"],
        *["verdict_stable", "p_seeds", "low_seeds", "high_seeds"],
    ]
    theta = list(models[axes].itertuples(index=False, name=None))
    n = list(models["train_size"]) if "train_size" in models.columns else None
    n_axis = axes.index("train_size") if "train_size" in axes else None
    g = list(models["gap"])
    same = lambda a, b: (math.isnan(a) and math.isnan(b)) or abs(a - b) < 1e-9  # noqa: E731
    for row in corr.to_dict("records"):
        mu = list(models[row["measure"]])
        ok = [i for i in range(len(mu)) if not math.isnan(mu[i])]
        if not ok:  # a measure undefined on every model (no init: distance_from_init)
            assert row["n_models"] == 0 and math.isnan(row["kendall_tau"])
            continue
        ref = reference(
            [mu[i] for i in ok],
            [g[i] for i in ok],
            [theta[i] for i in ok],
            None if n is None else [n[i] for i in ok],
            n_axis=n_axis,
        )
        assert row["n_models"] == len(ok)
        assert same(row["kendall_tau"], ref["tau"])
        assert same(row["psi"], ref["psi"])
        assert same(row["tau_fixed_n"], ref["tau_n"])
        assert same(row["psi_fixed_n"], ref["psi_n"])
        assert same(row["sign_error"], ref["sign_error"])
        for i, a in enumerate(axes):
            assert same(row[f"psi_{a}"], ref["psi_axes"][i])
            assert row[f"psi_{a}_groups"] == ref["psi_groups"][i]
            assert row[f"psi_{a}_pairs"] == ref["psi_pairs"][i]
            assert same(row[f"sign_error_{a}"], ref["sign_axes"][i])
            assert row[f"sign_error_{a}_pairs"] == ref["sign_pairs"][i]
        if {"depth", "width"} <= set(models.columns):
            assert same(row["tau_arch"], tau_arch_by_hand(models, row["measure"]))
    point = corr.set_index("measure")
    for r in diffs.to_dict("records"):
        a, b = point.loc[r["measure"], r["statistic"]], point.loc[r["versus"], r["statistic"]]
        assert same(r["delta"], a - b)
    summary = json.loads((out / "correlate.json").read_text())
    assert summary["protocol"] == 5 and summary["bootstrap_unit"] == "configuration"
    assert {"n_at_ceiling", "r2_spectrum_adaptive", "statement"} <= set(summary["rank_ceiling"])


def test_cli_correlate_end_to_end(tmp_path, capsys):
    pytest.importorskip("matplotlib")  # needs the extra
    import signal

    from specbound.cli import main

    zoo = _zoo(tmp_path)
    out = tmp_path / "out"
    handler = signal.getsignal(signal.SIGTERM)
    try:  # in-process (no interpreter start-up); main() installs a SIGTERM handler
        with pytest.raises(SystemExit) as exit_info:
            main(
                [
                    "correlate",
                    "--manifest",
                    str(zoo / "zoo.csv"),
                    "--out",
                    str(out),
                    "--bootstrap",
                    "200",
                    "--seed",
                    "3",
                ]
            )
    finally:
        signal.signal(signal.SIGTERM, handler)
    err = capsys.readouterr().err
    assert exit_info.value.code == 0, err
    assert "[8/8] broken: skipped:" in err and "Traceback" not in err
    skipped = pd.read_csv(out / "skipped.csv")
    assert list(skipped["model"]) == ["m6", "gone", "broken"]
    assert "unconverged" in skipped["reason"][0] and "does not exist" in skipped["reason"][1]
    # the CLI's skip reasons name its flags (the library's, its parameters)
    assert skipped["reason"][0] == "unconverged (excluded; --include-unconverged keeps it)"
    models = pd.read_csv(out / "models.csv")
    assert list(models["model"]) == ["m1", "m2", "m3", "m4", "m5"]
    corr = pd.read_csv(out / "correlation.csv")
    names = list(corr["measure"])
    assert names[:2] == ["spectrum_adaptive", "norm_based"]
    for m in [
        "distance_from_init",
        "num_parameters",
        "spectrum_adaptive_per_sqrt_n",
        "norm_based_per_sqrt_n",
        "num_parameters_per_sqrt_n",
        "sample_size_only",
    ]:
        assert m in names
    assert list(corr.columns) == C.correlation_columns(["depth", "width", "train_size"])
    assert (models["gap"] == models["train_acc"] - models["test_acc"]).all()
    check_tables_against_reference(out, ["depth", "width", "train_size"])
    html = (out / "report.html").read_text()
    assert "Best by" in html and "data:image/svg+xml;base64," in html
    assert "http://" not in html and "https://" not in html
    assert (out / "figures" / "tau_psi.svg").is_file()
    assert (out / "figures" / "measure_spectrum_adaptive.svg").is_file()


def test_correlate_api_zoo_dir_and_failures(tmp_path):
    zoo = _zoo(tmp_path)
    # --include-unconverged keeps m6; the loss gap is test - train loss
    res = C.correlate(zoo / "zoo.csv", bootstrap=200, include_unconverged=True, gap="loss")
    assert "m6" in set(res.models["model"]) and len(res.skipped) == 2
    m = res.models
    assert (m["gap"] == m["test_loss"] - m["train_loss"]).all()
    (zoo / "zoo.json").write_text(json.dumps({"task": "toy", "axes": ["depth", "width"]}))
    seen = []
    res = C.correlate(zoo, bootstrap=200, on_model=lambda i, n, name, err: seen.append(name))
    assert res.axes == ["depth", "width"] and res.task == "toy"
    assert seen[-1] == "broken" and len(seen) == 8
    assert res.n_unconverged == 1 and len(res.skipped) == 3
    why = dict(zip(res.skipped["model"], res.skipped["reason"], strict=True))
    assert why["m6"] == "unconverged (excluded; include_unconverged keeps it)"
    assert res.models["distance_from_init"].notna().all()
    bad = tmp_path / "bad.csv"
    bad.write_text("model,train_acc,test_acc\nnope,1,0.5\n")
    with pytest.raises(SpecboundError, match="no model"):
        C.correlate(bad, bootstrap=200)


def test_correlate_api_writes_tables_a_reader_can_recompute(tmp_path):
    zoo = _zoo(tmp_path)
    res = C.correlate(zoo / "zoo.csv", bootstrap=200, seed=3)
    out = tmp_path / "tables"
    out.mkdir()
    written = C.write_tables(res, out)
    assert [p.name for p in written] == [
        "models.csv",
        "correlation.csv",
        "differences.csv",
        "skipped.csv",
        "pstar.csv",  # protocol v5's per-matrix table
        "correlate.json",
    ]
    models = pd.read_csv(out / "models.csv")
    forms = ["spectrum_adaptive_fixed_p0.5", "spectrum_adaptive_fixed_p1"]
    forms += ["spectrum_adaptive_fixed_p2", "spectrum_adaptive_modal"]
    assert list(models.columns[-7:]) == list(C.CEILING_COLUMNS) + forms
    assert C.CEILING_COLUMNS[-1] == "adaptive_headroom_min"
    check_tables_against_reference(out, ["depth", "width", "train_size"])
    corr = pd.read_csv(out / "correlation.csv")
    assert list(corr.columns) == C.correlation_columns(["depth", "width", "train_size"])
    assert corr["verdict"].notna().all()


def test_cli_bad_input_one_line(tmp_path):
    pytest.importorskip("matplotlib")  # needs the extra
    (tmp_path / "m.csv").write_text("name,train_acc,test_acc\na,1,0.5\n")
    out = tmp_path / "out"
    r = run_cli_process("correlate", "--manifest", str(tmp_path / "m.csv"), "--out", str(out))
    assert r.code == 2, r.err
    assert "no 'model' column" in r.one_error_line()
    assert not out.exists()


def test_cli_never_overwrites_a_user_file(tmp_path, capsys):
    import signal

    from specbound.cli import main

    zoo = tmp_path / "zoo.csv"
    zoo.write_text("model,train_acc,test_acc\na,1,0.5\n")
    out = tmp_path / "notes.txt"
    out.write_text("mine")
    handler = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as exit_info:
            main(["correlate", "--manifest", str(zoo), "--out", str(out)])
    finally:
        signal.signal(signal.SIGTERM, handler)
    lines = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and len(lines) == 1 and lines[0].startswith("error: ")
    assert out.read_text() == "mine"


def _two_axis_result(df, tabs, measures):
    """A Correlation of the 20-model, axes A x B frames of the report tests."""
    return C.Correlation(
        df,
        tabs.correlation,
        pd.DataFrame(columns=C.SKIPPED_COLUMNS),
        ["A", "B"],
        measures,
        n_listed=len(df),
        differences=tabs.differences,
        n_configurations=tabs.n_configurations,
    )


def test_report_answer_names_best_and_failures():
    from specbound.report.pages.correlate_answer import answer_html

    rng = np.random.default_rng(0)
    theta = [(a, b) for a in range(4) for b in range(5)]
    g = rng.permutation(20).astype(float)
    df = frame(theta, g, g)  # mu = g: perfect
    df["reversed"] = -g
    df["noise"] = rng.standard_normal(20)
    measures = ["mu", "reversed", "noise"]
    tabs = C.correlation_study(df, measures, ["A", "B"], bootstrap=1000, seed=1)
    corr = tabs.correlation.set_index("measure")
    assert corr.loc["mu", "verdict"].startswith("predicts the gap")
    assert "fails on axis A" in corr.loc["reversed", "verdict"]
    assert corr.loc["noise", "verdict"].startswith("undetermined: ")
    html = answer_html(_two_axis_result(df, tabs, measures))
    for m in measures:  # the report shows the verdict words of correlation.csv
        assert corr.loc[m, "verdict"].split(" (")[0] in html
    assert "Best by granulated Kendall Ψ:</b> <code>mu</code>" in html
    d = tabs.differences
    row = d[(d.measure == "mu") & (d.versus == "noise") & (d.statistic == "psi")].iloc[0]
    assert row.low > 0 and C.better_word(row.low, row.high) == "better"


def test_correlate_with_stub_analyzer(tmp_path):
    # losses only: the gap defaults to test - train loss; a failing model is skipped by name
    (tmp_path / "m.csv").write_text(
        "model,train_loss,test_loss,lr\na,0.01,0.5,1\nb,0.01,0.7,2\nc,0.02,0.9,3\nboom,0.01,0.4,4\n"
    )
    calls = []

    def stub(path, init, cache, device, name):
        calls.append((path, init, name))
        if name == "boom":
            raise RuntimeError("exploded")
        return {
            "spectrum_adaptive": {"a": 1.0, "b": 2.0, "c": 3.0}[name],
            "num_parameters": 10.0,
            "distance_from_init": None,
        }

    res = C.correlate(tmp_path / "m.csv", bootstrap=200, analyzer=stub)
    assert res.gap == "loss" and res.axes == ["lr"]
    assert res.notes[0].endswith("not an axis): lr; choose them with axes")
    assert list(res.models["gap"]) == pytest.approx([0.49, 0.69, 0.88])
    assert res.skipped.to_dict("records") == [{"model": "boom", "reason": "RuntimeError: exploded"}]
    assert calls[0][0] == str(tmp_path / "a") and calls[0][1] is None
    row = res.correlation.set_index("measure")
    assert row.loc["spectrum_adaptive", "kendall_tau"] == pytest.approx(1.0)
    assert row.loc["distance_from_init", "n_models"] == 0
    assert math.isnan(row.loc["num_parameters", "kendall_tau"])
    assert "spectrum_adaptive_per_sqrt_n" not in row.index  # no train_size


def test_report_says_when_the_best_measure_contains_sample_size():
    """Issue 21: a `_per_sqrt_n` measure that wins does so partly through the -1/2 log10 n it
    contains; the page says so next to the crown (and says nothing for a weight-only winner)."""
    from specbound.report.pages.correlate_answer import answer_html

    rng = np.random.default_rng(0)
    theta = [(a, b) for a in range(4) for b in range(5)]
    g = rng.permutation(20).astype(float)

    def page(best: str) -> str:
        df = frame(theta, g, g)
        df[best] = g
        df["noise"] = rng.standard_normal(20)
        measures = [best, "noise"]
        tabs = C.correlation_study(df, measures, ["A", "B"], bootstrap=200, seed=1)
        return answer_html(_two_axis_result(df, tabs, measures))

    html = page("norm_based_per_sqrt_n")
    assert "Best by Kendall τ:</b> <code>norm_based_per_sqrt_n</code>" in html
    assert html.count("it contains sample size (a -1/2 log10 n term)") == 2  # τ and Ψ
    assert "it contains sample size" not in page("norm_based")
