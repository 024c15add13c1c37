"""Hypothesis properties of the factored spectra and the contribution curve; API inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specbound.linalg.spectra import lowrank_svdvals, numerical_rank
from specbound.measures.bounds import log_contribution_curve, p_grid
from tests.support.spectral_checks import assert_sv_match

shapes = st.tuples(st.integers(2, 12), st.integers(1, 4), st.integers(0, 2**31 - 1))


@settings(max_examples=40, deadline=None)
@given(shapes)
def test_factored_equals_dense_and_orthogonal_invariance(shape):
    n, d, seed = shape
    d = min(d, n)
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    scale = float(np.linalg.norm(x) * np.linalg.norm(y))  # round-off is relative to the factors
    sv = lowrank_svdvals(x[None], y[None])[0]
    dense = np.linalg.svd(x @ y.T, compute_uv=False)
    # absolute |s_i - s'_i| <= 50 eps n scale; ranks equal away from the threshold
    assert_sv_match(sv, dense, n, scale, got_rank=numerical_rank(sv, n))
    q1, _ = np.linalg.qr(rng.standard_normal((n, n)))
    q2, _ = np.linalg.qr(rng.standard_normal((n, n)))
    rotated = lowrank_svdvals((q1 @ x)[None], (q2 @ y)[None])[0]  # Q1 (x y^T) Q2^T
    assert_sv_match(rotated, sv, n, scale, got_rank=numerical_rank(rotated, n))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=20),
    st.floats(-50, 80),
    st.integers(2, 1024),
)
def test_c_at_p0_is_sqrt_rank_n(svs, log_s, n):
    kept = np.sort(np.array(svs))[::-1]
    curve = log_contribution_curve(kept, log_s, n, p_grid(5))
    assert math.exp(curve[0]) == pytest.approx(math.sqrt(kept.size * n), rel=1e-12)
    # brute force at p = 2
    c2 = float(np.sum(kept**2)) ** 0.25 * math.exp(log_s) ** 0.5 * n**0.75
    assert math.exp(curve[-1]) == pytest.approx(c2, rel=1e-9)


def test_module_and_state_dict_inputs_match_directory(minilm_dir):
    pytest.importorskip("torch")  # needs the extra
    import torch
    from transformers import BertModel

    import specbound

    model = BertModel.from_pretrained(str(minilm_dir), dtype=torch.float32)
    ref = specbound.analyze(str(minilm_dir), cache=False)
    a = specbound.analyze(model, cache=False)
    b = specbound.analyze(model.state_dict(), config=model.config.to_dict(), cache=False)
    for x in (a, b):
        assert x.bounds.spectrum_adaptive.ln == pytest.approx(
            ref.bounds.spectrum_adaptive.ln, rel=1e-12
        )
        assert x.bounds.norm_based.ln == pytest.approx(ref.bounds.norm_based.ln, rel=1e-12)
