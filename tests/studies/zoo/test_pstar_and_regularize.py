"""A zoo model's p* table (``zoo.pstar``) and the spectral regularization penalty
(``zoo.regularize``), the latter against numpy's SVD."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specbound.analysis import analyze
from specbound.studies.zoo import pstar
from specbound.studies.zoo.regularize import norm_sums, penalty, reg_of


def test_the_pstar_table_is_the_analysis_columns_and_is_read_back(tiny_bert) -> None:
    model = tiny_bert(layers=2)
    table = pstar.model_table(model)
    want = analyze(model, cache=False).matrices[pstar.COLUMNS].reset_index(drop=True)
    pd.testing.assert_frame_equal(table, want)
    pstar.write_model_table(Path(model))
    assert (Path(model) / pstar.FILE).read_text().splitlines()[0] == ",".join(pstar.COLUMNS)
    back = pstar.read_model_table(Path(model))
    np.testing.assert_allclose(back["log10_scale"], want["log10_scale"], rtol=1e-15)
    assert list(back["matrix_type"]) == list(want["matrix_type"])
    (Path(model) / pstar.FILE).write_text("other,columns\n1,2\n")  # not the table: recomputed
    pd.testing.assert_frame_equal(pstar.read_model_table(Path(model)), want)


def test_a_model_that_cannot_be_analyzed_has_an_empty_table(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    table = pstar.model_table(tmp_path)
    assert list(table.columns) == pstar.COLUMNS and len(table) == 0


def test_reg_of_a_grid_point() -> None:
    assert reg_of({}) == ("none", 0.0)
    assert reg_of({"spectral_reg": "nuclear", "spectral_reg_strength": 0.0}) == ("none", 0.0)
    assert reg_of({"spectral_reg": "spectral", "spectral_reg_strength": "0.5"}) == (
        "spectral",
        0.5,
    )


def test_penalty_sums_nuclear_or_spectral_norms() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    mats = [rng.normal(size=(4, 3)), rng.normal(size=(2, 5))]
    sv = [np.linalg.svd(m, compute_uv=False) for m in mats]
    weights = [torch.tensor(m, requires_grad=True) for m in mats]
    nuc = penalty(weights, "nuclear", 0.25)
    assert nuc.item() == pytest.approx(0.25 * sum(s.sum() for s in sv), rel=1e-12)
    spec = penalty(weights, "spectral", 2.0)
    assert spec.item() == pytest.approx(2.0 * sum(s.max() for s in sv), rel=1e-12)
    spec.backward()  # differentiable: d||W||_2/dW = u1 v1^T
    u, _, vt = np.linalg.svd(mats[0])
    np.testing.assert_allclose(weights[0].grad.numpy(), 2.0 * np.outer(u[:, 0], vt[0]), atol=1e-10)
    batch = torch.tensor(np.stack([mats[0], 2 * mats[0]]))  # an ensemble: one sum per member
    n, s = norm_sums([batch])
    assert n.tolist() == pytest.approx([sv[0].sum(), 2 * sv[0].sum()], rel=1e-12)
    assert s.tolist() == pytest.approx([sv[0].max(), 2 * sv[0].max()], rel=1e-12)
    with pytest.raises(ValueError, match="no regularized weights"):
        norm_sums([])
