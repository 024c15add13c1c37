"""specbound.validation: one behaviour for every integer / real / choice argument."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specbound.errors import SpecboundError, SpecboundTypeError, SpecboundValueError
from specbound.validation import (
    Boolean,
    Interval,
    Names,
    Options,
    PathLike,
    check_bool,
    check_choice,
    check_int,
    check_param,
    check_real,
    validate_fields,
    validate_params,
)


@pytest.mark.parametrize("v", [3, np.int64(3), np.int32(3), np.uint8(3), np.int8(3)])
def test_int_accepts_python_and_numpy_ints(v: object) -> None:
    out = check_int(v, "n", min=0, max=10)
    assert out == 3 and type(out) is int


@pytest.mark.parametrize(
    "v", [True, False, np.bool_(True), 3.0, np.float64(3.0), "3", None, 3 + 0j, [3]]
)
def test_int_refuses_other_types(v: object) -> None:
    with pytest.raises(SpecboundTypeError) as e:
        check_int(v, "threads")
    msg = str(e.value)
    assert msg.startswith("threads must be an integer, got ") and repr(v) in msg
    assert isinstance(e.value, TypeError) and isinstance(e.value, SpecboundError)
    assert "\n" not in msg


@pytest.mark.parametrize("v", [True, False, np.bool_(True), np.bool_(False)])
def test_bool_accepts_python_and_numpy_bools(v: object) -> None:
    out = check_bool(v, "quiet")
    assert out is bool(v)


@pytest.mark.parametrize("v", [0, 1, np.int64(1), 1.0, "yes", "True", None, [True]])
def test_bool_refuses_other_types(v: object) -> None:
    with pytest.raises(SpecboundTypeError) as e:
        check_bool(v, "quiet")
    msg = str(e.value)
    assert msg.startswith("quiet must be True or False, got ") and repr(v) in msg
    assert isinstance(e.value, TypeError) and "\n" not in msg


def test_int_bounds_inclusive() -> None:
    assert check_int(1, "n", min=1) == 1 and check_int(5, "n", max=5) == 5
    with pytest.raises(SpecboundValueError, match=r"^seed must be an integer >= 0, got -1$"):
        check_int(-1, "seed", min=0)
    with pytest.raises(SpecboundValueError, match=r"^n must be an integer <= 5, got 6$"):
        check_int(np.int64(6), "n", max=5)
    big = 10**30  # Python ints beyond int64 are compared exactly
    with pytest.raises(SpecboundValueError):
        check_int(big, "n", max=2**63 - 1)
    with pytest.raises(SpecboundValueError) as e:
        check_int(0, "n", min=1)
    assert isinstance(e.value, ValueError) and not isinstance(e.value, TypeError)


@pytest.mark.parametrize("v", [1.5, 2, np.float32(1.5), np.float64(-0.25), np.int64(7)])
def test_real_accepts_reals(v: object) -> None:
    out = check_real(v, "x")
    assert out == float(v) and type(out) is float


@pytest.mark.parametrize("v", [True, np.bool_(False), "1.0", None, 1j, np.complex128(1)])
def test_real_refuses_other_types(v: object) -> None:
    with pytest.raises(SpecboundTypeError, match=r"^l_phi must be a real number, got "):
        check_real(v, "l_phi")


@pytest.mark.parametrize("v", [math.nan, math.inf, -math.inf, np.float64("nan")])
def test_real_finite_by_default(v: float) -> None:
    with pytest.raises(SpecboundValueError, match=r"^l_phi must be a finite real number, got"):
        check_real(v, "l_phi")
    if not math.isnan(v):
        assert check_real(v, "x", finite=False) == v


def test_real_int_beyond_float64() -> None:
    with pytest.raises(SpecboundValueError, match="beyond float64"):
        check_real(10**400, "train_size")


def test_real_bounds_open_and_closed() -> None:
    assert check_real(0.0, "x", min=0.0) == 0.0
    with pytest.raises(SpecboundValueError, match=r"^x must be > 0, got 0\.0$"):
        check_real(0.0, "x", min=0.0, include_min=False)
    assert check_real(1.0, "x", max=1) == 1.0
    with pytest.raises(SpecboundValueError, match=r"^x must be < 1, got 1\.0$"):
        check_real(1.0, "x", max=1, include_max=False)
    with pytest.raises(SpecboundValueError, match=r"^acc must be <= 1, got 1\.5$"):
        check_real(1.5, "acc", min=0, max=1)
    with pytest.raises(SpecboundValueError, match=r"^x must be >= 0\.5, got 0\.25$"):
        check_real(0.25, "x", min=0.5)
    with pytest.raises(SpecboundValueError, match="nan"):
        check_real(math.nan, "x", min=0, finite=False)


def test_choice() -> None:
    assert check_choice("acc", "gap", ["acc", "loss"]) == "acc"
    assert check_choice(2, "k", (1, 2, 3)) == 2
    with pytest.raises(SpecboundValueError, match=r"^gap must be one of acc, loss; got 'x'$"):
        check_choice("x", "gap", ["acc", "loss"])
    with pytest.raises(SpecboundTypeError, match=r"^gap must be one of acc, loss; got 1 \(int\)"):
        check_choice(1, "gap", ["acc", "loss"])
    with pytest.raises(SpecboundValueError):
        check_choice([1], "k", (1, 2))  # unhashable: not a choice, no crash


# --- the declarative form ---------------------------------------------------------------------


@validate_params(
    {
        "n": [Interval(int, 1, 10)],
        "every": [Options("auto"), Interval(int, 1)],
        "names": [None, Names(["a", "b"])],
        "out": [None, PathLike()],
        "flag": [Boolean()],
    }
)
def _f(n: int, every: object = "auto", names: object = None, out: object = None, flag=False):
    return n, every, names, out, flag


def test_validate_params_normalises() -> None:
    assert _f(np.int64(3)) == (3, "auto", None, None, False)
    assert type(_f(np.int64(3))[0]) is int
    assert _f(10, every=np.int32(2), names="a", flag=np.bool_(True)) == (10, 2, ["a"], None, True)
    assert _f(1, names=("b", "a"))[2] == ["b", "a"]
    assert _f(1, names="a, b")[2] == ["a", "b"]


@pytest.mark.parametrize(
    ("kw", "exc", "message"),
    [
        ({"n": 0}, SpecboundValueError, "n must be an integer >= 1, got 0"),
        ({"n": 11}, SpecboundValueError, "n must be an integer <= 10, got 11"),
        ({"n": "3"}, SpecboundTypeError, "n must be an integer, got '3' (str)"),
        ({"n": 3.0}, SpecboundTypeError, "n must be an integer, got 3.0 (float)"),
        (
            {"n": 1, "every": 0},
            SpecboundValueError,
            "every must be 'auto' or an integer >= 1, got 0 (int)",
        ),
        (
            {"n": 1, "every": "x"},
            SpecboundValueError,
            "every must be 'auto' or an integer >= 1, got 'x' (str)",
        ),
        ({"n": 1, "names": "c"}, SpecboundValueError, "names: unknown name 'c'; choose from a, b"),
        ({"n": 1, "names": 3}, SpecboundTypeError, "names must be a list of names, got 3 (int)"),
        ({"n": 1, "out": ""}, SpecboundValueError, "out must be a non-empty path, got ''"),
        ({"n": 1, "flag": 1}, SpecboundTypeError, "flag must be True or False, got 1 (int)"),
    ],
)
def test_validate_params_refuses(kw: dict, exc: type, message: str) -> None:
    with pytest.raises(exc) as info:
        _f(**kw)
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value)


def test_validate_params_keeps_the_signature_and_refuses_unknown_parameters() -> None:
    import inspect

    assert list(inspect.signature(_f).parameters) == ["n", "every", "names", "out", "flag"]
    with pytest.raises(TypeError, match="no parameter 'm'"):
        validate_params({"m": [Boolean()]})(lambda n: n)


def test_interval_ends() -> None:
    c = [Interval(float, 0.0, 1.0, closed="neither")]
    for bad in (0.0, 1.0, math.nan, math.inf):
        with pytest.raises(SpecboundValueError):
            check_param(bad, "x", c)
    assert check_param(0.5, "x", c) == 0.5
    assert check_param(1, "x", [Interval(int, 0, 2, closed="neither")]) == 1
    for bad in (0, 2):
        with pytest.raises(SpecboundValueError):
            check_param(bad, "x", [Interval(int, 0, 2, closed="neither")])
    assert check_param(3.0, "x", [Interval(int, 1, whole_floats=True)]) == 3
    with pytest.raises(SpecboundTypeError):
        check_param(2.5, "x", [Interval(int, 1, whole_floats=True)])


def test_validate_fields_sets_normalised_values() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class C:
        names: object

        def __post_init__(self) -> None:
            validate_fields(self, {"names": [Names()]})

    assert C("x").names == ["x"]
    with pytest.raises(SpecboundTypeError, match="names must be a list of names"):
        C(3)
