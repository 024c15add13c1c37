"""The rank-ceiling diagnosis of the spectrum-adaptive proxy over a zoo (SPEC 10).

Per model (models.csv): ``spectrum_adaptive_share_p0`` (share of QK, OV, M_in, M_out matrices
at p* = 0) and ``spectrum_adaptive_ceiling_gap`` = log10 B_ceiling - log10 B_spectrum_adaptive
(>= 0; 0: a pure rank count) and ``adaptive_headroom_min`` (SPEC 4, decades: how far the
closest matrix is from using its spectrum), all from ``specbound.analysis.Analysis``. Per study
(correlate.json ``rank_ceiling``): the models at the ceiling (gap < ``CEILING_THRESHOLD``) and
the R^2 of log10 B on the architecture cells (depth x width: ``cell_r2`` of :mod:`.stats`),
for ``spectrum_adaptive`` and, for comparison, ``norm_based``. Per scatter of the correlate
page: which models sit at the ceiling (:func:`at_ceiling`) and whether a measure forms one
stripe per architecture (:func:`stripes_share`, R^2 of at least :data:`STRIPES`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ...measures.spectrum_adaptive import FIXED_FORMS, MODAL_FORM
from ..protocol.stats import cell_r2

if TYPE_CHECKING:
    import pandas as pd

CEILING_COLUMNS = (
    "spectrum_adaptive_share_p0",
    "spectrum_adaptive_ceiling_gap",
    "adaptive_headroom_min",
)
#: Protocol v5's forms of the proxy (SPEC 10): the fixed-index forms (from each model's own
#: analysis) and the modal form (from its cell, ``correlate.modal``). Columns of models.csv
#: after ``CEILING_COLUMNS``; measures (exploratory rows) only in an adaptivity zoo.
FORM_COLUMNS = (*FIXED_FORMS, MODAL_FORM)
CEILING_THRESHOLD = 1e-3
#: The architecture axes whose cells the R^2 uses (those of them that are columns).
ARCHITECTURE_COLUMNS = ("depth", "width")
#: A measure forms one stripe per architecture when the architecture cells explain at least
#: this share of its variance (the correlate page then colours its scatter by architecture).
STRIPES = 0.9


def diagnostics_of(analysis: Any) -> dict[str, float | None]:
    """The per-model columns (``CEILING_COLUMNS``, then the fixed-index forms of
    ``FORM_COLUMNS``) from an ``Analysis`` (None where it does not provide them)."""
    out: dict[str, float | None] = {}
    for col in CEILING_COLUMNS:
        v = getattr(analysis, col, None)
        try:
            out[col] = None if v is None else float(v)
        except (TypeError, ValueError):
            out[col] = None
    forms = getattr(analysis, "fixed_index_forms", None)
    if callable(forms):
        out.update({k: float(v) for k, v in forms().items()})
    return out


def _pct(x: float) -> str:
    """A share as a percentage, never rounded up to 100% (or down to 0%) unless exact."""
    if math.isnan(x):
        return "undefined"
    s = f"{100 * x:.0f}"
    if s == "100" and x < 1:
        s = f"{min(100 * x, 99.99):.2f}"
    elif s == "0" and x > 0:
        s = f"{max(100 * x, 0.01):.2f}"
    return s + "%"


def _numbers(models: pd.DataFrame, name: str) -> np.ndarray:
    """models.csv's column ``name`` as float64 (NaN where undefined or absent)."""
    import pandas as pd

    if name not in models.columns:
        return np.full(len(models), np.nan)
    return pd.to_numeric(models[name], errors="coerce").to_numpy(float)


def architecture_cells(models: pd.DataFrame) -> tuple[list[str], np.ndarray | None]:
    """(the architecture columns of ``models``, each row's cell codes: one column per
    architecture column); None without any."""
    import pandas as pd

    cells = [c for c in ARCHITECTURE_COLUMNS if c in models.columns]
    if not cells:
        return cells, None
    return cells, np.stack([pd.factorize(models[c], use_na_sentinel=False)[0] for c in cells], 1)


def architecture_share(models: pd.DataFrame, measure: str) -> float:
    """R^2 of ``measure`` on the architecture cells (:func:`cell_r2`); NaN without them."""
    _cells, ids = architecture_cells(models)
    if ids is None or measure not in models.columns:
        return math.nan
    return cell_r2(_numbers(models, measure), ids)


def stripes_share(models: pd.DataFrame, measure: str) -> float | None:
    """The R^2 of ``measure`` on the architecture cells when it forms one stripe per
    architecture (at least :data:`STRIPES`), else None."""
    r2 = architecture_share(models, measure)
    return r2 if not math.isnan(r2) and r2 >= STRIPES else None


def at_ceiling(models: pd.DataFrame) -> np.ndarray | None:
    """Which models sit at the rank ceiling (``spectrum_adaptive_ceiling_gap`` <
    :data:`CEILING_THRESHOLD`; an undefined gap is not at it); None without the column."""
    if "spectrum_adaptive_ceiling_gap" not in models:
        return None
    gap = _numbers(models, "spectrum_adaptive_ceiling_gap")
    return np.nan_to_num(gap, nan=np.inf) < CEILING_THRESHOLD


def rank_ceiling(models: pd.DataFrame) -> dict[str, Any]:
    """correlate.json's ``rank_ceiling`` object, with a one-line ``statement``."""
    gap = _numbers(models, "spectrum_adaptive_ceiling_gap")
    known = np.isfinite(gap)
    cells, ids = architecture_cells(models)
    if ids is not None:
        n_cells = int(np.unique(ids, axis=0).shape[0])
        r2_sa = cell_r2(_numbers(models, "spectrum_adaptive"), ids)
        r2_nb = cell_r2(_numbers(models, "norm_based"), ids)
    else:
        n_cells, r2_sa, r2_nb = 0, math.nan, math.nan
    n_at = int(np.sum(gap[known] < CEILING_THRESHOLD))
    median = float(np.median(gap[known])) if known.any() else math.nan
    if known.any():
        first = (
            f"{n_at} of {int(known.sum())} models sit at the rank ceiling of the "
            f"spectrum-adaptive proxy (ceiling gap < {CEILING_THRESHOLD:g}; median gap "
            f"{median:.3g} in log10)"
        )
    else:
        first = "the rank-ceiling diagnosis is unavailable (no model has a ceiling gap)"
    if cells:
        second = (
            f"{' x '.join(cells)} cells ({n_cells}) explain {_pct(r2_sa)} of the variance of "
            f"log10 B_spectrum_adaptive ({_pct(r2_nb)} for norm_based)"
        )
    else:
        second = "no depth or width column, so no R^2 on architecture cells"
    return {
        "threshold": CEILING_THRESHOLD,
        "n_models": int(known.sum()),
        "n_at_ceiling": n_at,
        "median_ceiling_gap": median,
        "cells": cells,
        "n_cells": n_cells,
        "r2_spectrum_adaptive": r2_sa,
        "r2_norm_based": r2_nb,
        "statement": f"{first}; {second}.",
    }
