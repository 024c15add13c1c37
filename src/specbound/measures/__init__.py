"""Generalization measures (SPEC.md section 9): one module per measure, registered here.

A measure maps one checkpoint to one number (larger should mean "generalizes worse"). Each
module defines ``MEASURE = Measure(...)`` whose ``compute`` is a pure function of a
``MeasureInput`` (spectra, bound details, raw-weight spectra, sizes) returning a
``MeasureValue``. Adding a measure = one module + its name in ``MODULES`` + one SPEC line + tests.
"""

from __future__ import annotations

import importlib

from ..errors import SpecboundError
from .base import Measure, MeasureInput, MeasureValue

#: Registered measure modules, in SPEC 9 order (the order of every table and file).
MODULES = (
    "spectrum_adaptive",
    "norm_based",
    "log_spectral_product",
    "log_frobenius_product",
    "frobenius_sum",
    "distance_from_init",
    "mean_stable_rank",
    "htsr_alpha",
    "htsr_alpha_weighted",
    "num_parameters",
)

_MEASURES: dict[str, Measure] = {}


def _load() -> dict[str, Measure]:
    if not _MEASURES:
        for m in MODULES:
            measure = importlib.import_module(f"{__name__}.{m}").MEASURE
            _MEASURES[measure.name] = measure
    return _MEASURES


def __getattr__(name: str) -> object:
    if name == "MEASURES":
        return dict(_load())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def measure_names() -> list[str]:
    """Every registered measure, in SPEC 9 order."""
    return list(_load())


def get_measure(name: str) -> Measure:
    reg = _load()
    if name not in reg:
        raise SpecboundError(
            f"unknown measure '{name}'; available: {', '.join(reg)} (see `specbound measures`)"
        )
    return reg[name]


def resolve_names(names: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """Validated measure names: None = all; a comma-separated string or a list."""
    if names is None:
        return measure_names()
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    out: list[str] = []
    for n in names:
        if not isinstance(n, str):
            raise SpecboundError(f"measure names must be strings, got {n!r}")
        get_measure(n)
        if n not in out:
            out.append(n)
    if not out:
        raise SpecboundError("no measure chosen; pass names from `specbound measures`")
    return out


def needs_weight_spectra(names: list[str] | None) -> bool:
    """Whether any of the chosen measures (None = all) reads the raw-weight spectra."""
    return any(get_measure(n).needs_weights for n in resolve_names(names))


def compute_measures(
    inp: MeasureInput, names: list[str] | None = None
) -> tuple[dict[str, float | None], dict[str, str]]:
    """({name: value or None}, {name: note}) for the chosen measures (default: all)."""
    values: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    for n in resolve_names(names):
        r = get_measure(n).compute(inp)
        values[n] = r.value
        if r.note:
            notes[n] = r.note
    return values, notes


__all__ = [
    "MODULES",
    "Measure",
    "MeasureInput",
    "MeasureValue",
    "compute_measures",
    "get_measure",
    "measure_names",
    "needs_weight_spectra",
    "resolve_names",
]
