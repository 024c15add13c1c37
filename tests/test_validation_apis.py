"""Hostile arguments to correlate, pool, correlation_study, train_zoo, layerwise, read_trajectory
and study: each is refused before any work by ``@validate_params`` with the typed error naming
the Python parameter; the CLI prints one ``error:`` line naming the flag and exits 2."""

from __future__ import annotations

import math
import typing

import pytest

from specbound import extras
from specbound.errors import SpecboundTypeError, SpecboundValueError

T, V = SpecboundTypeError, SpecboundValueError
NOWHERE = "/nonexistent/specbound-valid3"

CORRELATE = [
    ("bootstrap", True, T),
    ("bootstrap", 100, V),
    ("bootstrap", 1000.0, T),
    ("bootstrap", 10**6, V),
    ("seed", -1, V),
    ("seed", "1", T),
    ("level", math.nan, V),
    ("level", 1.0, V),
    ("level", math.inf, V),
    ("primary", "bogus", V),
    ("primary", 1, T),
    ("gap", "foo", V),
    ("gap", 3, T),
    ("axes", 3, T),
    ("data_workers", 0, V),
    ("data_workers", True, T),
    ("state_dir", "", V),
    ("cache", 1, T),
    ("include_unconverged", "yes", T),
    ("on_model", "print", T),
    ("zoo", "", V),
    ("zoo", 3, T),
]


@pytest.mark.parametrize(("name", "value", "kind"), CORRELATE)
def test_correlate_refuses_hostile_arguments_by_name(name, value, kind):
    from specbound.studies.correlate import correlate

    kw = {"zoo": NOWHERE, name: value}
    with pytest.raises(kind) as e:
        correlate(**kw)
    assert str(e.value).startswith(name), str(e.value)


POOL = [("bootstrap", 150, V), ("bootstrap", False, T), ("seed", -3, V), ("level", 0, V),
        ("primary", "P1", V)]  # fmt: skip


@pytest.mark.parametrize(("name", "value", "kind"), POOL)
def test_pool_refuses_hostile_arguments_before_reading_parts(name, value, kind):
    from specbound.studies.correlate import multizoo as P

    with pytest.raises(kind) as e:
        P.pool([object()], **{name: value})  # type: ignore[list-item]
    assert str(e.value).startswith(name)


def test_pool_and_correlation_study_accept_zero_draws_correlate_does_not():
    from specbound.studies.correlate import correlate, rules
    from specbound.studies.correlate import multizoo as P

    assert P.pool.parameter_constraints["bootstrap"] is rules.BOOTSTRAP_OR_ZERO
    with pytest.raises(V, match=r"^bootstrap=0 is too few"):
        correlate(NOWHERE, bootstrap=0)


ZOO = [
    ("threads", True, T),
    ("threads", 0, V),
    ("threads", 2.0, T),
    ("ensemble", 0, V),
    ("ensemble", "x", V),
    ("ensemble", 2.5, T),
    ("device", "tpu", V),
    ("device", 1, T),
    ("workers", 0, V),
    ("workers", "2", T),
    ("out", "", V),
    ("task", "", V),
    ("on_model", 3, T),
]


@pytest.mark.parametrize(("name", "value", "kind"), ZOO)
def test_train_zoo_refuses_hostile_arguments_by_name(tmp_path, name, value, kind):
    from specbound.studies.zoo import train_zoo

    kw = {"task": "digits", "out": tmp_path / "zoo", name: value}
    with pytest.raises(kind) as e:
        train_zoo(**kw)
    assert str(e.value).startswith(name), str(e.value)
    assert not (tmp_path / "zoo").exists()


def test_train_zoo_accepts_the_cli_spelling_of_ensemble():
    from specbound.studies.zoo.train import ENSEMBLE
    from specbound.validation import check_param

    assert check_param("4", "ensemble", ENSEMBLE) == 4
    assert check_param("auto", "ensemble", ENSEMBLE) == "auto"


LAYERS = [
    ("method", "prune", V),
    ("granularity", "block", V),
    ("sparsity", 1.0, V),
    ("sparsity", math.nan, V),
    ("epsilon", -0.1, V),
    ("lr_min", 0, V),
    ("lr_max", "1", T),
]


