"""The adaptive headroom of SPEC 4 against brute force.

adaptive_headroom(A) = log10 s - max_{p > 0} T_p(A) / ln 10: > 0 iff p* = 0. The reference
(tests/support/reference.py: dense QK/OV products, numpy's full SVD, linear-space contributions)
shares no code with specbound; here the largest log10 s at which some p > 0 of the grid beats
p = 0 is found by bisection on c(A, p) computed from those singular values.
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
    adaptive_headroom,
    headroom_min,
    optimize_p,
    p_grid,
)
from tests.support.checkpoints import write_tiny_bert
from tests.support.reference import reference

TYPES = ("QK", "OV", "M_in", "M_out")


def brute_threshold(kept: list[float], n: int, grid: list[float]) -> float:
    """The largest log10 s at which some p > 0 of ``grid`` has c(A, p) < c(A, 0), by bisection
    of log10 s (c in linear space, straight from SPEC 4's formula)."""
    r = len(kept)
    c0 = math.sqrt(r * n)
    sp = {p: math.fsum(x**p for x in kept) for p in grid if p > 0}

    def some_p_wins(x: float) -> bool:
        s = 10.0**x
        return any(
            v ** (1 / (p + 2)) * s ** (p / (p + 2)) * n ** ((p + 1) / (p + 2)) < c0
            for p, v in sp.items()
        )

    lo, hi = -100.0, 100.0
    assert some_p_wins(lo) and not some_p_wins(hi)
    for _ in range(80):
        mid = (lo + hi) / 2
        if some_p_wins(mid):
            lo = mid
        else:
            hi = mid
    return lo


@pytest.fixture(scope="module")
def minilm(minilm_dir):
    a = specbound.analyze(str(minilm_dir), cache=False, measures="spectrum_adaptive")
    return a, reference(minilm_dir, l_phi=1.13)


def _index(a: specbound.Analysis) -> dict[tuple[int, int, str], int]:
    s = a.spectra
    return {
        (int(s.layer[i]), int(s.head[i]), TYPES[int(s.matrix_type[i])]): i for i in range(len(s))
    }


def test_minilm_headroom_matches_brute_force(minilm):
    a, ref = minilm
    cfg_n = a.spec.hidden_size
    grid = [j / ref["grid_m"] for j in range(2 * ref["grid_m"] + 1)]
    where = _index(a)
    assert len(where) == len(ref["rows"]) == 156
    for row in ref["rows"]:
        i = where[(row["layer"], row["head"], row["matrix_type"])]
        want = math.log10(row["scale"]) - brute_threshold(row["kept"], cfg_n, grid)
        assert a.adaptive_headroom[i] == pytest.approx(want, rel=0, abs=1e-6), row["matrix_type"]


def test_minilm_headroom_range_and_sign(minilm):
    a, _ = minilm
    h = a.adaptive_headroom
    assert np.all(a.details.p_star == 0)
    assert np.all(h > 0)  # headroom > 0 iff p* = 0, on every matrix
    s = a.spectra
    lo, hi = int(np.argmin(h)), int(np.argmax(h))
    # SPEC 4: from 0.87 decades (layer 5, M_out) to 26.7 (layer 0, QK)
    assert (int(s.layer[lo]), TYPES[int(s.matrix_type[lo])]) == (5, "M_out")
    assert (int(s.layer[hi]), TYPES[int(s.matrix_type[hi])]) == (0, "QK")
    assert round(float(h[lo]), 2) == 0.87 and round(float(h[hi]), 1) == 26.7
    assert a.adaptive_headroom_min == float(h[lo])
    sentence = a.headroom_sentence()
    assert "layer 5's M_out shrank 7.3x" in sentence
    assert "layer 0's QK" in sentence and "10^26.7x" in sentence


@pytest.mark.parametrize("low_rank", [{}, {"ffn_low_rank": 2}])
def test_sign_agrees_with_p_star_on_mixed_models(tmp_path, low_rank):
    d = write_tiny_bert(tmp_path / "m", layers=3, hidden=16, heads=2, ffn=32, scale=0.1, **low_rank)
    a = specbound.analyze(str(d), cache=False, measures="spectrum_adaptive")
    p, h = a.details.p_star, a.adaptive_headroom
    assert np.any(p == 0) and np.any(p > 0)  # both signs occur
    np.testing.assert_array_equal(h > 0, p == 0)
    # against brute force, with the reference's own spectra and scales
    ref = reference(d, l_phi=1.13)
    grid = [j / ref["grid_m"] for j in range(2 * ref["grid_m"] + 1)]
    where = _index(a)
    for row in ref["rows"]:
        i = where[(row["layer"], row["head"], row["matrix_type"])]
        if not row["kept"]:
            assert math.isnan(h[i])
            continue
        want = math.log10(row["scale"]) - brute_threshold(row["kept"], a.spec.hidden_size, grid)
        assert h[i] == pytest.approx(want, rel=0, abs=1e-6)


def test_every_table_carries_the_headroom(tmp_path, minilm):
    import pandas as pd

    a, _ = minilm
    a.to_dir(tmp_path / "out")
    m = pd.read_csv(tmp_path / "out" / "matrices.csv")
    np.testing.assert_allclose(m["adaptive_headroom"], a.adaptive_headroom, rtol=1e-15)
    lay = pd.read_csv(tmp_path / "out" / "layers.csv")
    for t in TYPES:  # smallest over heads, recomputed from matrices.csv
        want = m[m["matrix_type"] == t].groupby("layer")["adaptive_headroom"].min()
        np.testing.assert_allclose(lay[f"adaptive_headroom_min_{t}"], want.to_numpy(), rtol=0)
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["adaptive_headroom_min"] == pytest.approx(m["adaptive_headroom"].min(), abs=1e-12)


def test_rank_zero_is_undefined():
    grid = p_grid(4)
    assert math.isnan(adaptive_headroom(np.zeros(0), 3.0, 16, grid))
    assert math.isnan(headroom_min(np.array([np.nan, np.nan])))
    assert headroom_min(np.array([np.nan, 2.0, -1.0])) == -1.0


def test_a_zero_matrix_leaves_the_headroom_of_the_others(tmp_path):
    from tests.support.safetensors_np import load_file, save_file

    d = write_tiny_bert(tmp_path / "m", layers=2, hidden=8, heads=2, ffn=16, scale=0.3)
    sd = load_file(str(d / "model.safetensors"))
    k = "encoder.layer.1.intermediate.dense.weight"
    sd[k] = np.zeros_like(sd[k])
    save_file(sd, str(d / "model.safetensors"))
    a = specbound.analyze(str(d), cache=False, measures="spectrum_adaptive")
    h = a.adaptive_headroom
    zero = (a.spectra.layer == 1) & (a.spectra.matrix_type == TYPES.index("M_in"))
    assert np.all(np.isnan(h[zero])) and np.all(np.isfinite(h[~zero]))
    assert a.adaptive_headroom_min == float(np.min(h[~zero]))
    assert a.summary()["adaptive_headroom_min"] == a.adaptive_headroom_min


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    r=st.integers(1, 30),
    n=st.integers(1, 4096),
    m=st.integers(1, 20),
    spread=st.floats(0.0, 6.0),
    log_s=st.floats(-40.0, 80.0),
)
def test_headroom_is_where_p_star_leaves_zero(seed, r, n, m, spread, log_s):
    """Random spectra: headroom > 0 iff p* = 0; moving log s by Delta moves the headroom by
    Delta / ln 10; just above log s - headroom (in decades) p* = 0, just below some p > 0."""
    rng = np.random.default_rng(seed)
    sv = np.sort(10.0 ** rng.uniform(-spread / 2, spread / 2, r))[::-1]
    grid = p_grid(m)
    h = adaptive_headroom(sv, log_s, n, grid)
    assert math.isfinite(h)

    def p_star(ls: float) -> float:
        return float(optimize_p([sv], np.array([r]), np.array([ls]), n, grid)[0][0])

    # the sign agrees with p* away from the tie (rounding of order 1e-13 decades)
    if abs(h) > 1e-9:
        assert (h > 0) == (p_star(log_s) == 0)
    assert adaptive_headroom(sv, log_s + 1.5, n, grid) == pytest.approx(
        h + 1.5 / math.log(10), rel=0, abs=1e-9
    )
    edge = log_s - h * math.log(10)  # ln of the threshold scale
    assert p_star(edge + 1e-6) == 0
    assert p_star(edge - 1e-6) > 0
