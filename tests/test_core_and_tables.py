"""The core types (``specbound.core``) and the summaries ``specbound.tables`` derives from an
analysis, checked against the analysis's own per-matrix table with pandas."""

from __future__ import annotations

import collections
import math

import numpy as np
import pytest

from specbound import core, tables
from specbound.activations import lipschitz_constant
from specbound.analysis import analyze
from specbound.linalg import spectra


def test_model_spec_and_layer_weights() -> None:
    spec = core.ModelSpec("bert", 2, 8, 2, 4, 16, "gelu")
    assert spec.kv_heads == 2 and spec.l_phi == lipschitz_constant("gelu")
    assert core.ModelSpec("llama", 2, 8, 4, 2, 16, "silu", num_kv_heads=1).kv_heads == 1
    w = [np.full((1, 1), float(i)) for i in range(6)]
    block = core.LayerWeights(0, *w)
    assert list(block.raw()) == list(core.WEIGHT_ROLES)
    assert [float(m[0, 0]) for m in block.raw().values()] == [0, 1, 2, 3, 4, 5]
    # the row types of Spectra are these indices
    assert (spectra.QK, spectra.OV, spectra.M_IN, spectra.M_OUT) == (0, 1, 2, 3)
    assert core.MATRIX_TYPES == ("QK", "OV", "M_in", "M_out")


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    from tests.support.checkpoints import write_tiny_bert

    return analyze(write_tiny_bert(tmp_path_factory.mktemp("t") / "m", layers=3), cache=False)


def test_type_shares_and_p_star_counts_from_the_matrix_table(analysis) -> None:
    m = analysis.matrices
    c = 10.0 ** (m["log10_contribution"] - m["log10_contribution"].max())
    want = (c.groupby(m["matrix_type"]).sum() / c.sum()).to_dict()
    got = tables.type_shares(analysis)
    assert got is not None and set(got) == set(core.MATRIX_TYPES)
    assert got == pytest.approx(want, rel=1e-12) and sum(got.values()) == pytest.approx(1.0)
    assert tables.p_star_counts(analysis) == sorted(collections.Counter(m["p_star"]).items())


def test_headroom_by_layer_type_is_the_minimum_per_layer_and_type(analysis) -> None:
    m = analysis.matrices
    types = np.array([core.MATRIX_TYPES.index(t) for t in m["matrix_type"]])
    h = m["adaptive_headroom"].to_numpy(float).copy()
    h[0] = np.nan  # an undefined headroom is skipped, not the minimum
    got = tables.headroom_by_layer_type(m["layer"].to_numpy(), types, h, 3)
    frame = m.assign(h=h)
    for t in core.MATRIX_TYPES:
        want = frame[frame["matrix_type"] == t].groupby("layer")["h"].min().reindex(range(3))
        np.testing.assert_array_equal(got[f"adaptive_headroom_min_{t}"], want.to_numpy())
    np.testing.assert_allclose(
        analysis.layers["adaptive_headroom_min_OV"],
        m[m["matrix_type"] == "OV"].groupby("layer")["adaptive_headroom"].min(),
    )


def test_headroom_sentence_names_the_extreme_matrices(analysis) -> None:
    m = analysis.matrices
    lo, hi = m["adaptive_headroom"].idxmin(), m["adaptive_headroom"].idxmax()
    text = tables.headroom_sentence(analysis)
    assert text is not None
    assert f"adaptive headroom {m['adaptive_headroom'][lo]:.3g} to" in text
    assert f"{m['adaptive_headroom'][hi]:.3g} decades" in text
    assert f"layer {m['layer'][lo]}'s {m['matrix_type'][lo]}" in text


def test_cells_beyond_float64_are_missing_and_counts_stay_integers() -> None:
    out = tables.missing_if_not_finite(
        {"x": np.array([1.0, np.inf, -np.inf, np.nan]), "n": np.array([1, 2])}
    )
    assert np.isnan(out["x"][1:]).all() and out["x"][0] == 1.0
    assert out["n"].dtype.kind == "i"
    assert tables.pd_int(np.array([3.0, math.nan])).tolist() == [3, None]
    assert tables.pd_int(np.array([2.0, math.inf])).tolist() == [2, None]
