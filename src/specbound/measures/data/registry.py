"""The data-measure registry (SPEC 12): every name, in SPEC 12 order."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...errors import SpecboundError


@dataclass(frozen=True)
class DataMeasure:
    """A registered data measure: its name, family module and what it is."""

    name: str
    family: str
    description: str


#: The bounds whose margin-normalized form is a data measure (SPEC 12): log10 B - log10 γ -
#: ½ log10 n for each registered bound (measures with ``bound_form`` and ``log10``).
BOUNDS = ("spectrum_adaptive", "norm_based")
#: The measures found by bisection: name -> (scale, magnitude-aware).
SEARCH = {
    "pacbayes_flatness": ("sigma", False),
    "pacbayes_mag_flatness": ("sigma", True),
    "sharpness": ("alpha", False),
    "sharpness_mag": ("alpha", True),
}

_BASE = (
    DataMeasure(
        "pacbayes_flatness",
        "flatness",
        "1/σ*², σ* of an isotropic Gaussian that drops training accuracy by 0.1",
    ),
    DataMeasure("pacbayes_mag_flatness", "flatness", "1/σ*², Gaussian of variance σ²w² + ε²"),
    DataMeasure(
        "sharpness",
        "sharpness",
        "1/α*², α* of the box |u| <= α where sign-gradient ascent drops training accuracy by 0.1",
    ),
    DataMeasure("sharpness_mag", "sharpness", "1/α*², box |u| <= α|w| + ε"),
    DataMeasure("inverse_margin", "margin", "1/γ², γ the 10th-percentile output margin"),
    DataMeasure("log_spectral_product_over_margin", "margin", "log_spectral_product - 2 log10 γ"),
)

#: name -> DataMeasure, in SPEC 12 order (the order of every table).
DATA_MEASURES: dict[str, DataMeasure] = {m.name: m for m in _BASE}
for _b in BOUNDS:
    DATA_MEASURES[f"{_b}_per_margin_sqrt_n"] = DataMeasure(
        f"{_b}_per_margin_sqrt_n", "margin", f"log10 B - log10 γ - ½ log10 n, B = {_b}"
    )


def data_measure_names() -> list[str]:
    """Every data measure, in SPEC 12 order."""
    return list(DATA_MEASURES)


def resolve_data_measures(names: Iterable[str] | str | None) -> list[str]:
    """Validated data-measure names (None: all; a list or a comma-separated string), in SPEC 12
    order."""
    if names is None:
        return data_measure_names()
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    chosen = []
    for n in names:
        if n not in DATA_MEASURES:
            raise SpecboundError(
                f"unknown data measure {n!r}; choose from {', '.join(DATA_MEASURES)}"
            )
        chosen.append(n)
    if not chosen:
        raise SpecboundError("no data measure chosen; pass names from specbound.DATA_MEASURES")
    return [n for n in DATA_MEASURES if n in chosen]
