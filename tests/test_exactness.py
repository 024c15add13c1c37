"""specbound against the independent dense implementation in reference.py (1e-9 relative)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import write_tiny_bert
from reference import reference

import specbound

COLUMNS = ["rows", "cols", "spectral_norm", "frobenius_norm", "nuclear_norm", "norm_21",
           "norm_11", "rank", "stable_rank", "alpha", "gamma", "scale", "p_star", "contribution"]


def _compare(directory):
    a = specbound.analyze(str(directory), cache=False)
    ref = reference(directory, l_phi=a.l_phi)
    m = a.matrices
    assert len(m) == len(ref["rows"])
    for i, r in enumerate(ref["rows"]):
        assert (m["layer"][i], m["head"][i], m["matrix_type"][i]) == (r["layer"], r["head"],
                                                              r["matrix_type"])
        for c in COLUMNS:
            np.testing.assert_allclose(m[c][i], r[c], rtol=1e-9, atol=0, err_msg=f"{c} row {i}")
    assert a.grid_m == ref["grid_m"]
    assert a.bounds.spectrum_adaptive.value == pytest.approx(ref["spectrum_adaptive"], rel=1e-9)
    assert a.bounds.norm_based.value == pytest.approx(ref["norm_based"], rel=1e-9)
    return a


def test_minilm_matches_reference(minilm_dir):
    a = _compare(minilm_dir)
    # SPEC.md: MiniLM-L6 has alpha(0) ~ 3e22 and every matrix picks p = 0.
    assert 1e22 < math.exp(a.details.log_alpha[0]) < 1e23
    assert np.all(a.details.p_star == 0)


@pytest.mark.parametrize("factor", [0.1, 0.2, 0.3])
def test_scaled_minilm_matches_reference(scaled_minilm, factor):
    _compare(scaled_minilm[factor])


def test_scaled_copies_cover_the_p_grid(scaled_minilm):
    ps = np.concatenate([specbound.analyze(str(d), cache=False).details.p_star
                         for d in scaled_minilm.values()])
    assert np.any(ps == 0) and np.any(ps == 2) and np.any((ps > 0) & (ps < 2))


def test_factored_spectrum_equals_dense_svd(minilm_dir):
    from safetensors.numpy import load_file

    a = specbound.analyze(str(minilm_dir), cache=False)
    sd = load_file(str(minilm_dir / "model.safetensors"))
    wq = sd["encoder.layer.3.attention.self.query.weight"].astype(np.float64)
    wk = sd["encoder.layer.3.attention.self.key.weight"].astype(np.float64)
    dense = np.linalg.svd(wq[64:96].T @ wk[64:96], compute_uv=False)
    sv = a.spectra.singular_values(a.spectra.find(3, "QK", 2))
    np.testing.assert_allclose(sv, dense[: sv.size], rtol=1e-10)
    assert np.all(dense[sv.size:] < 1e-10 * 384 * dense[0])


def test_two_layer_toy_by_hand(tmp_path):
    """L=2, N=2, H=1, F=2 with diagonal weights: every quantity is known in closed form."""
    from safetensors.numpy import save_file

    eye = np.eye(2, dtype="f4")
    sd = {}
    for l, sc in enumerate((2.0, 1.0)):
        p = f"encoder.layer.{l}."
        sd[p + "attention.self.query.weight"] = eye * sc
        sd[p + "attention.self.key.weight"] = eye.copy()
        sd[p + "attention.self.value.weight"] = eye.copy()
        sd[p + "attention.output.dense.weight"] = eye.copy()
        sd[p + "intermediate.dense.weight"] = eye * 3
        sd[p + "output.dense.weight"] = eye.copy()
    save_file(sd, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps(
        {"model_type": "bert", "num_hidden_layers": 2, "hidden_size": 2,
         "num_attention_heads": 1, "intermediate_size": 2, "hidden_act": "relu"}))
    a = specbound.analyze(str(tmp_path), cache=False)
    # alpha(0) = L_phi * C2(M_in 1) * C2(M_out 1) * C2(OV 1) * (1 + 4 C2(QK 1)) = 1*3*1*1*5
    assert math.exp(a.details.log_alpha[0]) == pytest.approx(15.0, rel=1e-12)
    assert a.details.log_alpha[1] == 0.0
    m = a.matrices
    qk0 = m[(m.layer == 0) & (m.matrix_type == "QK")].iloc[0]
    assert qk0.spectral_norm == pytest.approx(2.0) and qk0["rank"] == 2
    assert qk0.gamma == pytest.approx(2 * 1 * 1 * 3)  # 2 C2(OV) C2(M_out) C2(M_in)
    assert qk0.scale == pytest.approx(6 * 15 * 2)
    # grid m = ceil(2 + ln 2) = 3; brute force over p in {0, 1/3, ..., 2}
    grid = [j / 3 for j in range(7)]

    def c(p, svs, s):
        sp = len(svs) if p == 0 else sum(x**p for x in svs)
        return sp ** (1 / (p + 2)) * s ** (p / (p + 2)) * 2 ** ((p + 1) / (p + 2))

    best = min(grid, key=lambda p: (c(p, [2, 2], 180.0), p))
    assert qk0.p_star == pytest.approx(best)
    assert qk0.contribution == pytest.approx(c(best, [2, 2], 180.0), rel=1e-12)
    # c(A, 0) = sqrt(rank * N) = 2 whenever p* = 0
    np.testing.assert_allclose(m.contribution[m.p_star == 0], 2.0, rtol=1e-12)
    total = m.contribution.sum() + math.sqrt(2)
    assert a.bounds.spectrum_adaptive.value == pytest.approx(total, rel=1e-12)


def test_48_layers_finite(tmp_path):
    write_tiny_bert(tmp_path, layers=48, hidden=64, heads=4, ffn=128, seed=3)
    a = specbound.analyze(str(tmp_path), cache=False)
    s = a.summary()
    for b in ("spectrum_adaptive", "norm_based"):
        assert math.isfinite(s["bounds"][b]["log10"])
        v = s["bounds"][b]["value"]
        assert v is None or math.isfinite(v)
    assert np.all(np.isfinite(a.details.log_alpha))
    assert s["bounds"]["norm_based"]["log10"] > 308 and s["bounds"]["norm_based"]["value"] is None
    json.dumps(s, allow_nan=False)


def test_zero_matrix_contributes_nothing(tmp_path):
    from safetensors.numpy import load_file, save_file

    write_tiny_bert(tmp_path, seed=1)
    sd = load_file(str(tmp_path / "model.safetensors"))
    sd["encoder.layer.0.attention.self.query.weight"][:] = 0
    save_file(sd, str(tmp_path / "model.safetensors"))
    a = specbound.analyze(str(tmp_path), cache=False)
    m = a.matrices
    qk0 = m[(m.layer == 0) & (m.matrix_type == "QK")]
    assert (qk0["rank"] == 0).all() and (qk0.contribution == 0).all() and (qk0.p_star == 0).all()
    assert math.isfinite(a.bounds.spectrum_adaptive.log10)
    assert math.isfinite(a.bounds.norm_based.log10)
