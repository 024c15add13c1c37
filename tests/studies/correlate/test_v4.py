"""SPEC 10 protocol v4: tau_arch against scipy per cell on a hand table, the Monte Carlo error of
the Holm figure and the seed-stability rule on hand values, the choice of the primary family."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import kendalltau

from specbound.studies.protocol import arch as A
from specbound.studies.protocol import families as F
from specbound.studies.protocol import verdicts as V


def _cells(keys: list[tuple[int, int]]) -> list[np.ndarray]:
    """Index arrays of equal keys, by hand (no package code)."""
    out: dict[tuple[int, int], list[int]] = {}
    for i, k in enumerate(keys):
        out.setdefault(k, []).append(i)
    return [np.array(v) for v in out.values()]


def test_tau_arch_is_the_mean_of_scipy_tau_b_over_cells():
    # cell (1, 8): 4 models, a tie in mu; cell (2, 8): 3 models; cell (1, 16): the measure is
    # constant (at the ceiling); cell (2, 16): 2 models (too few, not counted anywhere)
    keys = [(1, 8)] * 4 + [(2, 8)] * 3 + [(1, 16)] * 3 + [(2, 16)] * 2
    mu = np.array([1.0, 2.0, 2.0, 4.0, 3.0, 1.0, 2.0, 5.0, 5.0, 5.0, 1.0, 2.0])
    g = np.array([0.1, 0.3, 0.2, 0.4, 0.2, 0.3, 0.1, 0.1, 0.2, 0.3, 0.2, 0.1])
    cells = _cells(keys)
    want = [kendalltau(mu[c], g[c]).statistic for c in cells if c.size >= 3]
    want = [t for t in want if not math.isnan(t)]
    assert len(want) == 2
    got = A.tau_arch(mu, g, cells, np.arange(mu.size), np.ones((1, mu.size)))
    assert got.tau_arch[0] == pytest.approx(sum(want) / 2, abs=1e-12)
    assert (got.cells_used, got.cells_at_ceiling) == (2, 1)


def test_cell_resample_keeps_every_cell_size():
    cell_of_config = np.array([0, 0, 1, 1, 1])
    counts = A.cell_config_counts(cell_of_config, 500, seed=7)
    assert counts.shape == (500, 5)
    np.testing.assert_array_equal(counts[:, :2].sum(axis=1), 2)
    np.testing.assert_array_equal(counts[:, 2:].sum(axis=1), 3)
    # every configuration is drawn somewhere, so the draws differ from the data
    assert (counts != 1).any(axis=1).mean() > 0.5


def test_holm_mc_error_is_that_of_the_attaining_row():
    # sorted 0.01, 0.02, 0.03 times 3, 2, 1 = 0.03, 0.04, 0.03 -> running max 0.03, 0.04, 0.04:
    # the 0.03 row's Holm figure 0.04 is the 0.02 row's 2 x 0.02, so its error is 2 x that of 0.02
    p, b = [0.01, 0.03, 0.02], 2500
    e1, e2 = 3 * math.sqrt(0.01 * 0.99 / b), 2 * math.sqrt(0.02 * 0.98 / b)
    assert V.holm(p) == pytest.approx([0.03, 0.04, 0.04], abs=1e-15)
    assert V.holm_mc_errors(p, b) == pytest.approx([e1, e2, e2], abs=1e-15)
    # 2 x 0.0056 = 0.0112 >= |0.04 - 0.05|: borderline; the v3 error (0.04 / 0.03 scaling the
    # 0.03 row's own error, 0.00455) would have called it "better"
    kw = dict(estimate=0.2, low=0.1, high=0.3, p_adj=0.04, B=b, n_configurations=20)
    assert V.verdict(**kw, statistic="kendall_tau", p=0.03, mc=e2) == V.BORDERLINE
    assert V.verdict(**kw, statistic="kendall_tau", p=0.03) == "better"
    # a figure capped at 1 cannot move: no error
    assert V.holm_mc_errors([0.6, 0.7], 1000) == pytest.approx([0.0, 0.0], abs=0)


def test_a_verdict_must_survive_every_seed():
    words = [["better", "worse", "undetermined"], ["better", "undetermined", "undetermined"]]
    assert V.stable_verdicts(words) == (
        ["better", V.BORDERLINE, "undetermined"],
        [True, False, True],
    )
    assert V.stable_verdicts([]) == ([], [])


def test_over_seeds_adjusts_each_seed_on_its_own():
    # seed 0: 0.01, 0.02 -> Holm 0.02, 0.02; seed 1: 0.01, 0.04 -> Holm 0.02, 0.04
    seen: list[tuple[int, int, float, float]] = []

    def word(s: int, k: int, p: float, p_holm: float, mc: float) -> str:
        seen.append((s, k, p, p_holm))
        assert mc > 0
        return "better" if p_holm < 0.03 else "undetermined"

    first, runs = V.over_seeds([[0.01, 0.02], [0.01, 0.04]], [1000.0, 1000.0], word)
    assert first == pytest.approx([0.02, 0.02], abs=1e-15)
    assert runs == [["better", "better"], ["better", "undetermined"]]
    assert [(s, k) for s, k, _, _ in seen] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert seen[3][3] == pytest.approx(0.04, abs=1e-15)
    assert (
        V.seeds_differ(runs, 1) == "verdict differs between bootstrap seeds: better, undetermined"
    )


def test_designed_for_arch_rule():
    assert F.designed_for_arch(n_sizes=1, cells_ok=2)
    assert F.designed_for_arch(n_sizes=0, cells_ok=9)
    assert not F.designed_for_arch(n_sizes=2, cells_ok=9)  # n varies: tau_fixed_n's zoo
    assert not F.designed_for_arch(n_sizes=1, cells_ok=1)
    assert [c[0] for c in F.primary_contrasts(F.TAU_ARCH)] == ["A1", "A2", "A3"]
    assert [c[0] for c in F.primary_contrasts("tau_fixed_n")] == ["P1", "P2", "P3"]


def _arch_zoo(depth: bool = True):
    """Fixed n, 2 x 2 cells of depth x width, each with lr x wd = 4 configurations x 2 seeds."""
    import pandas as pd

    rng = np.random.default_rng(11)
    rows = []
    for d in (1, 2):
        for w in (8, 16):
            for lr in (1e-3, 3e-3):
                for wd in (0.0, 0.1):
                    for seed in (0, 1):
                        gap = 0.1 * d + 5 * lr + 0.02 * rng.standard_normal()
                        rows.append((d, w, lr, wd, seed, 200, gap))
    df = pd.DataFrame(rows, columns=["depth", "width", "lr", "wd", "seed", "train_size", "gap"])
    for m in ("spectrum_adaptive", "norm_based", "log_spectral_product", "distance_from_init"):
        df[m] = df["gap"] + 0.05 * rng.standard_normal(len(df))
    df["num_parameters"] = df["depth"] * df["width"] ** 2
    return df if depth else df.drop(columns="depth")


def test_primary_choice_selects_the_family():
    from specbound.errors import SpecboundError
    from specbound.studies.correlate import table as T

    df = _arch_zoo()
    measures = ["spectrum_adaptive", "norm_based", "log_spectral_product", "distance_from_init"]
    measures.append("num_parameters")
    axes = ["depth", "width", "lr", "wd"]
    auto = T.correlation_study(df, measures, axes, bootstrap=200)
    assert auto.primary_statistic == F.TAU_ARCH
    prim = auto.differences[auto.differences["family"] == "primary"]
    assert list(prim["contrast"]) == ["A1", "A2", "A3"]
    assert set(prim["verdict_stable"]) <= {"yes", "no"}
    assert all(len(s.split(";")) == V.SEEDS for s in prim["p_seeds"])
    corr = auto.correlation.set_index("measure")
    assert corr.loc["spectrum_adaptive", "tau_arch_cells"] == 4
    # num_parameters is constant inside each cell: no tau_arch, every cell at the ceiling
    assert math.isnan(corr.loc["num_parameters", "tau_arch"])
    assert corr.loc["num_parameters", "tau_arch_ceiling"] == 4
    std = T.correlation_study(df, measures, axes, bootstrap=200, primary="standard")
    prim = std.differences[std.differences["family"] == "primary"]
    assert list(prim["contrast"]) == ["P1", "P2", "P3"]
    with pytest.raises(SpecboundError, match="primary arch needs depth and width"):
        T.correlation_study(_arch_zoo(False), measures, axes[1:], bootstrap=200, primary="arch")
    with pytest.raises(SpecboundError, match="primary"):
        T.correlation_study(df, measures, axes, bootstrap=200, primary="fancy")


def test_ceiling_marks_and_architecture_stripes_are_decided_in_studies() -> None:
    """The correlate scatter's judgements come from studies: a model is at the rank ceiling
    below CEILING_THRESHOLD (an undefined gap is not), and a measure the depth x width cells
    explain to at least STRIPES forms stripes; one with noise inside the cells does not."""
    import pandas as pd

    from specbound.studies.correlate.ceiling import (
        CEILING_THRESHOLD,
        STRIPES,
        at_ceiling,
        stripes_share,
    )

    models = pd.DataFrame(
        {
            "depth": [1, 1, 2, 2],
            "width": [8, 8, 8, 8],
            "spectrum_adaptive_ceiling_gap": [0.0, CEILING_THRESHOLD, None, 0.5],
            "by_cell": [1.0, 1.0, 5.0, 5.0],
            "noisy": [1.0, 5.0, 1.0, 5.0],
        }
    )
    mask = at_ceiling(models)
    assert mask is not None and mask.tolist() == [True, False, False, False]
    assert at_ceiling(models.drop(columns="spectrum_adaptive_ceiling_gap")) is None
    share = stripes_share(models, "by_cell")
    assert share is not None and share >= STRIPES
    assert stripes_share(models, "noisy") is None
    assert stripes_share(models.drop(columns=["depth", "width"]), "by_cell") is None
