"""SPEC 6 at the edge of float64: weights x ~1e100..1e150 (finite) give finite logs everywhere,
None (JSON null, CSV empty) only for values truly beyond float64, and strict JSON.

The reference is a log-space implementation written here from SPEC 4-5 (no specbound code); its
inputs are tests/support/reference.py's dense-SVD statistics of the unscaled model, moved by the
exact power-of-two factor c = 2^k: QK and OV scale by c^2, M_in and M_out by c (every singular value
and every column norm likewise).
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

import specbound
from tests.support.checkpoints import write_tiny_bert
from tests.support.reference import reference

L_PHI = 1.13
LN2 = math.log(2.0)


def lse(values) -> float:
    v = [x for x in values if x != -math.inf]
    if not v:
        return -math.inf
    m = max(v)
    return m + math.log(math.fsum(math.exp(x - m) for x in v))


def log_reference(directory, k: int) -> dict:
    """ln B_sa, ln B_nb and p* per matrix of the model in ``directory`` with weights x 2^k."""
    cfg = json.loads((directory / "config.json").read_text())
    L, N, H = cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"]
    rows = reference(directory, l_phi=L_PHI)["rows"]
    power = {"QK": 2, "OV": 2, "M_in": 1, "M_out": 1}
    for r in rows:
        shift = power[r["matrix_type"]] * k * LN2
        r["lc2"] = math.log(r["spectral_norm"]) + shift
        r["l21"] = math.log(r["norm_21"]) + shift
        r["lkept"] = [math.log(s) + shift for s in r["kept"]]

    def lc2(l, t, h=-1):
        return next(
            r["lc2"] for r in rows if (r["layer"], r["matrix_type"], r["head"]) == (l, t, h)
        )

    def factor(l):
        heads = lse(lc2(l, "OV", h) + lse([0.0, math.log(4.0) + lc2(l, "QK", h)]) for h in range(H))
        return math.log(L_PHI) + lc2(l, "M_in") + lc2(l, "M_out") + heads

    la = [math.fsum(factor(j) for j in range(l + 1, L)) for l in range(L)]
    m = math.ceil(L + math.log(max(N, 2)))
    grid = [i / m for i in range(2 * m + 1)]
    contributions, p_star = [], []
    for r in rows:
        l, t, h = r["layer"], r["matrix_type"], r["head"]
        co, ci = lc2(l, "M_out"), lc2(l, "M_in")
        if t == "QK":
            lg = LN2 + lc2(l, "OV", h) + co + ci
        elif t == "OV":
            lg = co + ci
        else:
            lg = co if t == "M_in" else 0.0
        ls = lg + la[l] + math.log(L)
        best = None
        for p in grid:
            lsp = math.log(len(r["lkept"])) if p == 0 else lse(p * x for x in r["lkept"])
            c = (lsp + p * ls + (p + 1) * math.log(N)) / (p + 2)
            if best is None or c < best[1]:
                best = (p, c)
        p_star.append(best[0])
        contributions.append(best[1])
    log_sa = lse([*contributions, 0.5 * math.log(L)])
    terms = []
    for l in range(L):
        co, ci = lc2(l, "M_out"), lc2(l, "M_in")
        xi = []
        for r in rows:
            if r["layer"] != l:
                continue
            t = r["matrix_type"]
            if t == "QK":
                xi.append(2 / 3 * (co + ci + lc2(l, "OV", r["head"]) + r["l21"]))
            elif t == "OV":
                xi.append(2 / 3 * (co + ci + r["l21"]))
            elif t == "M_in":
                xi.append(2 / 3 * (co + r["l21"]))
            else:
                xi.append(2 / 3 * r["l21"])
        terms.append(2 / 3 * la[l] + lse(xi))
    log_nb = 1.5 * lse([0.0, *terms])
    ranks = [r["rank"] for r in rows]
    ceiling = lse([0.5 * math.log(r * N) for r in ranks if r > 0] + [0.5 * math.log(L)])
    return {"sa": log_sa, "nb": log_nb, "p_star": p_star, "ceiling": ceiling}


def _scaled(tmp_path, k: int, name: str = "m"):
    return write_tiny_bert(
        tmp_path / name, layers=3, hidden=32, heads=2, ffn=64, scale=2.0**k, dtype="float64"
    )


def test_log_reference_agrees_with_the_linear_one(tmp_path):
    """The log-space reference itself, at scale 1, against tests/support/reference.py."""
    d = _scaled(tmp_path, 0)
    lin, log = reference(d, l_phi=L_PHI), log_reference(d, 0)
    assert log["sa"] == pytest.approx(math.log(lin["spectrum_adaptive"]), rel=1e-12)
    assert log["nb"] == pytest.approx(math.log(lin["norm_based"]), rel=1e-12)


@pytest.mark.parametrize("k", [332, 399, 498])  # x ~1e100, ~1e120, ~1.6e150
def test_huge_weights_keep_every_log(tmp_path, k):
    base = _scaled(tmp_path, 0, "base")
    big = write_tiny_bert(
        tmp_path / "big", layers=3, hidden=32, heads=2, ffn=64, scale=2.0**k, dtype="float64"
    )
    a = specbound.analyze(str(big), cache=False)
    want = log_reference(base, k)
    ln10 = math.log(10.0)
    assert a.bounds.spectrum_adaptive.log10 == pytest.approx(want["sa"] / ln10, rel=1e-9)
    assert a.bounds.norm_based.log10 == pytest.approx(want["nb"] / ln10, rel=1e-9)
    assert a.bounds.norm_based.value is None  # truly beyond float64
    np.testing.assert_array_equal(a.details.p_star, want["p_star"])
    assert a.log10_spectrum_adaptive_ceiling == pytest.approx(want["ceiling"] / ln10, abs=1e-9)
    assert a.spectrum_adaptive_ceiling_gap == pytest.approx(
        (want["ceiling"] - want["sa"]) / ln10, abs=1e-9
    )
    # every finite log in the tables; the values beyond float64 missing, never inf
    m = a.matrices
    for c in ("log10_depth_factor", "log10_gamma", "log10_scale", "log10_contribution"):
        assert np.all(np.isfinite(m[c])), c
    for c in ("spectral_norm", "frobenius_norm", "nuclear_norm", "norm_21", "norm_11"):
        assert np.all(np.isfinite(m[c])), c  # ~1e300 at most: still float64
    assert not np.isinf(m.select_dtypes("number").to_numpy(dtype=float)).any()
    s = a.summary()
    text = json.dumps(s, allow_nan=False)
    assert "Infinity" not in text and "NaN" not in text
    assert s["measures"]["norm_based"] == pytest.approx(want["nb"] / ln10, rel=1e-9)
    for name in ("log_spectral_product", "log_frobenius_product", "htsr_alpha"):
        assert s["measures"][name] is not None and math.isfinite(s["measures"][name]), name


def test_x1e120_outputs_are_strict(tmp_path):
    d = write_tiny_bert(
        tmp_path / "m", layers=2, hidden=32, heads=2, ffn=64, scale=1e120, dtype="float64"
    )
    a = specbound.analyze(str(d), cache=False)
    json.dumps(a.summary(), allow_nan=False)
    out = a.to_dir(tmp_path / "out")
    json.loads((out / "summary.json").read_text())
    for f in ("matrices.csv", "layers.csv", "weights.csv"):
        text = (out / f).read_text().lower()
        assert "inf" not in text and "nan" not in text, f
    d = a.details()
    assert not np.isinf(d.select_dtypes("number").to_numpy(dtype=float)).any()


def test_products_beyond_float64_are_undefined_not_guessed(tmp_path):
    """x1e160: QK/OV singular values ~1e320 exceed float64. Their bounds are None with a note
    (never a number computed from overflowed values), the JSON stays strict."""
    d = write_tiny_bert(
        tmp_path / "m", layers=2, hidden=32, heads=2, ffn=64, scale=1e160, dtype="float64"
    )
    a = specbound.analyze(str(d), cache=False)
    s = a.summary()
    json.dumps(s, allow_nan=False)
    assert s["measures"]["spectrum_adaptive"] is None
    assert "float64" in s["measure_notes"]["spectrum_adaptive"]
    assert s["spectrum_adaptive_ceiling_gap"] is None
    assert s["measures"]["log_spectral_product"] is not None  # raw weights still fit
    assert s["measures"]["htsr_alpha"] is not None  # fitted from log eigenvalues


def test_scale_study_of_models_beyond_float64_is_drawn_and_says_undefined(tmp_path):
    """A scale study of models x1e160 (both proxies beyond float64: empty cells) writes its page
    (before: an internal error in the growth figure), draws no empty proxy figure, and says the
    proxies are undefined instead of printing "nan"."""
    pytest.importorskip("matplotlib")
    from tests.support.cli_runner import run_cli

    models = [
        write_tiny_bert(
            tmp_path / f"m{i}", layers=L, hidden=N, heads=2, ffn=2 * N, scale=1e160, dtype="float64"
        )
        for i, (L, N) in enumerate([(1, 16), (2, 16), (1, 32), (2, 32)])
    ]
    out = tmp_path / "s"
    res = run_cli("scale", *models, "--out", out, "-q")
    assert res.code == 0, res.err
    page = re.sub(r'src="data:[^"]*"', "", (out / "report.html").read_text())
    assert re.search(r"\bnan\b", page, re.IGNORECASE) is None
    assert "proxy is beyond float64 (undefined) for every model" in page
    assert not list((out / "figures").glob("growth_vs_*"))  # nothing defined to draw
