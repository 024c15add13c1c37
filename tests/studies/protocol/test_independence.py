"""Which folders share trained models (studies.protocol.independence): pure, no files.

Each case is a small table of folders written here; what counts is the family the function
builds (which folder joins, which one is secondary to whom, with how many shared models).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from specbound.studies.protocol.independence import Trained, independence, separates


def models(seeds: list[int], depth: list[int] | None = None, **extra: list[float]) -> pd.DataFrame:
    """A models.csv: one model per seed, at depth 2 unless given."""
    names = [f"m{i}" for i in range(len(seeds))]
    cols = {"model": names, "depth": depth or [2] * len(seeds), "seed": seeds}
    return pd.DataFrame({**cols, **extra})


def zoo(seeds: list[int], depth: list[int] | None = None, **kw: Any) -> Trained:
    """A digits folder with axes depth and seed."""
    return Trained("digits", ("depth", "seed"), models(seeds, depth), **kw)


def test_disjoint_seeds_are_all_family() -> None:
    out = independence({"a": zoo([0, 1, 2]), "b": zoo([3, 4, 5])})
    assert out == {"a": None, "b": None}


def test_the_larger_folder_joins_first_and_the_other_is_secondary() -> None:
    # "small" is given first, yet "big" has more models: it joins, "small" shares 2 with it
    out = independence({"small": zoo([0, 1]), "big": zoo([0, 1, 2, 3])})
    assert out == {"small": ("big", 2), "big": None}


def test_a_pooled_folder_comes_after_single_zoos_whatever_its_size() -> None:
    out = independence({"pooled": zoo([0, 1, 2, 3, 4, 5], pooled=True), "a": zoo([0, 1, 2])})
    assert out == {"pooled": ("a", 3), "a": None}


def test_a_replicate_joins_before_a_single_folder_of_its_size() -> None:
    out = independence({"single": zoo([0, 1]), "rep": zoo([1, 2], replicate=True)})
    assert out == {"single": ("rep", 1), "rep": None}


def test_secondary_names_the_member_it_shares_most_with() -> None:
    out = independence(
        {"a": zoo([0, 1, 2, 3, 4]), "b": zoo([10, 11, 12, 13]), "c": zoo([0, 10, 11])}
    )
    assert out["c"] == ("b", 2)


def test_other_task_or_configuration_is_another_model() -> None:
    other_task = Trained(task="parity", axes=("depth", "seed"), models=models([0, 1]))
    assert independence({"a": zoo([0, 1, 2]), "b": other_task}) == {"a": None, "b": None}
    deeper = zoo([0, 1], depth=[4, 4])
    assert independence({"a": zoo([0, 1, 2]), "b": deeper}) == {"a": None, "b": None}


def test_the_training_set_size_tells_models_apart_though_no_axis() -> None:
    a = Trained("digits", ("depth",), models([0, 1], train_size=[100.0, 100.0]))
    b = Trained("digits", ("depth",), models([0, 1], train_size=[200.0, 200.0]))
    c = Trained("digits", ("depth",), models([0, 1], train_size=[100.0, 100.0]))
    assert independence({"a": a, "b": b, "c": c}) == {"a": None, "b": None, "c": ("a", 2)}


def test_a_step_cap_separates_only_where_a_model_reached_it() -> None:
    small = zoo([0, 1], recipe={"max_steps": 500}, most_steps=392.0)
    big = zoo([0, 1, 2], recipe={"max_steps": 1000}, most_steps=327.0)
    assert independence({"big": big, "small": small})["small"] == ("big", 2)
    reached = zoo([0, 1], recipe={"max_steps": 500}, most_steps=500.0)
    assert independence({"big": big, "small": reached})["small"] is None
    unknown = zoo([0, 1], recipe={"max_steps": 500})
    assert independence({"big": big, "small": unknown})["small"] is None
    # a field one side does not record does not tell models apart
    silent = zoo([0, 1])
    assert independence({"big": big, "small": silent})["small"] == ("big", 2)


@pytest.mark.parametrize(
    ("key", "a", "b", "steps_a", "steps_b", "separate"),
    [
        ("max_steps", "500", 1000, 100.0, 200.0, False),  # numeric text compares as a number
        ("max_steps", "many", 1000, 100.0, 200.0, True),  # not a number: assume it mattered
        ("target_loss", 0.01, 0.01, None, None, False),
    ],
)
def test_separates_edge_values(key, a, b, steps_a, steps_b, separate) -> None:
    assert separates(key, a, b, steps_a, steps_b) is separate
