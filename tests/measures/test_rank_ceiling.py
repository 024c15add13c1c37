"""The rank-ceiling diagnosis of SPEC 10 against an independent recomputation.

B_spectrum_adaptive <= B_ceiling = sum_A sqrt(r(A) N) + sqrt(L), with equality exactly when every
matrix picks p* = 0. The reference (tests/support/reference.py) forms every QK/OV product
densely, takes numpy's full SVD and counts ranks with SPEC 3's threshold; it shares no code with
specbound.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import specbound
from specbound.measures.spectrum_adaptive import (
    ceiling_gap,
    log10_rank_ceiling,
    log_bound,
    log_rank_ceiling,
    optimize_p,
    p_grid,
)
from tests.support.checkpoints import write_tiny_bert
from tests.support.reference import reference


def ref_ceiling(directory) -> tuple[float, float, float]:
    """(log10 B_ceiling, ceiling gap, share p* = 0) from the raw weights (numpy SVD ranks)."""
    cfg = json.loads((directory / "config.json").read_text())
    ref = reference(directory, l_phi=1.13)
    L, N = cfg["num_hidden_layers"], cfg["hidden_size"]
    ceiling = math.fsum(math.sqrt(r["rank"] * N) for r in ref["rows"]) + math.sqrt(L)
    share = sum(r["p_star"] == 0 for r in ref["rows"]) / len(ref["rows"])
    return math.log10(ceiling), math.log10(ceiling) - math.log10(ref["spectrum_adaptive"]), share


def _check(directory, model: str | None = None) -> specbound.Analysis:
    a = specbound.analyze(model or str(directory), cache=False)
    log10_ceiling, gap, share = ref_ceiling(directory)
    assert a.log10_spectrum_adaptive_ceiling == pytest.approx(log10_ceiling, rel=0, abs=1e-9)
    assert a.spectrum_adaptive_ceiling_gap == pytest.approx(gap, rel=0, abs=1e-9)
    assert a.spectrum_adaptive_share_p0 == share
    summary = a.summary()
    for k, v in a.diagnostics().items():
        assert summary[k] == v
    assert a.spectrum_adaptive_ceiling_gap >= 0
    return a


def test_minilm_sits_at_the_ceiling(minilm_dir):
    a = _check(minilm_dir, "demo:minilm")  # the real all-MiniLM-L6-v2
    # every one of the 156 matrices picks p* = 0: the proxy is the rank ceiling exactly
    assert a.spectrum_adaptive_share_p0 == 1.0
    assert a.spectrum_adaptive_ceiling_gap == 0.0
    assert a.log10_spectrum_adaptive_ceiling == a.bounds.spectrum_adaptive.log10


def test_small_weights_fall_below_the_ceiling(tmp_path):
    d = write_tiny_bert(
        tmp_path / "m", layers=3, hidden=16, heads=2, ffn=32, scale=0.1, ffn_low_rank=2
    )
    a = _check(d)
    assert 0 < a.spectrum_adaptive_share_p0 < 1
    assert a.spectrum_adaptive_ceiling_gap > 1e-3


def test_tiny_weights_pick_p2_everywhere(tmp_path):
    d = write_tiny_bert(tmp_path / "m", layers=2, hidden=8, heads=2, ffn=16, scale=0.01)
    a = _check(d)
    assert a.spectrum_adaptive_share_p0 == 0.0
    assert a.spectrum_adaptive_ceiling_gap > 0.5


def test_summary_json_carries_the_diagnosis(tmp_path, minilm_dir):
    a = specbound.analyze(str(minilm_dir), cache=False)
    a.to_dir(tmp_path / "out")
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["spectrum_adaptive_share_p0"] == 1.0
    assert s["spectrum_adaptive_ceiling_gap"] == 0.0
    assert s["log10_spectrum_adaptive_ceiling"] == pytest.approx(4.3132982537, abs=1e-9)


def test_ceiling_of_ranks_by_hand():
    # two matrices of rank 4 and 9, N = 16, L = 4: sqrt(64) + sqrt(144) + sqrt(4) = 22
    assert log10_rank_ceiling(np.array([4, 9]), 16, 4) == pytest.approx(math.log10(22), abs=1e-15)
    # a zero matrix adds nothing
    assert log10_rank_ceiling(np.array([0, 4]), 16, 4) == pytest.approx(math.log10(10), abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_mat=st.integers(1, 6),
    n=st.integers(2, 40),
    layers=st.integers(1, 12),
    m=st.integers(1, 12),
    log_s=st.floats(-30.0, 60.0),
    zero=st.booleans(),
)
def test_bound_never_exceeds_the_ceiling(seed, n_mat, n, layers, m, log_s, zero):
    """B <= B_ceiling always, and equality (gap 0) exactly when every p* is 0."""
    rng = np.random.default_rng(seed)
    svs = []
    for _ in range(n_mat):
        k = int(rng.integers(1, n + 1))
        sv = np.sort(np.exp(rng.normal(0.0, 3.0, k)))[::-1]
        svs.append(np.zeros(k) if zero and len(svs) == 0 else sv)
    k_full = np.array([max(s.size, 1) for s in svs])
    log_scale = log_s + rng.normal(0.0, 5.0, n_mat)
    p_star, log_c = optimize_p(svs, k_full, log_scale, n, p_grid(m))
    # ranks recomputed here from SPEC 3's threshold, written out
    ranks = np.array(
        [
            int(np.sum(s > 1e-10 * kk * max(float(s[0]), 1.0)))
            for s, kk in zip(svs, k_full, strict=True)
        ]
    )
    lb, lc = log_bound(log_c, layers), log_rank_ceiling(ranks, n, layers)
    assert lb <= lc + 1e-12 * max(1.0, abs(lc))
    gap = ceiling_gap(ranks, log_c, n, layers)
    assert gap >= 0
    if np.all(p_star == 0):
        assert gap == 0.0
    else:  # strictly below, unless the saving is lost in rounding (a near-tie with p = 0)
        c0 = np.sqrt(ranks * n)
        saving = float(np.sum(c0 - np.exp(log_c)))
        if saving > 1e-9 * (float(np.sum(c0)) + math.sqrt(layers)):
            assert gap > 0
