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
from tests.support.tables import check_each

#: (checker, value, expected result); every one returns the value as the Python type
ACCEPTS: list[tuple[str, object, object]] = [
    *(("int", v, 3) for v in (3, np.int64(3), np.int32(3), np.uint8(3), np.int8(3))),
    *(("bool", v, bool(v)) for v in (True, False, np.bool_(True), np.bool_(False))),
    *(("real", v, float(v)) for v in (1.5, 2, np.float32(1.5), np.float64(-0.25), np.int64(7))),
]
ACCEPTING: dict[str, tuple[object, type]] = {
    "int": (lambda v: check_int(v, "n", min=0, max=10), int),
    "bool": (lambda v: check_bool(v, "quiet"), bool),
    "real": (lambda v: check_real(v, "x"), float),
}


def test_checkers_accept_python_and_numpy_values_as_python_types() -> None:
    def check(case: tuple[str, object, object]) -> None:
        kind, v, want = case
        fn, typ = ACCEPTING[kind]
        out = fn(v)  # type: ignore[operator]
        assert out == want and type(out) is typ, out

    check_each(ACCEPTS, check)


#: (checker, value, the start of its message); each is a SpecboundTypeError (a TypeError and a
#: SpecboundError) whose one-line message names the parameter and the value's repr
REFUSES_TYPE: list[tuple[str, object, str]] = [
    *(
        ("int", v, "threads must be an integer, got ")
        for v in (True, False, np.bool_(True), 3.0, np.float64(3.0), "3", None, 3 + 0j, [3])
    ),
    *(
        ("bool", v, "quiet must be True or False, got ")
        for v in (0, 1, np.int64(1), 1.0, "yes", "True", None, [True])
    ),
    *(
        ("real", v, "l_phi must be a real number, got ")
        for v in (True, np.bool_(False), "1.0", None, 1j, np.complex128(1))
    ),
]
REFUSING = {
    "int": lambda v: check_int(v, "threads"),
    "bool": lambda v: check_bool(v, "quiet"),
    "real": lambda v: check_real(v, "l_phi"),
}


def test_checkers_refuse_other_types_naming_parameter_and_value() -> None:
    def check(case: tuple[str, object, str]) -> None:
        kind, v, start = case
        with pytest.raises(SpecboundTypeError) as e:
            REFUSING[kind](v)
        msg = str(e.value)
        assert msg.startswith(start) and repr(v) in msg, msg
        assert isinstance(e.value, TypeError) and isinstance(e.value, SpecboundError)
        assert "\n" not in msg

    check_each(REFUSES_TYPE, check)


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


def test_real_finite_by_default() -> None:
    def check(v: float) -> None:
        with pytest.raises(SpecboundValueError, match=r"^l_phi must be a finite real number, got"):
            check_real(v, "l_phi")
        if not math.isnan(v):
            assert check_real(v, "x", finite=False) == v

    check_each([math.nan, math.inf, -math.inf, np.float64("nan")], check)


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


#: (keyword arguments of _f, the error, the start of its one-line message)
VALIDATE_REFUSES: list[tuple[dict, type, str]] = [
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
]


def test_validate_params_refuses() -> None:
    def check(case: tuple[dict, type, str]) -> None:
        kw, exc, message = case
        with pytest.raises(exc) as info:
            _f(**kw)
        assert str(info.value).startswith(message), str(info.value)
        assert "\n" not in str(info.value)

    check_each(VALIDATE_REFUSES, check)


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
