"""The log-space helpers and the depth factor alpha(l), gamma and s (SPEC 4), checked against
plain products and sums written out here (float64 and Python's math, no shared code)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from specbound.analysis import analyze
from specbound.linalg.spectra import MATRIX_TYPES
from specbound.measures._depth import depth_terms, log_alpha
from specbound.measures.logspace import LOG_MAX, S_FLOOR, logsumexp, safe_log


def test_safe_log_is_the_natural_log_with_log_zero_minus_inf_silently() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a divide-by-zero RuntimeWarning would fail here
        out = safe_log([0.0, 1.0, math.e, 10.0])
    assert out.dtype == np.float64
    assert out[0] == -math.inf and out[1] == 0.0
    assert out[2] == pytest.approx(1.0, abs=1e-15) and out[3] == pytest.approx(math.log(10))
    assert S_FLOOR == np.finfo(np.float64).tiny > 0
    assert math.isfinite(math.exp(LOG_MAX - 1e-9))
    with pytest.raises(OverflowError):
        math.exp(LOG_MAX + 1e-9)


def test_logsumexp_matches_the_plain_sum_and_takes_infinities() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 5))
    for axis in (None, 0, 1):
        want = np.log(np.sum(np.exp(a), axis=axis))
        np.testing.assert_allclose(logsumexp(a, axis=axis), want, rtol=1e-14)
    assert logsumexp(np.array([1000.0, 1000.0])) == pytest.approx(1000 + math.log(2), abs=1e-12)
    assert logsumexp(np.array([-np.inf, -np.inf])) == -np.inf  # all -inf: log 0
    assert logsumexp(np.array([-np.inf, 0.0])) == 0.0
    assert logsumexp(np.array([np.inf, 0.0])) == np.inf
    assert logsumexp(np.array([])) == -np.inf


def _alpha_direct(c2_in, c2_out, c2_qk, c2_ov, l_phi) -> list[float]:
    """alpha(l) = prod_{k=l+1}^{L-1} L_phi C2(M_in) C2(M_out) sum_h C2(OV)(1 + 4 C2(QK))."""
    L = len(c2_in)
    factors = [
        l_phi
        * c2_in[k]
        * c2_out[k]
        * sum(o * (1 + 4 * q) for q, o in zip(c2_qk[k], c2_ov[k], strict=True))
        for k in range(L)
    ]
    return [math.prod(factors[l + 1 :]) for l in range(L)]


def test_log_alpha_is_the_product_of_the_later_blocks() -> None:
    rng = np.random.default_rng(1)
    L, H = 4, 3
    c2_in, c2_out = rng.uniform(0.5, 3, L), rng.uniform(0.5, 3, L)
    c2_qk, c2_ov = rng.uniform(0.1, 2, (L, H)), rng.uniform(0.1, 2, (L, H))
    got = log_alpha(np.log(c2_in), np.log(c2_out), c2_qk, c2_ov, 1.7)
    want = _alpha_direct(c2_in, c2_out, c2_qk, c2_ov, 1.7)
    np.testing.assert_allclose(np.exp(got), want, rtol=1e-12)
    assert got[-1] == 0.0  # alpha(L-1) = 1: the empty product
    # beyond float64: C2 = 1e200 per head overflows the plain product, not the logs
    big = np.full((2, 1), 1e200)
    got = log_alpha(np.zeros(2), np.zeros(2), big, big, 1.0)
    assert got[0] == pytest.approx(math.log(1e200) + math.log(1 + 4e200), rel=1e-12)


def test_depth_terms_of_a_model_are_gamma_alpha_and_s(tiny_bert) -> None:
    """Per matrix of a 3-block BERT: gamma from its block's C2 (SPEC 4) and s = gamma alpha L,
    written out from the spectral norms with one loop per matrix."""
    a = analyze(tiny_bert(layers=3, heads=2), cache=False)
    sp, L, l_phi = a.spectra, 3, 1.3
    c2 = sp.spectral_norm
    t = {name: i for i, name in enumerate(MATRIX_TYPES)}

    def norm(layer: int, kind: str, head: int = -1) -> float:
        return float(c2[sp.find(layer, kind, head)])

    H = 2
    alpha = _alpha_direct(
        [norm(k, "M_in") for k in range(L)],
        [norm(k, "M_out") for k in range(L)],
        [[norm(k, "QK", h) for h in range(H)] for k in range(L)],
        [[norm(k, "OV", h) for h in range(H)] for k in range(L)],
        l_phi,
    )
    terms = depth_terms(sp, L, l_phi)
    np.testing.assert_allclose(np.exp(terms.log_alpha), alpha, rtol=1e-12)
    for i in range(len(sp)):
        layer, kind, head = int(sp.layer[i]), int(sp.matrix_type[i]), int(sp.head[i])
        ffn = norm(layer, "M_out") * norm(layer, "M_in")
        gamma = {
            t["QK"]: 2 * norm(layer, "OV", head) * ffn if kind == t["QK"] else 0.0,
            t["OV"]: ffn,
            t["M_in"]: norm(layer, "M_out"),
            t["M_out"]: 1.0,
        }[kind]
        assert math.exp(terms.log_gamma[i]) == pytest.approx(gamma, rel=1e-12), i
        s = gamma * alpha[layer] * L
        assert math.exp(terms.log_scale[i]) == pytest.approx(s, rel=1e-12), i
