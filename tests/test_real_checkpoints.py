"""Real checkpoints shipped inside PyPI packages against the independent dense reference.

rxnmapper 0.4.3's ALBERT (3 MB; CI installs ``rxnmapper==0.4.3 --no-deps``): one shared layer
applied 12 times (SPEC 8). The weights are read here with ``torch.load(weights_only=True)`` (no
specbound code) and handed to tests/support/reference.py as twelve copies of the shared block, so
the depth factor, the p-grid search and both proxies are recomputed by brute force. Skipped when
rxnmapper is not installed (the file comes from the distribution, never a download).
"""

from __future__ import annotations

import importlib.metadata as md
import json
import math
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import specbound
from tests.support.reference import reference_blocks

#: SPEC.md section 4: L_phi = 1.13 for GELU (the ALBERT's hidden_act).
L_PHI_GELU = 1.13
ALBERT = "rxnmapper/models/transformers/albert_heads_8_uspto_all_1310k"


def _albert_dir() -> Path:
    try:
        d = md.distribution("rxnmapper")
    except md.PackageNotFoundError:
        pytest.skip("rxnmapper not installed (pip install --no-deps rxnmapper==0.4.3)")
    path = Path(str(d.locate_file(ALBERT)))
    if not (path / "pytorch_model.bin").is_file():
        pytest.skip(f"rxnmapper {d.version} does not ship {ALBERT}")
    return path


def _albert_reference(directory: Path) -> dict:
    torch = pytest.importorskip("torch")
    cfg = json.loads((directory / "config.json").read_text())
    assert (cfg["num_hidden_groups"], cfg["inner_group_num"]) == (1, 1)
    sd = torch.load(directory / "pytorch_model.bin", map_location="cpu", weights_only=True)
    p = "albert.encoder.albert_layer_groups.0.albert_layers.0."

    def w(name: str) -> np.ndarray:
        return sd[p + name].numpy().astype(np.float64)

    block = {
        "wq": w("attention.query.weight"),
        "wk": w("attention.key.weight"),
        "wv": w("attention.value.weight"),
        "wo": w("attention.dense.weight"),
        "w_in": w("ffn.weight"),
        "w_out": w("ffn_output.weight"),
    }
    L = cfg["num_hidden_layers"]
    # one BLAS thread: 216 small SVDs, and torch's threads beside OpenBLAS's oversubscribe a
    # loaded machine (0.8 s per 256 x 256 SVD instead of 0.02 s)
    with threadpool_limits(limits=1, user_api="blas"):
        return reference_blocks(
            [block] * L, cfg["hidden_size"], cfg["num_attention_heads"], l_phi=L_PHI_GELU
        )


def test_rxnmapper_albert_matches_dense_reference():
    """Both proxies to 1e-9 in log10, every matrix row's norms, scale, p* and contribution to
    1e-9 relative, and the share at p* = 0 from the reference's own p*."""
    directory = _albert_dir()
    a = specbound.analyze(str(directory), cache=False, measures="spectrum_adaptive,norm_based")
    ref = _albert_reference(directory)
    assert (a.spec.architecture, a.spec.num_layers, a.spec.hidden_size) == ("albert", 12, 256)
    assert a.l_phi == L_PHI_GELU
    for name in ("spectrum_adaptive", "norm_based"):
        got = getattr(a.bounds, name).log10
        want = math.log10(ref[name])
        assert abs(got - want) <= 1e-9, (name, got, want)
    assert a.grid_m == ref["grid_m"]
    m = a.matrices
    assert len(m) == len(ref["rows"]) == 12 * (2 * 8 + 2)
    for i, r in enumerate(ref["rows"]):
        assert (m["layer"][i], m["head"][i], m["matrix_type"][i]) == (
            r["layer"],
            r["head"],
            r["matrix_type"],
        )
        for col, key in (
            ("spectral_norm", "spectral_norm"),
            ("norm_21", "norm_21"),
            ("rank", "rank"),
            ("depth_factor", "alpha"),
            ("scale", "scale"),
            ("p_star", "p_star"),
            ("contribution", "contribution"),
        ):
            np.testing.assert_allclose(m[col][i], r[key], rtol=1e-9, atol=0, err_msg=f"{col} {i}")
    share = np.mean([r["p_star"] == 0 for r in ref["rows"]])
    assert a.spectrum_adaptive_share_p0 == pytest.approx(share, abs=0)
