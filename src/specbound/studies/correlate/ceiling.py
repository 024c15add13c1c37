"""The rank-ceiling diagnosis of the spectrum-adaptive proxy over a zoo (SPEC 10).

Per model (models.csv): ``spectrum_adaptive_share_p0`` (share of QK, OV, M_in, M_out matrices
at p* = 0) and ``spectrum_adaptive_ceiling_gap`` = log10 B_ceiling - log10 B_spectrum_adaptive
(>= 0; 0: a pure rank count) and ``adaptive_headroom_min`` (SPEC 4, decades: how far the
closest matrix is from using its spectrum), all from ``specbound.analysis.Analysis``. Per study
(correlate.json ``rank_ceiling``): the models at the ceiling (gap < ``CEILING_THRESHOLD``) and
the R^2 of log10 B on the architecture cells (depth x width: ``cell_r2`` of :mod:`.stats`),
for ``spectrum_adaptive`` and, for comparison, ``norm_based``.
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


def rank_ceiling(models: pd.DataFrame) -> dict[str, Any]:
    """correlate.json's ``rank_ceiling`` object, with a one-line ``statement``."""
    import pandas as pd

    def col(name: str) -> np.ndarray:
        if name not in models.columns:
            return np.full(len(models), np.nan)
        return pd.to_numeric(models[name], errors="coerce").to_numpy(float)

    gap = col("spectrum_adaptive_ceiling_gap")
    known = np.isfinite(gap)
    cells = [c for c in ARCHITECTURE_COLUMNS if c in models.columns]
    if cells:
        ids = np.stack([pd.factorize(models[c], use_na_sentinel=False)[0] for c in cells], 1)
        n_cells = int(np.unique(ids, axis=0).shape[0])
        r2_sa, r2_nb = cell_r2(col("spectrum_adaptive"), ids), cell_r2(col("norm_based"), ids)
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
