"""The Python API of issue 22: describe, details(), summary(), the log convention, the names.

References share no code with specbound: safetensors' own header for describe, numpy's SVD of
the raw tensors for the spectral norms (sigma_max, not WeightWatcher's lambda_max = sigma^2).
"""

from __future__ import annotations

import json
import math
import re
import warnings

import numpy as np
import pytest

import specbound
from specbound import BoundValue
from tests.support.safetensors_np import load_file


@pytest.fixture(scope="module")
def minilm(minilm_dir):
    return specbound.analyze(str(minilm_dir), cache=False)


ROLE_OF = {
    r"attention\.self\.query\.weight$": "query",
    r"attention\.self\.key\.weight$": "key",
    r"attention\.self\.value\.weight$": "value",
    r"attention\.output\.dense\.weight$": "output",
    r"intermediate\.dense\.weight$": "ffn_in",
    r"(?<!attention\.)output\.dense\.weight$": "ffn_out",
}


def test_bound_value_logs():
    b = BoundValue(10.0)
    assert b.ln == 10.0
    assert b.log10 == pytest.approx(10.0 / math.log(10.0), rel=1e-15)
    assert b.value == pytest.approx(math.exp(10.0), rel=1e-15)
    with pytest.warns(DeprecationWarning, match=r"\.ln"):
        assert b.log == 10.0
    assert BoundValue(1000.0).value is None  # beyond float64, the logs stay
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert b.to_dict() == {"value": b.value, "log10": b.log10}  # no deprecated use inside


def test_describe_lists_every_tensor_before_any_work(minilm_dir, monkeypatch):
    from specbound.linalg import pool

    def no_work(jobs):
        raise AssertionError("describe must not compute spectra")

    monkeypatch.setattr(pool, "run_jobs", no_work)
    d = specbound.describe(str(minilm_dir))
    tensors = load_file(minilm_dir / "model.safetensors")
    names = sorted(tensors)
    shapes = {n: tensors[n].shape for n in names}
    assert list(d["name"]) == names
    assert list(d.columns) == [
        "name", "role", "layer", "uses", "shape", "dtype", "num_parameters", "analyzed",
    ]  # fmt: skip
    for _, row in d.iterrows():
        assert row["shape"] == shapes[row["name"]]
        assert row["num_parameters"] == int(np.prod(row["shape"]))
        want = next((r for p, r in ROLE_OF.items() if re.search(p, row["name"])), None)
        if want is None:
            assert not row["analyzed"] and row["role"] == "" and row["layer"] is pd_na()
        else:
            assert row["analyzed"] and row["role"] == want, row["name"]
            assert row["layer"] == int(row["name"].split(".")[2])
    assert int(d["analyzed"].sum()) == 6 * 6
    assert (
        int(d["num_parameters"].sum())
        == specbound.analyze(str(minilm_dir), measures="num_parameters").measures["num_parameters"]
    )


def pd_na():
    import pandas as pd

    return pd.NA


def test_details_one_frame_for_every_matrix(minilm, minilm_dir):
    d = minilm.details()
    m, w = minilm.matrices, minilm.weights
    assert len(d) == len(m) + len(w) == 6 * (2 * 12 + 2) + 6 * 6
    canon, raw = d[d["kind"] == "canonical"], d[d["kind"] == "weight"]
    assert list(canon["matrix"]) == list(m["matrix_type"])
    assert set(raw["matrix"]) == {"W_Q", "W_K", "W_V", "W_O", "W_in", "W_out"}
    for c in m.columns.drop("matrix_type"):
        np.testing.assert_array_equal(canon[c].to_numpy(dtype=float), m[c].to_numpy(dtype=float))
    text = ["role", "tensor", "htsr_fit", "htsr_fit_reason"]
    for c in w.columns.drop(text):
        np.testing.assert_array_equal(raw[c].to_numpy(dtype=float), w[c].to_numpy(dtype=float))
    for c in text:
        assert list(raw[c]) == list(w[c])
    # spectral_norm is sigma_max of the tensor (numpy's SVD), not sigma_max^2
    tensors = load_file(minilm_dir / "model.safetensors")
    for _, row in raw.iterrows():
        s = np.linalg.svd(tensors[row["tensor"]].astype(np.float64), compute_uv=False)
        tol = 50 * np.finfo(np.float64).eps * max(row["rows"], row["cols"]) * s[0]
        assert abs(row["spectral_norm"] - s[0]) <= tol
    assert minilm.details.p_star is not None  # still the bound details as an attribute


def test_summary_is_a_json_safe_dict(minilm, tmp_path):
    s = minilm.summary()
    assert isinstance(s, dict)
    text = json.dumps(s, allow_nan=False)
    out = minilm.to_dir(tmp_path / "out")
    assert json.loads((out / "summary.json").read_text()) == json.loads(text)
    for k in ("spectrum_adaptive_share_p0", "spectrum_adaptive_ceiling_gap"):
        assert k in s


def test_depth_factor_name_everywhere(minilm, tmp_path):
    """The depth factor alpha(l) is depth_factor in every table; alpha alone names nothing."""
    out = minilm.to_dir(tmp_path / "out")
    for frame in (minilm.matrices, minilm.layers, minilm.details()):
        assert "depth_factor" in frame.columns and "log10_depth_factor" in frame.columns
        assert not [c for c in frame.columns if re.fullmatch(r"(log10_)?alpha", c)]
    for f in ("matrices.csv", "layers.csv"):
        header = (out / f).read_text().splitlines()[0].split(",")
        assert "depth_factor" in header and "alpha" not in header and "log10_alpha" not in header
    assert "htsr_alpha" in minilm.weights.columns  # WeightWatcher's exponent keeps its name
    np.testing.assert_array_equal(
        minilm.layers["log10_depth_factor"], minilm.details.log_alpha / math.log(10.0)
    )


def test_public_names():
    for name in ("analyze", "describe", "Analysis", "BoundValue", "Bounds", "SpecboundError"):
        assert name in specbound.__all__ and getattr(specbound, name) is not None
