"""Protocol v5's pre-registered answer (SPEC 10): each branch by a table of cases, checked in
SPEC's order, and the pooled figures by hand."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from specbound.studies.protocol.adaptivity import ANSWERS, Row, Zoo, answer, pooled

Z2, Z1 = NormalDist().inv_cdf(0.975), NormalDist().inv_cdf(0.95)


def zoo(
    name,
    d0,
    a1=(0.0, -0.01, 0.01),
    a3=(0.0, -0.01, 0.01),
    shares=(0.2, 0.3),
    verdict="undetermined",
    stable=True,
):
    rows = {
        "D0": Row(*d0, verdict=verdict, stable=stable),
        "A1": Row(*a1),
        "A3": Row(*a3),
    }
    return Zoo(name, rows, shares)


CASES = [
    # rule 1a: no cell switches in either zoo, whatever the deltas (even a "better" D0)
    (
        "inert by shares",
        zoo("a", (0.3, 0.2, 0.4), shares=(0.0, 0.04), verdict="better"),
        zoo("b", (0.3, 0.2, 0.4), shares=(0.01,), verdict="better"),
        1,
    ),
    # one cell of one zoo at 5%: not inert by shares; D0 pooled interval wide: not inert
    (
        "5% is not below 5%",
        zoo("a", (0.1, -0.1, 0.3), shares=(0.0, 0.05)),
        zoo("b", (0.1, -0.1, 0.3), shares=(0.0,)),
        4,
    ),
    # rule 1b: pooled D0 interval inside [-0.02, 0.02]
    ("inert by equivalence", zoo("a", (0.005, -0.01, 0.02)), zoo("b", (0.0, -0.015, 0.015)), 1),
    # rule 2: D0 better and stable in each zoo
    (
        "helps",
        zoo("a", (0.08, 0.03, 0.13), verdict="better"),
        zoo("b", (0.07, 0.02, 0.12), verdict="better"),
        2,
    ),
    # better in both but unstable in one: not rule 2; upper bounds >= 0.05: not shown
    (
        "unstable",
        zoo("a", (0.08, 0.03, 0.13), verdict="better"),
        zoo("b", (0.07, 0.02, 0.12), verdict="better", stable=False),
        4,
    ),
    # better in one zoo only
    ("one zoo", zoo("a", (0.08, 0.03, 0.13), verdict="better"), zoo("b", (0.07, -0.02, 0.16)), 4),
    # rule 3: every pooled one-sided upper bound below 0.05
    (
        "no advantage",
        zoo("a", (0.0, -0.04, 0.04), (-0.02, -0.05, 0.01), (0.01, -0.02, 0.04)),
        zoo("b", (0.01, -0.03, 0.05), (-0.01, -0.04, 0.02), (0.0, -0.03, 0.03)),
        3,
    ),
    # A3's upper bound too high: not shown
    (
        "A3 high",
        zoo("a", (0.0, -0.04, 0.04), a3=(0.05, 0.0, 0.1)),
        zoo("b", (0.01, -0.03, 0.05), a3=(0.04, -0.01, 0.09)),
        4,
    ),
    # no shares and a missing D0: nothing is shown
    ("missing", Zoo("a", {}), Zoo("b", {}), 4),
]


@pytest.mark.parametrize(("label", "a", "b", "rule"), CASES, ids=[c[0] for c in CASES])
def test_each_branch(label, a, b, rule):
    out = answer(a, b)
    assert out["rule"] == rule
    assert out["answer"] == ANSWERS[rule - 1]
    assert out["statement"].lower().startswith(ANSWERS[rule - 1])
    assert out["zoos"] == [a.name, b.name]


def test_the_answers_are_spec_words_in_order():
    assert ANSWERS == (
        "adaptivity is inert here",
        "adaptivity helps",
        "no meaningful advantage",
        "not shown",
    )


def test_pooled_by_hand():
    a, b = Row(0.10, 0.02, 0.18), Row(0.04, -0.06, 0.14)
    p = pooled(a, b)
    se = math.sqrt((0.16 / (2 * Z2)) ** 2 + (0.20 / (2 * Z2)) ** 2) / 2
    assert p.delta == pytest.approx(0.07, abs=1e-15)
    assert p.low == pytest.approx(0.07 - Z2 * se, abs=1e-15)
    assert p.high == pytest.approx(0.07 + Z2 * se, abs=1e-15)
    assert p.upper == pytest.approx(0.07 + Z1 * se, abs=1e-15)
    assert math.isnan(pooled(a, None).delta)
    assert math.isnan(pooled(a, Row(math.nan, 0.0, 1.0)).upper)


def test_shares_and_pooled_figures_are_reported():
    out = answer(zoo("a", (0.0, -0.04, 0.04), shares=(0.1, 0.2)), zoo("b", (0.0, -0.04, 0.04)))
    assert out["switching"]["a"]["max_cell_share"] == 0.2
    assert set(out["pooled"]) == {"D0", "A1", "A3"}
    assert "D0 (spectrum_adaptive - spectrum_adaptive_modal)" in out["statement"]
