"""The registered statistics (``protocol.statistics``) on one :class:`protocol.sample.Sample`,
against scipy's Kendall tau-b and the sign-error written out pair by pair (SPEC 10)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import kendalltau

from specbound.studies.protocol.sample import Sample
from specbound.studies.protocol.statistics import (
    KENDALL_TAU,
    SIGN_ERROR,
    SIGN_ERROR_AXIS,
    SIGN_ERROR_ROBUST,
)
from specbound.studies.protocol.stats import make_design

AXES = ["depth", "width"]


@pytest.fixture(scope="module")
def sample() -> Sample:
    """A 3 x 3 grid of depth x width, two seeds per configuration."""
    rng = np.random.default_rng(7)
    codes = np.array([(d, w) for d in range(3) for w in range(3) for _seed in range(2)])
    design = make_design(codes)
    mu = rng.normal(size=len(codes))
    g = 0.5 * mu + rng.normal(size=len(codes))
    return Sample(mu, g, codes, design.config, design, AXES, 9)


def _one_axis_pairs(s: Sample, axis: int | None = None):
    """Pairs of models that differ in exactly one axis (that axis, if given), dg != 0."""
    for i, j in itertools.combinations(range(s.size), 2):
        differ = np.flatnonzero(s.codes[i] != s.codes[j])
        if len(differ) == 1 and (axis is None or differ[0] == axis) and s.g[i] != s.g[j]:
            yield i, j


def _sign_error(s: Sample, pairs) -> float:
    errs = [(1 - np.sign(s.mu[i] - s.mu[j]) * np.sign(s.g[i] - s.g[j])) / 2 for i, j in pairs]
    return float(np.mean(errs))


def test_kendall_tau_is_tau_b(sample: Sample) -> None:
    got = KENDALL_TAU.point(sample)["kendall_tau"]
    assert got == pytest.approx(kendalltau(sample.mu, sample.g).statistic, abs=1e-12)


def test_sign_errors_over_one_axis_pairs(sample: Sample) -> None:
    assert SIGN_ERROR.point(sample)["sign_error"] == pytest.approx(
        _sign_error(sample, _one_axis_pairs(sample)), abs=1e-12
    )
    per_axis = SIGN_ERROR_AXIS.point(sample)
    for a, name in enumerate(AXES):
        pairs = list(_one_axis_pairs(sample, a))
        assert per_axis[f"sign_error_{name}_pairs"] == len(pairs) == 9 * 2 * 2
        assert per_axis[f"sign_error_{name}"] == pytest.approx(_sign_error(sample, pairs))
    robust = SIGN_ERROR_ROBUST.point(sample)
    worst = max(AXES, key=lambda n: per_axis[f"sign_error_{n}"])
    assert robust == {
        "sign_error_robust": per_axis[f"sign_error_{worst}"],
        "sign_error_robust_axis": worst,
    }


def test_sample_weights_follow_the_drawn_configurations(sample: Sample) -> None:
    counts = np.zeros((2, 9), dtype=int)
    counts[0, 0], counts[1, 4] = 2, 1
    w = sample.weights(counts)
    assert w.shape == (2, sample.size)
    assert w[0].tolist() == [2, 2] + [0] * 16  # configuration 0: the first two models
    assert w[1].sum() == 2 and (w[1][sample.config == 4] == 1).all()
    assert sample.joint() is sample.joint()  # computed once per sample