@pytest.mark.parametrize(("name", "value", "kind"), LAYERS)
def test_layerwise_refuses_hostile_arguments_before_analyzing(name, value, kind):
    from specbound.layerwise import layerwise

    kw = {"method": "alphapruning", name: value}
    with pytest.raises(kind) as e:
        layerwise(NOWHERE, **kw)
    assert str(e.value).startswith(name)


def test_lr_max_below_lr_min_names_both_parameters():
    from specbound.layerwise import tempbalance_factors

    with pytest.raises(V, match=r"^lr_max must be >= lr_min=2, got 1$"):
        tempbalance_factors([1.0], lr_min=2, lr_max=1)


TRAJECTORY = [("gap_kind", "zz", V), ("gap_kind", 1, T), ("track", "", V), ("track", None, T)]


@pytest.mark.parametrize(("name", "value", "kind"), TRAJECTORY)
def test_read_trajectory_refuses_hostile_arguments_by_name(name, value, kind):
    from specbound.studies.trajectory import read_trajectory

    kw = {"track": NOWHERE, name: value}
    with pytest.raises(kind) as e:
        read_trajectory(**kw)
    assert str(e.value).startswith(name)


@pytest.mark.parametrize(("value", "kind"), [("", V), (3, T), ([""], V), ([1], T)])
def test_study_refuses_hostile_folders(value, kind):
    from specbound.studies.correlate.multizoo import study

    with pytest.raises(kind, match=r"^folders"):
        study(value)


def test_study_takes_a_bare_path_as_one_folder_not_its_letters(tmp_path):
    from specbound.errors import SpecboundError
    from specbound.studies.correlate.multizoo import study

    with pytest.raises(SpecboundError) as e:
        study(str(tmp_path / "abc"))
    assert "abc" in str(e.value)  # one folder named, not 'a'


def test_cli_choices_are_the_librarys():
    from specbound.cli import options
    from specbound.studies import gap
    from specbound.studies.protocol import PRIMARY_CHOICES

    assert typing.get_args(options.PrimaryChoice) == PRIMARY_CHOICES
    assert typing.get_args(options.GapChoice) == gap.GAP_CHOICES


CLI = [
    (["correlate", NOWHERE, "--bootstrap", "100"], "--bootstrap"),
    (["correlate", NOWHERE, "--seed", "-1"], "--seed"),
    (["correlate", NOWHERE, "--primary", "bogus"], "--primary"),
    (["correlate", NOWHERE, "--gap", "bogus"], "--gap"),
    (["correlate", NOWHERE, "--data-measures", "--data-workers", "0"], "--data-workers"),
    (["trajectory", NOWHERE, "--gap", "zz"], "--gap"),
    (["zoo", "train", "digits", "--threads", "0"], "--threads"),
    (["zoo", "train", "digits", "--ensemble", "x"], "--ensemble"),
    (["zoo", "train", "digits", "--device", "tpu"], "--device"),
    (["zoo", "train", "digits", "--workers", "0"], "--workers"),
]


@pytest.mark.parametrize(("args", "flag"), CLI)
def test_cli_refuses_with_one_error_line_naming_the_flag(tmp_path, args, flag):
    from tests.support.cli_runner import run_cli

    if args[:2] == ["zoo", "train"] and not extras.available("torch"):
        pytest.skip("without the zoo extra, that is the first (and only) error")
    out = tmp_path / "out"
    r = run_cli(*args, "--out", out)
    assert r.code == 2, r.err
    assert flag in r.one_error_line()
    assert not out.exists()


@pytest.mark.parametrize("value", ["abc", 3, [("g", "a")], [(1, ["a", "b"], None)]])
def test_study_refuses_malformed_replicate_groups(value):
    from specbound.studies.correlate.multizoo import study

    with pytest.raises(T, match=r"^replicates must be"):
        study(["x"], value)


def test_reproduce_study_is_a_choice(tmp_path):
    from tests.support.cli_runner import run_cli

    r = run_cli("reproduce", "nope", "--out", tmp_path / "o")
    assert r.code == 2 and "STUDY" in r.one_error_line() and "bert-miniatures" in r.err
    assert not (tmp_path / "o").exists()
