"""SPEC 10 protocol v2 statistics: hand-computed tables and a brute-force reference.

``correlate_reference`` loops over pairs and shares no code with specbound.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specbound.studies.correlate import rules as RU
from specbound.studies.correlate import table as T
from specbound.studies.correlate.rules import interval_statistics
from specbound.studies.protocol import stats as S
from specbound.studies.protocol.tables import DIFFERENCE_COLUMNS
from tests.support.correlate_reference import configurations, expand, reference


def same(a, b, tol=1e-12):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


def point(mu, g, codes, n=None, n_axis=None):
    mu, g = np.asarray(mu, float), np.asarray(g, float)
    return S.statistics(mu, g, S.make_design(codes, n, n_axis), np.ones((1, mu.size)))


# --- hand-computed tables ----------------------------------------------------------------------


def test_jiang_tau_and_tau_b_with_ties():
    # pairs: (0,1) tied in x -> 0, (0,2) +, (1,2) + ; tau_J = 2/3; tau-b = 2 / sqrt(2 * 3)
    x, y = np.array([1.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0])
    assert S.jiang_tau(x, y) == pytest.approx(2 / 3, abs=1e-15)
    assert S.kendall_tau(x, y) == pytest.approx(2 / math.sqrt(6), abs=1e-15)
    # a measure constant on a group scores 0 there (it cannot see the axis), not "undefined"
    assert S.jiang_tau(np.ones(4), np.arange(4.0)) == 0.0
    assert math.isnan(S.kendall_tau(np.ones(4), np.arange(4.0)))


# T2: axes A in {0,1}, B in {0,1,2}; six models, one per configuration.
T2_THETA = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
T2_MU = [1.0, 2.0, 3.0, 2.0, 2.0, 5.0]
T2_G = [0.1, 0.3, 0.2, 0.4, 0.5, 0.4]


def test_psi_jiang_form_hand_t2():
    # psi_A: groups by B: {0,3} +1, {1,4} mu tied -> 0, {2,5} +1: psi_A = 2/3 (3 groups, 3 pairs)
    # psi_B: groups by A: {0,1,2}: C, C, D -> 1/3; {3,4,5}: mu tie 0, g tie 0, D -> -1/3:
    #   psi_B = 0 (2 groups, 6 pairs). Psi = 1/3.
    st_ = point(T2_MU, T2_G, np.array(T2_THETA))
    assert [p[0] for p in st_.psi_axes] == pytest.approx([2 / 3, 0.0], abs=1e-15)
    assert [p[0] for p in st_.psi_groups] == [3, 2]
    assert [p[0] for p in st_.psi_pairs] == [3, 6]
    assert st_.psi[0] == pytest.approx(1 / 3, abs=1e-15)


def test_sign_error_per_axis_hand_t2():
    # axis B (same A): (0,1) 0, (0,2) 0, (1,2) 1, (3,4) dmu = 0 -> 1/2, (3,5) dg = 0 excluded,
    #   (4,5) 1: 2.5 / 5 = 0.5 over 5 pairs. Axis A: (0,3) 0, (1,4) 1/2, (2,5) 0: 1/6 over 3.
    # overall 3 / 8. No axis has >= 10 pairs: the robust figure is "too few pairs".
    st_ = point(T2_MU, T2_G, np.array(T2_THETA))
    assert [s[0] for s in st_.sign_axes] == pytest.approx([1 / 6, 0.5], abs=1e-15)
    assert [s[0] for s in st_.sign_pairs] == [3, 5]
    assert st_.sign_error[0] == pytest.approx(0.375, abs=1e-15)
    assert S.robust_sign_error([1 / 6, 0.5], [3, 5]) == (pytest.approx(math.nan, nan_ok=True), None)
    assert S.robust_sign_error([1 / 6, 0.5], [10, 5]) == (pytest.approx(1 / 6), 0)
    df = pd.DataFrame(T2_THETA, columns=["A", "B"]).assign(mu=T2_MU, gap=T2_G)
    row = T.correlation_table(df, ["mu"], ["A", "B"], bootstrap=0).iloc[0]
    assert row["sign_error_robust_axis"] == S.TOO_FEW_PAIRS and math.isnan(row["sign_error_robust"])
    assert row["sign_error_B_pairs"] == 5 and row["psi_A_groups"] == 3


# T3: axes train_size in {100, 400} x lr in {a, b}, two seeds each (seeds are replicates).
T3 = pd.DataFrame(
    {
        "train_size": [100, 100, 100, 100, 400, 400, 400, 400],
        "lr": ["a", "a", "b", "b", "a", "a", "b", "b"],
        "seed": [0, 1, 0, 1, 0, 1, 0, 1],
        "mu": [1.0, 2, 3, 3, 0, 1, 2, 4],
        "gap": [0.5, 0.4, 0.6, 0.7, 0.2, 0.1, 0.3, 0.3],
    }
)


def test_seeds_are_replicates_hand_t3():
    # psi_train_size: groups by lr. a = {0,1,4,5}: -1 +1 0 +1 +1 -1 -> 1/6; b = {2,3,6,7}:
    #   0 +1 -1 +1 -1 0 -> 0. psi_train_size = 1/12 (2 groups, 12 pairs; seed pairs included).
    # psi_lr: groups by n: {0,1,2,3}: -1 +1 +1 +1 +1 0 -> 1/2; {4..7}: likewise 1/2.
    # Psi = 7/24; psi_fixed_n = psi_lr = 1/2.
    # tau_fixed_n: n=100: S = 3, mu tie (2,3): 3 / sqrt(5 * 6); n=400: g tie (6,7): same.
    # sign-error train_size: 8 pairs, errors 0, 1/2, 0, 0, 0, 1, 0, 1 -> 2.5/8; lr: 8 pairs, 0.
    codes = RU.axis_codes(T3, ["train_size", "lr"])
    st_ = point(T3["mu"], T3["gap"], codes, T3["train_size"].to_numpy(float), 0)
    assert [p[0] for p in st_.psi_axes] == pytest.approx([1 / 12, 1 / 2], abs=1e-15)
    assert [p[0] for p in st_.psi_groups] == [2, 2]
    assert [p[0] for p in st_.psi_pairs] == [12, 12]
    assert st_.psi[0] == pytest.approx(7 / 24, abs=1e-15)
    assert st_.psi_fixed_n[0] == pytest.approx(0.5, abs=1e-15)
    assert st_.tau_fixed_n[0] == pytest.approx(3 / math.sqrt(30), abs=1e-15)
    assert [s[0] for s in st_.sign_axes] == pytest.approx([2.5 / 8, 0.0], abs=1e-15)
    assert [s[0] for s in st_.sign_pairs] == [8, 8]
    assert st_.sign_error[0] == pytest.approx(2.5 / 16, abs=1e-15)
    from scipy.stats import kendalltau

    assert st_.kendall_tau[0] == pytest.approx(kendalltau(T3["mu"], T3["gap"]).statistic)
    row = T.correlation_table(T3, ["mu"], ["train_size", "lr"], bootstrap=0).iloc[0]
    assert row["n_configurations"] == 4 and row["psi_lr_pairs"] == 12
    assert row["tau_fixed_n"] == pytest.approx(3 / math.sqrt(30))


def test_single_valued_axis_and_constant_n_are_undefined():
    df = T3.assign(opt="adam", train_size=100)
    tabs = T.correlation_study(df, ["mu"], ["train_size", "lr", "opt"], bootstrap=200)
    row = tabs.correlation.iloc[0]
    assert math.isnan(row["psi_opt"]) and row["psi_opt_groups"] == 0
    assert math.isnan(row["psi_train_size"]) and row["sign_error_opt_pairs"] == 0
    assert math.isnan(row["tau_fixed_n"]) and math.isnan(row["psi_fixed_n"])
    assert not math.isnan(row["psi_lr"]) and not math.isnan(row["kendall_tau"])
    text = " | ".join(tabs.notes)
    assert "axis opt has one value" in text and "train_size is constant" in text


def test_configuration_bootstrap_keeps_seeds_together():
    config = S.row_ids(RU.axis_codes(T3, ["train_size", "lr"]))
    w = S.bootstrap_weights(config, 200, 5)
    assert w.shape == (200, 8)
    for c in range(4):  # the two seeds of a configuration always come together
        members = np.flatnonzero(config == c)
        assert (w[:, members] == w[:, members[:1]]).all()
    assert (w.sum(axis=1) == 8).all()  # 4 configurations drawn, each bringing 2 seeds
    counts = np.zeros((200, 4))
    idx = np.random.default_rng(5).integers(0, 4, size=(200, 4))
    for d in range(200):
        for c in idx[d]:
            counts[d, c] += 1
    assert (w == counts[:, config]).all()


def test_differences_are_paired_point_differences():
    rng = np.random.default_rng(4)
    rows = []
    for depth in (1, 2, 3):
        for width in (8, 16, 32):
            for n in (100, 300, 1000):
                for seed in (0, 1):
                    g = 0.3 / depth + 0.05 * math.log(n) + 0.02 * rng.standard_normal()
                    rows.append((depth, width, n, seed, g))
    df = pd.DataFrame(rows, columns=["depth", "width", "train_size", "seed", "gap"])
    df["good"] = df["gap"] + 0.01 * rng.standard_normal(len(df))
    df["noise"] = rng.standard_normal(len(df))
    df["num_parameters"] = df["depth"] * df["width"] ** 2
    df["sample_size_only"] = -0.5 * np.log10(df["train_size"])
    measures = ["good", "noise", "num_parameters", "sample_size_only"]
    tabs = T.correlation_study(df, measures, ["depth", "width", "train_size"], bootstrap=1000)
    corr, diffs = tabs.correlation.set_index("measure"), tabs.differences
    assert list(diffs.columns) == DIFFERENCE_COLUMNS
    # every axis is a cell key of tau_arch (depth x width x n): no cell holds 3 models, no
    # tau_arch, so no tau_arch row
    assert (corr["tau_arch_cells"] == 0).all()
    assert set(diffs["statistic"]) == set(interval_statistics())
    for r in diffs.itertuples():
        a, b = corr.loc[r.measure, r.statistic], corr.loc[r.versus, r.statistic]
        if math.isnan(a) or math.isnan(b):  # sample_size_only is constant within each n
            assert math.isnan(r.delta) and math.isnan(r.low) and math.isnan(r.high)
            continue
        assert r.delta == pytest.approx(
            corr.loc[r.measure, r.statistic] - corr.loc[r.versus, r.statistic]
        )
        assert r.low - 1e-12 <= r.delta <= r.high + 1e-12, r
    good = diffs[(diffs.measure == "good") & (diffs.versus == "noise")]
    assert set(good["statistic"]) == set(interval_statistics())  # noise is never best: good is
    assert (good["low"] > 0).all()  # significantly better on every statistic
    vs = diffs[diffs.measure == "noise"].groupby("statistic")["versus"].apply(set)
    for st_name in interval_statistics():
        assert {"num_parameters", "sample_size_only", "good"} <= vs[st_name]
    assert corr.loc["good", "verdict"].startswith("predicts the gap")
    assert RU.better_word(0.1, 0.3) == "better" and RU.better_word(-0.1, 0.3) == "not shown"


def test_bootstrap_intervals_are_percentiles_of_the_reference():
    theta = [(d, w, s) for d in range(3) for w in range(2) for s in range(2)]
    rng = np.random.default_rng(7)
    g = list(rng.standard_normal(len(theta)))
    mu = [x + y for x, y in zip(g, rng.standard_normal(len(theta)), strict=True)]
    df = pd.DataFrame(theta, columns=["A", "B", "seed"]).assign(mu=mu, gap=g)
    tabs = T.correlation_study(df, ["mu"], ["A", "B"], bootstrap=200, seed=9)
    th = [t[:2] for t in theta]
    config = configurations(th)
    k = max(config) + 1
    idx = np.random.default_rng(9).integers(0, k, size=(200, k))
    taus, psis = [], []
    for d in range(200):
        per_conf = [0] * k
        for c in idx[d]:
            per_conf[c] += 1
        ent = expand(config, per_conf)
        ex, units = [e[0] for e in ent], [e[1] for e in ent]
        r = reference(
            [mu[i] for i in ex],
            [g[i] for i in ex],
            [th[i] for i in ex],
            orig=ex,
            unit=units,
            design=(th, None),
            within=1 - 1 / k,
        )
        taus.append(r["tau"])
        psis.append(r["psi"])
    row = tabs.correlation.iloc[0]
    for col, vals in (("kendall_tau", taus), ("psi", psis)):
        v = np.array([x for x in vals if not math.isnan(x)])
        lo, hi = np.percentile(v, [2.5, 97.5])
        lo, hi = min(lo, row[col]), max(hi, row[col])  # widened to hold the estimate
        assert [row[f"{col}_low"], row[f"{col}_high"]] == pytest.approx([lo, hi], abs=1e-12)


def test_interval_always_holds_its_estimate():
    draws = np.array([0.2, 0.3, 0.3, 0.4, np.nan])
    assert S.percentile_interval(draws) == pytest.approx((0.2075, 0.3925))
    # a skewed bootstrap whose percentiles miss the estimate: widened to it, on either side
    assert S.percentile_interval(draws, point=0.1) == pytest.approx((0.1, 0.3925))
    assert S.percentile_interval(draws, point=0.5) == pytest.approx((0.2075, 0.5))
    # every draw equal to the estimate up to rounding: the interval still holds the estimate
    x = -0.15000000000000002
    lo, hi = S.percentile_interval(np.full(10, -0.15), point=x)
    assert lo <= x <= hi
    assert all(math.isnan(t) for t in S.percentile_interval(np.array([np.nan]), point=0.3))


def test_large_sets_match_small_path(monkeypatch):
    # the O(m log m) path for large sets gives the sign sums of the m x m path exactly
    rng = np.random.default_rng(1)
    x = rng.integers(0, 5, 40).astype(float)
    y = rng.integers(0, 4, 40).astype(float)
    w = rng.integers(0, 3, (6, 40)).astype(float)
    small = S.pair_sums(x, y, w)
    monkeypatch.setattr(S, "SMALL_SET", 8)
    large = S.pair_sums(x, y, w)
    for a, b in zip(small, large, strict=True):
        assert np.array_equal(a, b)


def test_cell_r2():
    # values 1, 3 in cell 0 and 10, 10 in cell 1: mean 6, total SS = 25 + 9 + 16 + 16 = 66,
    # within-cell SS = 1 + 1 = 2
    assert S.cell_r2(np.array([1.0, 3, 10, 10]), np.array([0, 0, 1, 1])) == pytest.approx(
        1 - 2 / 66
    )
    assert math.isnan(S.cell_r2(np.ones(3), np.array([0, 1, 2])))


# --- random designs against the brute force ---------------------------------------------------


@st.composite
def designs(draw):
    k = draw(st.integers(1, 3))
    levels = [draw(st.integers(1, 3)) for _ in range(k)]
    m = draw(st.integers(2, 12))
    theta = [tuple(draw(st.integers(0, lv - 1)) for lv in levels) for _ in range(m)]
    small = st.integers(0, 4).map(float)  # few values: ties are frequent
    mu = [draw(small) for _ in range(m)]
    g = [draw(small) / 4 for _ in range(m)]
    with_n = draw(st.booleans())
    return theta, mu, g, with_n


def _compare(got: S.Stats, ref: dict, d: int = 0) -> None:
    assert same(float(got.kendall_tau[d]), ref["tau"])
    assert same(float(got.psi[d]), ref["psi"])
    assert same(float(got.tau_fixed_n[d]), ref["tau_n"])
    assert same(float(got.psi_fixed_n[d]), ref["psi_n"])
    assert same(float(got.sign_error[d]), ref["sign_error"])
    for a in range(len(ref["psi_axes"])):
        assert same(float(got.psi_axes[a][d]), ref["psi_axes"][a])
        assert int(got.psi_groups[a][d]) == ref["psi_groups"][a]
        assert int(got.psi_pairs[a][d]) == ref["psi_pairs"][a]
        assert same(float(got.sign_axes[a][d]), ref["sign_axes"][a])
        assert int(got.sign_pairs[a][d]) == ref["sign_pairs"][a]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(designs())
def test_point_statistics_match_brute_force(des):
    theta, mu, g, with_n = des
    codes = np.array(theta, dtype=np.int64)
    n = codes[:, 0].astype(float) * 100 + 50 if with_n else None
    n_axis = 0 if with_n else None
    got = point(mu, g, codes, n, n_axis)
    ref = reference(mu, g, theta, None if n is None else list(n), n_axis=n_axis)
    _compare(got, ref)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(designs(), st.integers(0, 2**31 - 1))
def test_resample_statistics_match_expanded_lists(des, seed):
    # statistics under bootstrap weights = the brute force on the explicit list of copies
    theta, mu, g, with_n = des
    codes = np.array(theta, dtype=np.int64)
    n = codes[:, 0].astype(float) * 100 + 50 if with_n else None
    n_axis = 0 if with_n else None
    config = configurations(theta)
    k = max(config) + 1
    rng = np.random.default_rng(seed)
    per_conf = rng.integers(0, 3, size=(5, k))
    w = per_conf[:, config].astype(float)
    within = [1.0, 0.75][seed % 2]  # the weight of pairs inside a configuration
    got = S.statistics(np.array(mu), np.array(g), S.make_design(codes, n, n_axis), w, within)
    for d in range(5):
        ent = expand(config, per_conf[d])
        ex, units = [e[0] for e in ent], [e[1] for e in ent]
        ref = reference(
            [mu[i] for i in ex],
            [g[i] for i in ex],
            [theta[i] for i in ex],
            None if n is None else [n[i] for i in ex],
            orig=ex,
            n_axis=n_axis,
            unit=units,
            design=(theta, None if n is None else list(n)),
            within=within,
        )
        _compare(got, ref, d)


def test_streamed_paths_equal_the_in_memory_ones(monkeypatch):
    # large sets (scipy per draw) and CMI in blocks of a few pairs give the same numbers as the
    # small-set sign matrices and one block: memory is bounded without changing any result
    from specbound.studies.protocol import mutual_info as CM

    rng = np.random.default_rng(2)
    m = 60
    codes = np.stack([rng.integers(0, 3, m), rng.integers(0, 2, m)], axis=1)
    mu = rng.integers(0, 6, m).astype(float)
    g = rng.integers(0, 5, m).astype(float)
    n = (codes[:, 0] + 1) * 100.0
    design = S.make_design(codes, n, 0)
    w = S.bootstrap_weights(design.config, 7, 3)
    ref = S.statistics(mu, g, design, w, 0.9)
    ref_cmi = CM.cmi_values(mu, g, codes)
    monkeypatch.setattr(S, "SMALL_SET", 4)
    monkeypatch.setattr(CM, "PAIR_BLOCK", 7)
    got = S.statistics(mu, g, design, w, 0.9)
    for field in ("kendall_tau", "psi", "tau_fixed_n", "psi_fixed_n", "sign_error"):
        np.testing.assert_allclose(getattr(got, field), getattr(ref, field), atol=1e-12)
    for a in range(2):
        np.testing.assert_allclose(got.psi_axes[a], ref.psi_axes[a], atol=1e-12)
        np.testing.assert_allclose(got.sign_axes[a], ref.sign_axes[a], atol=1e-12)
    assert CM.cmi_values(mu, g, codes) == ref_cmi


def test_best_other_within_fixed_n_is_not_the_measures_own_n_form():
    # inside strata of equal n, m and m_per_sqrt_n rank identically: comparing them says nothing
    rng = np.random.default_rng(8)
    rows = []
    for depth in (1, 2):
        for width in (8, 16):
            for n in (100, 300, 1000):
                for seed in (0, 1, 2):
                    g = 0.3 / depth + 0.05 * math.log(n) + 0.02 * rng.standard_normal()
                    rows.append((depth, width, n, seed, g))
    df = pd.DataFrame(rows, columns=["depth", "width", "train_size", "seed", "gap"])
    df["good"] = df["gap"] + 0.01 * rng.standard_normal(len(df))
    df["good_per_sqrt_n"] = df["good"] - 0.5 * np.log10(df["train_size"])
    df["other"] = df["gap"] + 0.05 * rng.standard_normal(len(df))
    tabs = T.correlation_study(
        df, ["good", "good_per_sqrt_n", "other"], ["depth", "width", "train_size"], bootstrap=200
    )
    d = tabs.differences
    for stat in ("tau_fixed_n", "psi_fixed_n"):
        assert set(d[(d.measure == "good") & (d.statistic == stat)]["versus"]) == {"other"}
        assert set(d[(d.measure == "good_per_sqrt_n") & (d.statistic == stat)]["versus"]) == {
            "other"
        }


def test_psi_fixed_n_when_an_axis_other_than_train_size_sets_n():
    # a zoo's train_fraction axis determines n (train_size = fraction x pool): Psi_n is defined
    rng = np.random.default_rng(9)
    rows = []
    for depth in (1, 2):
        for lr in (1e-3, 3e-3):
            for frac in (0.3, 0.6, 0.9):
                for seed in (0, 1):
                    g = 0.2 / depth + lr * 50 - 0.1 * frac + 0.02 * rng.standard_normal()
                    rows.append((depth, lr, frac, int(frac * 529), seed, g))
    df = pd.DataFrame(rows, columns=["depth", "lr", "train_fraction", "train_size", "seed", "gap"])
    df["m"] = df["gap"] + 0.02 * rng.standard_normal(len(df))
    by_fraction = T.correlation_study(df, ["m"], ["depth", "lr", "train_fraction"], bootstrap=0)
    assert RU.size_axis(df, ["depth", "lr", "train_fraction"]) == "train_fraction"
    same = df.drop(columns=["train_fraction"])
    by_size = T.correlation_study(same, ["m"], ["depth", "lr", "train_size"], bootstrap=0)
    a, b = by_fraction.correlation.iloc[0], by_size.correlation.iloc[0]
    assert not math.isnan(a["psi_fixed_n"])
    assert a["psi_fixed_n"] == b["psi_fixed_n"] and a["tau_fixed_n"] == b["tau_fixed_n"]
    assert RU.size_axis(df, ["depth", "lr"]) is None  # no axis sets n
