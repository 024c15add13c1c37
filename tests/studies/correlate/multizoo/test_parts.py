"""The pieces of combining zoos, each through its public function: the folder reader and its
checks (``multizoo.folders``), the replicate groups (``multizoo.replicates``), and models.csv's
bound-form columns (``correlate.columns``), recomputed here by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from specbound.errors import SpecboundError, SpecboundTypeError
from specbound.studies.correlate import columns
from specbound.studies.correlate.multizoo import folders, replicates


def test_bound_forms_are_log10_value_minus_half_log10_n():
    table = pd.DataFrame(
        {"train_size": [100, 400, 400], "a": [1.0, 2.0, 3.0], "b": [10.0, 100.0, -1.0]}
    )
    added = columns.add_bound_forms(table, ["a", "b", "c"], {"a": True, "b": False})
    assert added == ["a_per_sqrt_n", "b_per_sqrt_n", "sample_size_only"]
    assert table["a_per_sqrt_n"].tolist() == [1.0 - 1.0, 2.0 - math.log10(20), 3.0 - math.log10(20)]
    assert table["b_per_sqrt_n"].iloc[0] == pytest.approx(1.0 - 1.0)
    assert table["b_per_sqrt_n"].iloc[1] == pytest.approx(2.0 - math.log10(20))
    assert math.isnan(table["b_per_sqrt_n"].iloc[2])  # a non-positive value has no log
    assert table["sample_size_only"].tolist() == [-1.0, -math.log10(20), -math.log10(20)]


def test_no_sample_size_column_when_n_is_constant_and_none_without_n():
    one_n = pd.DataFrame({"train_size": [50, 50], "a": [1.0, 2.0]})
    assert columns.add_bound_forms(one_n, ["a"], {"a": True}) == ["a_per_sqrt_n"]
    assert columns.add_bound_forms(pd.DataFrame({"a": [1.0]}), ["a"], {"a": True}) == []


def test_measure_columns_keep_registry_order_then_custom_then_forms():
    names, forms = columns.measure_registry()
    assert names and set(forms) <= set(names)
    models = pd.DataFrame({"custom": [1.0], names[1]: [2.0], names[0]: [3.0], "gap": [0.1]})
    got = columns.measure_columns(models, listed=[], registry=names, forms={})
    assert got == [names[0], names[1], "custom"]
    assert set(columns.OUTPUT_COLUMNS) <= set(columns.output_columns())


def _folder(path: Path, seeds: list[int]) -> Path:
    path.mkdir()
    (path / "correlate.json").write_text(json.dumps({"axes": ["lr"]}), encoding="utf-8")
    pd.DataFrame({"seed": seeds, "lr": [0.1] * len(seeds)}).to_csv(path / "models.csv")
    return path


def test_result_folder_is_told_apart_and_given_twice_is_refused(tmp_path):
    a = _folder(tmp_path / "a", [0, 1])
    assert folders.is_result_folder(a)
    assert not folders.is_result_folder(tmp_path)
    with pytest.raises(SpecboundError, match="given twice"):
        folders.check_distinct([a, tmp_path / "a" / ".." / "a"])
    folders.check_distinct([a, tmp_path / "b"])  # distinct: no error


def test_zoo_dir_is_found_beside_the_manifest_and_none_for_a_pooled_folder(tmp_path):
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    (zoo / "zoo.json").write_text("{}", encoding="utf-8")
    out = tmp_path / "results" / "x"
    out.mkdir(parents=True)
    assert folders.zoo_dir(out, str(zoo.relative_to(tmp_path) / "zoo.csv")) == tmp_path / "zoo"
    assert folders.zoo_dir(out, "a + b") is None
    assert folders.zoo_dir(out, None) is None


def test_replicate_groups_are_parsed_and_malformed_ones_refused_by_name():
    got = replicates.groups_of([("g", ["a", "b"], None)], "replicates")
    assert got == [("g", ["a", "b"], None)]
    for bad in ("abc", 3, [("g", "a")]):
        with pytest.raises(SpecboundTypeError, match=r"^replicates must be"):
            replicates.groups_of(bad, "replicates")
    assert replicates.seeds(pd.DataFrame({"seed": [3, 1, None]})) == {"3.0", "1.0"}
    assert replicates.seeds(pd.DataFrame({"x": [1]})) == set()
