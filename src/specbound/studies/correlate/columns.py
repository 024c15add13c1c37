"""The measure columns of correlate's models.csv: the registry's measures in SPEC 9 order,
their bound forms (``<name>_per_sqrt_n``, ``sample_size_only``), and every column correlate adds
(which a manifest column may not be named)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...measures import get_measure, measure_names
from .ceiling import CEILING_COLUMNS, FORM_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

#: Output columns of models.csv that are not measures (a manifest may not use these names).
OUTPUT_COLUMNS = ("gap", "sample_size_only", *CEILING_COLUMNS, *FORM_COLUMNS)


def measure_registry() -> tuple[list[str], dict[str, bool]]:
    """(SPEC 9 measure names in order, {bound-form measure: value already log10})."""
    names = measure_names()
    forms = {n: get_measure(n).log10 for n in names if get_measure(n).bound_form}
    return names, forms


def output_columns() -> list[str]:
    """Every column correlate adds to models.csv (what a manifest column may not be named)."""
    names, forms = measure_registry()
    return [*names, *(f"{n}_per_sqrt_n" for n in forms), *OUTPUT_COLUMNS]


def add_bound_forms(
    table: pd.DataFrame, measures: Sequence[str], forms: dict[str, bool]
) -> list[str]:
    """Add ``<name>_per_sqrt_n`` = log10 value - 1/2 log10 n and ``sample_size_only``.

    Only when ``train_size`` is a column with a value for some model; ``sample_size_only``
    (-1/2 log10 n) only when n varies. Returns the names of the added measures.
    """
    import pandas as pd

    if "train_size" not in table.columns:
        return []
    n = pd.to_numeric(table["train_size"], errors="coerce").to_numpy(float)
    n = np.where(n > 0, n, np.nan)
    if not np.isfinite(n).any():
        return []
    half = 0.5 * np.log10(n)
    added = []
    for name in measures:
        if name not in forms or name not in table.columns:
            continue
        v = pd.to_numeric(table[name], errors="coerce").to_numpy(float)
        if not forms[name]:
            with np.errstate(divide="ignore", invalid="ignore"):
                v = np.where(v > 0, np.log10(np.where(v > 0, v, 1.0)), np.nan)
        table[f"{name}_per_sqrt_n"] = v - half
        added.append(f"{name}_per_sqrt_n")
    if np.unique(n[np.isfinite(n)]).size > 1:
        table["sample_size_only"] = -half
        added.append("sample_size_only")
    return added


def measure_columns(
    models: pd.DataFrame, listed: Iterable[str], registry: Sequence[str], forms: dict[str, bool]
) -> list[str]:
    """The measures of an analyzed ``models`` table: the ``registry``'s in its order, then any
    other column not ``listed`` in the manifest (a custom analyzer's), then the bound forms
    (added to ``models`` now, :func:`add_bound_forms`)."""
    listed = set(listed)
    not_measures = ("gap", "converged", *CEILING_COLUMNS, *FORM_COLUMNS)
    found = [c for c in models.columns if c not in listed and c not in not_measures]
    measures = [m for m in registry if m in models.columns]
    measures += [m for m in found if m not in measures]
    measures += add_bound_forms(models, measures, forms)
    return measures


__all__ = [
    "OUTPUT_COLUMNS",
    "add_bound_forms",
    "measure_columns",
    "measure_registry",
    "output_columns",
]
