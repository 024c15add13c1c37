"""specbound against independent implementations (1e-9 relative on norms and proxies).

reference.py: dense products, full SVDs, linear-space arithmetic (models whose alpha fits a
float64). benchmarks/naive_dense.py: the standalone dense method in log space, for the overflow
regime (48 layers). Neither imports specbound; the constants they need come from SPEC.md.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import specbound
from tests.support.checkpoints import write_tiny_bert
from tests.support.reference import reference
from tests.support.spectral_checks import assert_sv_match, spec_rank_threshold

#: SPEC.md section 4: L_phi = 1.13 for GELU (all-MiniLM-L6-v2 and the tiny BERTs), 1 for ReLU.
L_PHI_GELU = 1.13
NAIVE = Path(__file__).resolve().parents[1] / "benchmarks" / "naive_dense.py"

COLUMNS = [
    "rows",
    "cols",
    "spectral_norm",
    "frobenius_norm",
    "nuclear_norm",
    "norm_21",
    "norm_11",
    "rank",
    "stable_rank",
    "depth_factor",
    "gamma",
    "scale",
    "p_star",
    "contribution",
]

#: The reference writes SPEC's alpha(l); specbound's tables call it depth_factor.
REF_NAMES = {"depth_factor": "alpha"}


def _compare(directory):
    a = specbound.analyze(str(directory), cache=False)
    assert a.l_phi == L_PHI_GELU
    ref = reference(directory, l_phi=L_PHI_GELU)
    m = a.matrices
    assert len(m) == len(ref["rows"])
    for i, r in enumerate(ref["rows"]):
        assert (m["layer"][i], m["head"][i], m["matrix_type"][i]) == (
            r["layer"],
            r["head"],
            r["matrix_type"],
        )
        for c in COLUMNS:
            want = r[REF_NAMES.get(c, c)]
            np.testing.assert_allclose(m[c][i], want, rtol=1e-9, atol=0, err_msg=f"{c} row {i}")
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
    ps = np.concatenate(
        [specbound.analyze(str(d), cache=False).details.p_star for d in scaled_minilm.values()]
    )
    assert np.any(ps == 0) and np.any(ps == 2) and np.any((ps > 0) & (ps < 2))


def test_factored_spectrum_equals_dense_svd(minilm_dir):
    from tests.support.safetensors_np import load_file

    a = specbound.analyze(str(minilm_dir), cache=False)
    sd = load_file(str(minilm_dir / "model.safetensors"))
    wq = sd["encoder.layer.3.attention.self.query.weight"].astype(np.float64)
    wk = sd["encoder.layer.3.attention.self.key.weight"].astype(np.float64)
    dense = np.linalg.svd(wq[64:96].T @ wk[64:96], compute_uv=False)
    sv = a.spectra.singular_values(a.spectra.find(3, "QK", 2))
    scale = float(np.linalg.norm(wq[64:96]) * np.linalg.norm(wk[64:96]))
    assert_sv_match(sv, dense, 384, scale, got_rank=int(a.spectra.rank[a.spectra.find(3, "QK", 2)]))
    assert np.all(dense[sv.size :] <= spec_rank_threshold(384, dense[0]))


def test_two_layer_toy_by_hand(tmp_path):
    """L=2, N=2, H=1, F=2 with diagonal weights: every quantity is known in closed form."""
    from tests.support.safetensors_np import save_file

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
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "model_type": "bert",
                "num_hidden_layers": 2,
                "hidden_size": 2,
                "num_attention_heads": 1,
                "intermediate_size": 2,
                "hidden_act": "relu",
            }
        )
    )
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


def run_naive_dense(checkpoint: Path, table: Path) -> dict:
    """benchmarks/naive_dense.py in a fresh interpreter where ``import specbound`` fails."""
    code = (
        "import runpy, sys; sys.modules['specbound'] = None; sys.argv = sys.argv[1:]; "
        "runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(NAIVE),
            str(checkpoint),
            "--l-phi",
            str(L_PHI_GELU),
            "--table",
            str(table),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_naive_dense_is_standalone():
    src = NAIVE.read_text()
    assert "specbound" not in "".join(
        line for line in src.splitlines() if line.lstrip().startswith(("import ", "from "))
    )


def test_48_layers_finite(tmp_path):
    ck = write_tiny_bert(tmp_path / "m", layers=48, hidden=64, heads=4, ffn=128, seed=3)
    a = specbound.analyze(str(ck), cache=False)
    # against the standalone naive dense method (log space; linear space overflows here)
    naive = run_naive_dense(ck, tmp_path / "naive.csv")
    for b in ("spectrum_adaptive", "norm_based"):
        want = naive["bounds"][b]["log10"]
        assert getattr(a.bounds, b).log10 == pytest.approx(want, rel=1e-9), b
    t = pd.read_csv(tmp_path / "naive.csv")
    m = a.matrices
    assert len(t) == len(m) == 48 * (2 * 4 + 2)
    for c in ("layer", "head", "matrix_type", "rank"):
        assert list(m[c]) == list(t[c]), c
    np.testing.assert_allclose(m.p_star, t.p_star, rtol=0, atol=1e-12)  # grid step 1/m
    for c in ("spectral_norm", "frobenius_norm", "norm_21", "norm_11"):
        np.testing.assert_allclose(m[c], t[c], rtol=1e-9, err_msg=c)
    assert a.grid_m == naive["grid_m"]
    s = a.summary()
    for b in ("spectrum_adaptive", "norm_based"):
        assert math.isfinite(s["bounds"][b]["log10"])
        v = s["bounds"][b]["value"]
        assert v is None or math.isfinite(v)
    assert np.all(np.isfinite(a.details.log_alpha))
    assert s["bounds"]["norm_based"]["log10"] > 308 and s["bounds"]["norm_based"]["value"] is None
    json.dumps(s, allow_nan=False)


def test_zero_matrix_contributes_nothing(tmp_path):
    from tests.support.safetensors_np import load_file, save_file

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
