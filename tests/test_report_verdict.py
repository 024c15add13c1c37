"""The growth verdict on synthetic fits: different, indistinguishable, interacting, missing SE."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specbound.verdict import (
    FASTER,
    SAME,
    SLOWER,
    UNKNOWN,
    compare_slopes,
    growth_verdict,
    inconsistent_pairs,
)

NAN = math.nan


def _row(proxy: str, axis: str, fit: str, z: int | None, b: float, se: float, n: int = 3) -> dict:
    slope = "exponent" if axis == "hidden_size" else "log10_per_unit"
    other = "exponent" if slope == "log10_per_unit" else "log10_per_unit"
    return {
        "proxy": proxy,
        "axis": axis,
        "fixed_axis": "x",
        "fixed_value": z,
        "fit": fit,
        slope: b,
        f"{slope}_se": se,
        other: 0.0,
        f"{other}_se": 0.0,
        "n_points": n,
    }


def _table(
    axis: str,
    pooled: tuple[tuple[float, float], tuple[float, float]],
    per: dict[int, tuple[tuple[float, float], tuple[float, float]]] | None = None,
) -> pd.DataFrame:
    rows = []
    for i, proxy in enumerate(("spectrum_adaptive", "norm_based")):
        rows.append(_row(proxy, axis, "pooled", None, *pooled[i], n=9))
        for z, fits in (per or {}).items():
            rows.append(_row(proxy, axis, "per_fixed", z, *fits[i]))
    return pd.DataFrame(rows)


def test_issue_example_is_indistinguishable() -> None:
    # 0.086 +- 0.024 vs 0.080 +- 0.048: |diff| = 0.006 << 2 * sqrt(0.024^2 + 0.048^2) = 0.107
    assert compare_slopes(0.086, 0.024, 0.080, 0.048) == SAME
    v = growth_verdict(_table("num_layers", ((0.086, 0.024), (0.080, 0.048))), "num_layers")
    assert v is not None and v.word == SAME
    assert "indistinguishable on this grid" in v.sentence
    assert "faster" not in v.sentence and "more slowly" not in v.sentence


def test_clearly_different_both_directions() -> None:
    v = growth_verdict(_table("hidden_size", ((0.2, 0.01), (1.5, 0.05))), "hidden_size")
    assert v is not None and v.word == SLOWER and "grows more slowly with N" in v.sentence
    v = growth_verdict(_table("num_layers", ((1.5, 0.05), (0.2, 0.01))), "num_layers")
    assert v is not None and v.word == FASTER and "grows faster with L" in v.sentence
    assert v.interaction == []


def test_threshold_is_two_combined_standard_errors() -> None:
    se1, se2 = 0.3, 0.4  # combined SE 0.5, margin 1.0
    assert compare_slopes(0.0, se1, 0.99, se2) == SAME
    assert compare_slopes(0.0, se1, 1.01, se2) == SLOWER
    assert compare_slopes(1.01, se1, 0.0, se2) == FASTER
    assert compare_slopes(0.0, se1, 1.01, se2, k=3.0) == SAME


@pytest.mark.parametrize("se1,se2", [(NAN, 0.1), (0.1, NAN), (None, 0.1), (math.inf, 0.1)])
def test_missing_se_is_undetermined(se1: float | None, se2: float | None) -> None:
    assert compare_slopes(0.0, se1, 10.0, se2) == UNKNOWN
    t = _table("hidden_size", ((0.0, NAN), (10.0, 0.1)))
    v = growth_verdict(t, "hidden_size")
    assert v is not None and v.word == UNKNOWN
    assert "cannot tell" in v.sentence and "no SE" in v.sentence


def test_interaction_flip_is_reported() -> None:
    # pooled says "indistinguishable", but at L=2 SA is clearly slower and at L=12 clearly faster
    per = {2: ((0.1, 0.01), (1.0, 0.01)), 12: ((1.0, 0.01), (0.1, 0.01))}
    v = growth_verdict(_table("hidden_size", ((0.55, 0.3), (0.55, 0.3)), per), "hidden_size")
    assert v is not None and v.word == SAME
    assert v.per_fixed == {2: SLOWER, 12: FASTER}
    text = " ".join(v.interaction)
    assert "flips with L" in text and "L = 2" in text and "L = 12" in text
    # and each proxy's per-fixed slopes are inconsistent with each other
    assert "spectrum-adaptive slope against N differs across L" in text
    assert "norm-based slope against N differs across L" in text


def test_consistent_per_fixed_slopes_raise_no_interaction() -> None:
    per = {
        2: ((0.50, 0.05), (1.0, 0.05)),
        4: ((0.55, 0.05), (1.05, 0.05)),
        6: ((0.52, 0.05), (0.98, 0.05)),
    }
    v = growth_verdict(_table("num_layers", ((0.52, 0.03), (1.01, 0.03)), per), "num_layers")
    assert v is not None and v.word == SLOWER and v.interaction == []
    assert set(v.per_fixed.values()) == {SLOWER}


def test_per_fixed_without_se_cannot_show_interaction() -> None:
    per = {2: ((0.1, NAN), (1.0, NAN)), 4: ((5.0, NAN), (0.2, NAN))}
    v = growth_verdict(_table("num_layers", ((0.5, 0.1), (0.6, 0.1)), per), "num_layers")
    assert v is not None and v.interaction == []
    assert set(v.per_fixed.values()) == {UNKNOWN}


def test_no_pooled_fit_gives_none_and_measure_column_is_accepted() -> None:
    t = _table("num_layers", ((0.2, 0.01), (1.5, 0.05)))
    assert growth_verdict(t, "hidden_size") is None
    t2 = t.rename(columns={"proxy": "measure"})
    v = growth_verdict(t2, "num_layers")
    assert v is not None and v.word == SLOWER


def test_inconsistent_pairs_brute_force() -> None:
    rng = np.random.default_rng(7)
    fits = [(z, float(rng.normal()), float(rng.uniform(0.05, 0.5))) for z in range(6)]
    expected = [
        (fits[i][0], fits[j][0])
        for i in range(6)
        for j in range(i + 1, 6)
        if abs(fits[i][1] - fits[j][1]) > 2 * math.sqrt(fits[i][2] ** 2 + fits[j][2] ** 2)
    ]
    assert inconsistent_pairs(fits) == expected


@given(st.floats(-1e6, 1e6), st.floats(0, 1e3), st.floats(-1e6, 1e6), st.floats(0, 1e3))
def test_compare_is_antisymmetric(b1: float, s1: float, b2: float, s2: float) -> None:
    w, w2 = compare_slopes(b1, s1, b2, s2), compare_slopes(b2, s2, b1, s1)
    swap = {SLOWER: FASTER, FASTER: SLOWER, SAME: SAME}
    assert w2 == swap[w]
    if w != SAME:
        assert abs(b1 - b2) > 2 * math.sqrt(s1**2 + s2**2)
