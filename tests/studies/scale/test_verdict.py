"""The growth verdict on synthetic fits: different, indistinguishable, interacting, missing SE."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specbound.studies.scale.verdict import (
    FASTER,
    SAME,
    SLOWER,
    UNKNOWN,
    compare_slopes,
    growth_verdict,
    inconsistent_pairs,
)

NAN = math.nan


def _row(proxy: str, axis: str, fit: str, z: int | None, b: float, se: float, n: int = 30) -> dict:
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


def test_issue_example_is_not_shown_to_differ() -> None:
    # 0.086 +- 0.024 vs 0.080 +- 0.048: |diff| = 0.006 << 2 * sqrt(0.024^2 + 0.048^2) = 0.107
    assert compare_slopes(0.086, 0.024, 0.080, 0.048) == SAME
    v = growth_verdict(_table("num_layers", ((0.086, 0.024), (0.080, 0.048))), "num_layers")
    assert v is not None and v.word == SAME
    assert "not shown to differ on this grid" in v.sentence
    assert "0.086 ± 0.024 (SE) (spectrum-adaptive) vs 0.08 ± 0.048 (SE)" in v.sentence
    assert "indistinguishable" not in v.sentence
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


@pytest.mark.parametrize(("se1", "se2"), [(NAN, 0.1), (0.1, NAN), (None, 0.1), (math.inf, 0.1)])
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


# --- the study's answer: degrees of freedom, two points per line, ceiling, wording ---------


def _study(layers=(2, 4, 6), hiddens=(64, 128, 256), sa_follows_ceiling=True):
    """A synthetic scaling study fitted by the real ``growth_table``: B_ceiling = 10 L N,
    spectrum_adaptive at the ceiling (or below it by a gap growing with N), norm_based ~ N^3,
    log_spectral_product negative, htsr_alpha_weighted negative on some models."""
    from specbound.studies.scale import Study, growth_table

    rows = []
    for i, L in enumerate(layers):
        for j, N in enumerate(hiddens):
            wiggle = 0.01 * ((3 * i + 5 * j) % 7 - 3)  # deterministic residuals
            ceiling = math.log10(10 * L * N)
            gap = 0.0 if sa_follows_ceiling else 0.4 * math.log10(N / 64) + 0.1 + wiggle
            rows.append(
                {
                    "model": f"L{L}_N{N}",
                    "num_layers": L,
                    "hidden_size": N,
                    "spectrum_adaptive": ceiling - gap,
                    "norm_based": 3 * math.log10(N) + 0.5 * L + wiggle,
                    "log_spectral_product": -2.0 + 0.3 * math.log10(N) + wiggle,
                    "htsr_alpha_weighted": wiggle,
                    "spectrum_adaptive_share_p0": 1.0 if gap == 0 else 0.5,
                    "spectrum_adaptive_ceiling_gap": gap,
                    "log10_spectrum_adaptive_ceiling": ceiling,
                }
            )
    models = pd.DataFrame(rows)
    return Study(models, growth_table(models))


def test_no_significance_without_residual_degrees_of_freedom() -> None:
    # 7 combined standard errors apart: different with many residual degrees of freedom ...
    t = _table("hidden_size", ((0.5, 0.05), (1.0, 0.05)))
    t["resid_df"] = 30
    assert growth_verdict(t, "hidden_size").word == SLOWER
    # ... but with one residual degree of freedom t_0.975 = 12.7: not established
    t["resid_df"] = 1
    v = growth_verdict(t, "hidden_size")
    assert v.word == SAME and "7.1 combined standard errors apart (threshold 12.7)" in v.sentence
    assert "more slowly" not in v.sentence
    # and none at all: no standard error, undetermined, never "beyond"
    t["resid_df"] = 0
    t["exponent_se"] = NAN
    v = growth_verdict(t, "hidden_size")
    assert v.word == UNKNOWN and "beyond" not in v.sentence
    assert "no residual degrees of freedom" in v.sentence


def test_critical_value_table() -> None:
    from specbound.studies.scale.verdict import critical_value

    assert critical_value(1) == pytest.approx(12.706)
    assert critical_value(2) == pytest.approx(4.303)
    assert critical_value(1000) == 2.0 and critical_value(None) == 2.0
    assert critical_value(0) == math.inf


def test_two_points_per_line_is_said() -> None:
    s = _study(hiddens=(64, 128))
    v = growth_verdict(s.growth, "hidden_size")
    assert v is not None
    assert "rests on two points (two values of N)" in v.sentence
    assert "no standard error of its own" in v.sentence
    assert "2 residual degrees of freedom" in v.sentence  # 6 points - slope - 3 intercepts
    assert v.caveats and v.caveats[0] in v.sentence
    three = growth_verdict(_study().growth, "hidden_size")
    assert three is not None and three.caveats == [] and "two points" not in three.sentence


def test_slower_growth_is_the_ceilings_growth() -> None:
    from specbound.studies.scale.verdict import ceiling_verdict, study_verdict

    s = _study()
    assert growth_verdict(s.growth, "hidden_size").word == SLOWER
    text = ceiling_verdict(s.models, s.growth, "hidden_size")
    assert text.startswith(
        "The spectrum-adaptive proxy's slower growth with N is not shown to differ from its rank "
        "ceiling's growth"
    )
    assert "consistent with a proxy that follows the matrix ranks" in text
    assert "(exponent 1 ± " in text and "(spectrum-adaptive) vs 1 ± " in text
    assert "(its rank ceiling sum sqrt(r N) + sqrt(L)); within" in text
    lines = study_verdict(s)
    assert text in lines
    assert "All 9 models sit at the rank ceiling" in " ".join(lines)
    # below the ceiling by a gap that grows with N: not the ceiling's growth
    s2 = _study(sa_follows_ceiling=False)
    text2 = ceiling_verdict(s2.models, s2.growth, "hidden_size")
    assert "grows more slowly with N than its rank ceiling" in text2
    assert "No model sits at the rank ceiling" in " ".join(study_verdict(s2))


def test_negative_measure_gets_no_exponent_wording_and_no_fit_is_explained() -> None:
    from specbound.studies.scale.notes import exponent_allowed, measure_notes

    s = _study()
    assert not exponent_allowed(s.models, "log_spectral_product")
    assert exponent_allowed(s.models, "norm_based")
    notes = measure_notes(s.models, s.growth)
    (neg,) = [n for n in notes if n.startswith("log_spectral_product")]
    assert "negative on 9 of 9 models" in neg and "not growth exponents" in neg
    (nofit,) = [n for n in notes if n.startswith("htsr_alpha_weighted")]
    assert "has no growth fit: not positive on" in nofit and "(no log to fit)" in nofit
    assert "htsr_alpha_weighted" not in set(s.growth.measure)
    assert not any(n.startswith(("norm_based", "spectrum_adaptive")) for n in notes)


def test_dominance_in_every_model_is_said() -> None:
    from specbound.studies.scale.notes import dominance_note

    s = _study()
    assert dominance_note(s.models) is None  # norm_based is larger here
    m = s.models.copy()
    m["norm_based"] = m["spectrum_adaptive"] - 0.5
    assert dominance_note(m) == (
        "The spectrum-adaptive proxy exceeds the norm-based one in every model (9 of 9): on "
        "these models it is the larger (looser) of the two."
    )
    m.loc[0, "norm_based"] = 100.0
    assert dominance_note(m) is None
