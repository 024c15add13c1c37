"""The generalization gap (SPEC 10): which columns a kind takes, its sign, its label, and the
rows whose gap is missing."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from specbound.errors import SpecboundError, SpecboundTypeError, SpecboundValueError
from specbound.studies.gap import default_kind, gap_values, normalize_kind, resolve_gap


def test_spellings_normalise_to_three_kinds() -> None:
    assert [normalize_kind(k) for k in (None, "auto", "ACC", " accuracy ", "Loss")] == [
        "auto",
        "auto",
        "accuracy",
        "accuracy",
        "loss",
    ]
    with pytest.raises(SpecboundValueError, match=r"^gap_kind must be one of"):
        normalize_kind("error", "gap_kind")
    with pytest.raises(SpecboundTypeError, match=r"got 1 \(int\)"):
        normalize_kind(1)  # type: ignore[arg-type]


def test_accuracy_gap_is_train_minus_test_and_loss_gap_test_minus_train() -> None:
    table = pd.DataFrame(
        {
            "train_acc": [1.0, 0.9, "n/a", 1e308],
            "test_acc": [0.75, 0.95, 0.5, -1e308],
            "train_loss": [0.1, 0.2, 0.3, 0.4],
            "test_loss": [0.5, 0.1, np.nan, 0.4],
        }
    )
    acc = gap_values(table, "acc")
    assert acc[:2].tolist() == [0.25, 0.9 - 0.95]
    assert math.isnan(acc[2])  # not a number: missing, not an error
    assert math.isnan(acc[3])  # the difference of two finite accuracies overflows float64
    loss = gap_values(table, "loss")
    assert loss[0] == pytest.approx(0.4) and loss[1] == pytest.approx(-0.1)
    assert math.isnan(loss[2]) and loss[3] == 0.0
    with pytest.raises(SpecboundError, match="auto"):
        gap_values(table, "auto")
    with pytest.raises(SpecboundError, match="lacks test_loss"):
        gap_values(table.drop(columns="test_loss"), "loss")


def test_auto_prefers_accuracy_then_the_first_pair_present() -> None:
    g = resolve_gap(["train_loss", "val_loss", "train_accuracy", "eval_accuracy"])
    assert g is not None and (g.kind, g.train, g.test) == (
        "accuracy",
        "train_accuracy",
        "eval_accuracy",
    )
    assert g.label == "gap = train_accuracy - eval_accuracy"
    g = resolve_gap(["train_loss", "val_loss", "test_loss"], "auto")
    assert g is not None and (g.kind, g.test) == ("loss", "test_loss")  # test_loss pair first
    assert g.label == "gap = test_loss - train_loss"
    np.testing.assert_array_equal(
        g.values({"train_loss": [1.0, 2.0], "test_loss": [3.0, 2.5]}), [2.0, 0.5]
    )
    assert resolve_gap(["step"], strict=False) is None
    with pytest.raises(SpecboundError, match="neither train_acc and test_acc"):
        resolve_gap(["step"])
    with pytest.raises(SpecboundError, match="lacks test_acc"):
        resolve_gap(["train_acc", "test_loss", "train_loss"], "accuracy")


def test_default_kind_follows_the_columns() -> None:
    assert default_kind(["train_acc", "test_acc", "train_loss", "test_loss"]) == "accuracy"
    assert default_kind(["train_loss", "test_loss", "train_acc"]) == "loss"
    assert default_kind(["model"]) == "accuracy"  # its absence is reported by gap_values
