"""SPEC 10 protocol v3, from statistics to verdicts: hand-computed p-values, Holm, BH, rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specbound.errors import SpecboundValueError
from specbound.studies.protocol import families as F
from specbound.studies.protocol import verdicts as V


def test_bootstrap_p_hand_values():
    # B = 4: #{d <= 0} = 1 -> 2/5, #{d >= 0} = 3 -> 4/5; p = 2 * 2/5 = 0.8
    assert V.bootstrap_p([1.0, 2.0, 3.0, -1.0]) == pytest.approx(0.8, abs=1e-15)
    # every draw > 0, B = 999: (1 + 0) / 1000, doubled
    assert V.bootstrap_p(np.full(999, 0.5)) == pytest.approx(0.002, abs=1e-15)
    # zeros count on both sides; capped at 1
    assert V.bootstrap_p([0.0, 0.0, 1.0]) == 1.0
    # NaN draws are dropped (B = 2): 2 * 1/3
    assert V.bootstrap_p(np.array([1.0, np.nan, 2.0])) == pytest.approx(2 / 3, abs=1e-15)
    assert math.isnan(V.bootstrap_p([np.nan, np.nan]))
    assert math.isnan(V.bootstrap_p([]))


def test_holm_and_bh_hand_values():
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm, sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> running max
    assert V.holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)
    # BH: 0.005*4/1, 0.01*4/2, 0.03*4/3, 0.04*4/4 = 0.02, 0.02, 0.04, 0.04 -> running min from top
    assert V.bh(p) == pytest.approx([0.02, 0.04, 0.04, 0.02], abs=1e-15)
    # BH's step-up: 0.01*3, 0.02*3/2, 0.03 -> 0.03 each; Holm: 0.03, 0.04, 0.04
    assert V.bh([0.01, 0.02, 0.03]) == pytest.approx([0.03] * 3, abs=1e-15)
    assert V.holm([0.01, 0.02, 0.03]) == pytest.approx([0.03, 0.04, 0.04], abs=1e-15)
    # capped at 1
    assert list(V.holm([0.6, 0.7])) == [1.0, 1.0]


def test_holm_and_bh_nan_aware():
    # NaN in, NaN out, and not counted in m (m = 2 here)
    h, q = V.holm([0.01, np.nan, 0.04]), V.bh([0.01, np.nan, 0.04])
    assert math.isnan(h[1]) and math.isnan(q[1])
    assert [h[0], h[2]] == pytest.approx([0.02, 0.04], abs=1e-15)
    assert [q[0], q[2]] == pytest.approx([0.02, 0.04], abs=1e-15)
    assert V.holm([]).shape == (0,) and math.isnan(V.bh([np.nan])[0])


def test_mc_error():
    assert V.mc_error(0.05, 10_000) == pytest.approx(math.sqrt(0.05 * 0.95 / 10_000), rel=1e-15)
    assert V.mc_error(0.0, 1000) == 0.0
    assert math.isnan(V.mc_error(math.nan, 1000))


GOOD = dict(estimate=0.05, low=0.02, high=0.11, B=10_000, n_configurations=12)


def test_verdict_better_worse_undetermined():
    assert V.verdict(**GOOD, p_adj=0.001, statistic="kendall_tau") == "better"
    worse = dict(GOOD, estimate=-0.05, low=-0.11, high=-0.02)
    assert V.verdict(**worse, p_adj=0.001, statistic="psi") == "worse"
    # adjusted figure small but the interval holds 0: no verdict
    assert V.verdict(**dict(GOOD, low=-0.01), p_adj=0.01, statistic="psi") == "undetermined"
    assert V.verdict(**GOOD, p_adj=0.3, statistic="psi") == "undetermined"
    assert V.verdict(**GOOD, p_adj=math.nan, statistic="psi") == "undetermined"
    # tau_fixed_n with enough strata
    assert V.verdict(**GOOD, p_adj=0.001, statistic="tau_fixed_n", n_strata_ok=2) == "better"


def test_verdict_borderline_uses_the_monte_carlo_error():
    # |0.049 - 0.05| = 0.001 <= 2 sqrt(0.049 * 0.951 / 1e4) = 0.0043
    assert V.verdict(**GOOD, p_adj=0.049, statistic="psi") == "borderline"
    assert V.verdict(**GOOD, p_adj=0.051, statistic="psi") == "borderline"
    # p_adj 0.045: 2 x error of 0.045 = 0.0041 < 0.005 -> better; read as Holm's 3 x p = 0.015
    # the error is 3 sqrt(0.015 * 0.985 / 1e4) = 0.0036, twice that 0.0073 >= 0.005: borderline
    assert V.verdict(**GOOD, p_adj=0.045, statistic="psi") == "better"
    assert V.verdict(**GOOD, p_adj=0.045, p=0.015, statistic="psi") == "borderline"


def test_verdict_minimum_evidence():
    with pytest.raises(SpecboundValueError, match="200"):
        V.verdict(**dict(GOOD, B=150), p_adj=0.001, statistic="psi")
    with pytest.raises(SpecboundValueError):
        V.verdict(**dict(GOOD, B=1), p_adj=0.001, statistic="psi")
    ins = "insufficient evidence"
    assert V.verdict(**dict(GOOD, B=999), p_adj=0.001, statistic="psi") == ins
    assert V.verdict(**dict(GOOD, n_configurations=7), p_adj=0.001, statistic="psi") == ins
    assert V.verdict(**GOOD, p_adj=0.001, statistic="tau_fixed_n", n_strata_ok=1) == ins
    assert V.verdict(**GOOD, p_adj=0.001, statistic="tau_fixed_n") == ins
    # minimum evidence first, then comparability
    assert V.verdict(**GOOD, p_adj=0.001, statistic="psi", comparable=False) == "not comparable"
    assert V.verdict(**dict(GOOD, B=999), p_adj=0.001, statistic="psi", comparable=False) == ins


def test_evidence_and_reason_strings():
    e = V.evidence(
        B=10_000,
        n_configurations=12,
        statistic="tau_fixed_n",
        n_strata_ok=3,
        missing=["depth=2 width=64"],
    )
    assert e == (
        "B = 10000; 12 configurations; 3 strata of n with >= 3 configurations; "
        "missing 1 of the grid: depth=2 width=64"
    )
    assert V.evidence(B=1000, n_configurations=2, statistic="psi") == "B = 1000; 2 configurations"
    r = V.reason(**dict(GOOD, B=999, n_configurations=2), p_adj=0.001, statistic="psi")
    assert r == "insufficient evidence: B = 999 < 1000 draws, 2 < 8 configurations"
    assert V.reason(**GOOD, p_adj=0.001, statistic="psi").startswith("better: adjusted p 0.001")
    assert F.primary_statistic(3) == "tau_fixed_n" and F.primary_statistic(1) == "kendall_tau"
    assert set(V.VERDICTS) == {
        "better",
        "worse",
        "borderline",
        "undetermined",
        "insufficient evidence",
        "not comparable",
    }
