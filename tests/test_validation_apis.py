"""Hostile arguments to correlate, pool, correlation_study, train_zoo, layerwise, read_trajectory
and study: each is refused before any work by ``@validate_params`` with the typed error naming
the Python parameter; the CLI prints one ``error:`` line naming the flag and exits 2."""

from __future__ import annotations

import math
import typing
from collections.abc import Callable
from pathlib import Path

import pytest

from specbound import extras
from specbound.errors import SpecboundTypeError, SpecboundValueError
from tests.support.tables import check_each

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


POOL = [("bootstrap", 150, V), ("bootstrap", False, T), ("seed", -3, V), ("level", 0, V),
        ("primary", "P1", V)]  # fmt: skip


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


def test_lr_max_below_lr_min_names_both_parameters():
    from specbound.layerwise import tempbalance_factors

    with pytest.raises(V, match=r"^lr_max must be >= lr_min=2, got 1$"):
        tempbalance_factors([1.0], lr_min=2, lr_max=1)


TRAJECTORY = [("gap_kind", "zz", V), ("gap_kind", 1, T), ("track", "", V), ("track", None, T)]

STUDY = [
    *(("folders", v, k) for v, k in (("", V), (3, T), ([""], V), ([1], T))),
    *(("replicates", v, T) for v in ("abc", 3, [("g", "a")], [(1, ["a", "b"], None)])),
]
#: the start of the message where it is more than the parameter's name
PREFIX = {"replicates": "replicates must be"}


def _calls(out: Path) -> dict[str, tuple[list, Callable[..., object]]]:
    """API -> (its hostile-argument table, a call with one argument replaced)."""
    from specbound.layerwise import layerwise
    from specbound.studies.correlate import correlate
    from specbound.studies.correlate import multizoo as P
    from specbound.studies.correlate.multizoo import study
    from specbound.studies.trajectory import read_trajectory
    from specbound.studies.zoo import train_zoo

    return {
        "correlate": (CORRELATE, lambda **kw: correlate(**{"zoo": NOWHERE, **kw})),
        "pool": (POOL, lambda **kw: P.pool([object()], **kw)),  # before reading any part
        "train_zoo": (ZOO, lambda **kw: train_zoo(**{"task": "digits", "out": out, **kw})),
        "layerwise": (LAYERS, lambda **kw: layerwise(NOWHERE, **{"method": "alphapruning", **kw})),
        "read_trajectory": (TRAJECTORY, lambda **kw: read_trajectory(**{"track": NOWHERE, **kw})),
        "study": (STUDY, lambda **kw: study(**{"folders": ["x"], **kw})),
    }


def test_each_api_refuses_hostile_arguments_by_name(tmp_path):
    """Each hostile argument is refused before any work with the typed error whose message
    starts with the Python parameter's name; nothing is written (train_zoo's out)."""
    out = tmp_path / "zoo"
    calls = _calls(out)

    def check(case: tuple[str, str, object, type]) -> None:
        api, name, value, kind = case
        with pytest.raises(kind) as e:
            calls[api][1](**{name: value})
        assert str(e.value).startswith(PREFIX.get(name, name)), str(e.value)
        assert not out.exists()

    cases = [(api, *row) for api, (table, _) in calls.items() for row in table]
    check_each(cases, check)


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


def test_cli_refuses_with_one_error_line_naming_the_flag(tmp_path):
    from tests.support.cli_runner import run_cli

    out = tmp_path / "out"

    def check(case: tuple[list[str], str]) -> None:
        args, flag = case
        r = run_cli(*args, "--out", out)
        assert r.code == 2, r.err
        assert flag in r.one_error_line()
        assert not out.exists()

    # without the zoo extra, that extra's message is zoo train's first (and only) error
    torch = extras.available("torch")
    check_each([c for c in CLI if torch or c[0][:2] != ["zoo", "train"]], check)


def test_reproduce_study_is_a_choice(tmp_path):
    from tests.support.cli_runner import run_cli

    r = run_cli("reproduce", "nope", "--out", tmp_path / "o")
    assert r.code == 2 and "STUDY" in r.one_error_line() and "bert-miniatures" in r.err
    assert not (tmp_path / "o").exists()
