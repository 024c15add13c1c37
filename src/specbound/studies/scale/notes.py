"""Model-level notes of a scaling study (what ``verdict.study_verdict`` adds after the growth
verdicts): how many models sit at the rank ceiling, whether one proxy dominates the other, and
which measures have no growth fit or no growth exponent. Values beyond float64 (empty cells)
are undefined and said so, never printed as "nan"."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...tables import type_shares
from .fit import measure_columns, no_fit_reason

if TYPE_CHECKING:
    import pandas as pd

#: A model "sits at the rank ceiling" when log10 B_ceiling - log10 B < this (SPEC 10).
AT_CEILING = 1e-3


def ceiling_count(models: pd.DataFrame) -> str | None:
    """How many models sit at the rank ceiling (gap < AT_CEILING: every matrix at p* = 0)."""
    col = "spectrum_adaptive_ceiling_gap"
    if col not in models.columns or models.empty:
        return None
    import numpy as np
    import pandas as pd

    gap = pd.to_numeric(models[col], errors="coerce").to_numpy(dtype=float)
    undefined = int((~np.isfinite(gap)).sum())
    if undefined == gap.size:
        return "The rank-ceiling gap is undefined for every model (its proxy is beyond float64)."
    n_at, n = int((gap < AT_CEILING).sum()), int(gap.size)
    if n_at == 0:
        return f"No model sits at the rank ceiling (smallest gap {np.nanmin(gap):.3g} in log10)" + (
            f"; the gap is undefined for {undefined} of {n} models (beyond float64)."
            if undefined
            else "."
        )
    who = (
        f"All {n} models sit"
        if n_at == n
        else f"{n_at} of {n} model{'s sit' if n_at > 1 else ' sits'}"
    )
    return (
        f"{who} at the rank ceiling (log10 gap < {AT_CEILING:g}, every matrix at p* = 0): "
        "there the proxy is a rank count, the same for any full-rank checkpoint of that shape."
    )


#: Columns of models.csv that say how each model was trained (a trained zoo's manifest), in the
#: order the scale page shows them, with their words.
TRAINING_COLUMNS = (
    ("test_acc", "test accuracy"),
    ("train_acc", "train accuracy"),
    ("steps", "steps"),
)


def training_note(models: pd.DataFrame) -> str | None:
    """The range of each training column of models.csv present (:data:`TRAINING_COLUMNS`):
    ``test accuracy 0.82 to 0.95, steps 240 to 1,200 over 40 models``; None without any."""
    import numpy as np
    import pandas as pd

    parts = []
    for col, word in TRAINING_COLUMNS:
        if col not in models.columns:
            continue
        v = pd.to_numeric(models[col], errors="coerce").to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        if v.size:
            fmt = "{:,.0f}" if col == "steps" else "{:.3f}"
            parts.append(f"{word} {fmt.format(v.min())} to {fmt.format(v.max())}")
    if not parts:
        return None
    return f"Training: {', '.join(parts)} over {len(models)} models (each model's in the table)."


def exponent_allowed(models: pd.DataFrame, name: str) -> bool:
    """Whether the fitted slopes of measure ``name`` may be called growth exponents: not
    when its column holds negative values (a log such as log_spectral_product that is below 0:
    a slope of a signed log, not a power of a positive growing quantity)."""
    if name not in models.columns:
        return False
    y = models[name].to_numpy(dtype=float)
    return bool(y.size) and not (y[~(y != y)] < 0).any()


def measure_notes(models: pd.DataFrame, growth: pd.DataFrame) -> list[str]:
    """One sentence per measure that has no growth fit (and why) or whose slopes are not
    exponents (negative values), in models.csv order."""
    name_col = "measure" if "measure" in growth.columns else "proxy"
    fitted = set(growth[name_col]) if not growth.empty else set()
    notes = []
    for name in measure_columns():
        if name not in models.columns:
            continue
        if name not in fitted:
            why = no_fit_reason(models, name) or "fewer than two values of N or L at a fixed other"
            notes.append(f"{name} has no growth fit: {why}.")
        elif not exponent_allowed(models, name):
            n_neg = int((models[name].to_numpy(dtype=float) < 0).sum())
            notes.append(
                f"{name} is negative on {n_neg} of {len(models)} models: its fitted slopes are "
                "changes of that value per decade of N or per layer, not growth exponents."
            )
    return notes


def dominance_note(models: pd.DataFrame) -> str | None:
    """Says so when the spectrum-adaptive proxy exceeds the norm-based one in every model."""
    if not {"spectrum_adaptive", "norm_based"} <= set(models.columns) or models.empty:
        return None
    sa = models["spectrum_adaptive"].to_numpy(dtype=float)
    nb = models["norm_based"].to_numpy(dtype=float)
    if (sa > nb).all():
        return (
            f"The spectrum-adaptive proxy exceeds the norm-based one in every model "
            f"({sa.size} of {sa.size}): on these models it is the larger (looser) of the two."
        )
    return None


def finite_values(column: Any) -> np.ndarray:
    """The finite values of a column (an empty cell is a value beyond float64: undefined)."""
    import pandas as pd

    v = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
    return v[np.isfinite(v)]


def proxy_column(models: pd.DataFrame, proxy: str) -> str | None:
    """The column of models.csv holding ``proxy`` (its log10 column first), None without."""
    for c in (f"{proxy}_log10", proxy):
        if c in models.columns:
            return c
    return None


def proxy_range(models: pd.DataFrame, proxy: str) -> tuple[float, float, int] | None:
    """(min, max, models where it is undefined) of the proxy's log10 B over the models; None
    when models.csv has no such column. min and max are NaN when every model's is undefined."""
    col = proxy_column(models, proxy)
    if col is None:
        return None
    vals = finite_values(models[col])
    if not vals.size:
        return math.nan, math.nan, len(models)
    return float(vals.min()), float(vals.max()), len(models) - int(vals.size)


def share_p0_range(models: pd.DataFrame) -> tuple[float, float, float] | None:
    """(min, max, mean) over the models of share p*=0 (the spectrum-adaptive proxy's matrices
    that chose p* = 0); None when no model has it."""
    col = next((c for c in ("spectrum_adaptive_share_p0", "share_p0") if c in models.columns), None)
    s = finite_values(models[col]) if col is not None else np.array([])
    if not s.size:
        return None
    return float(s.min()), float(s.max()), float(s.mean())


def mean_type_shares(analyses: Sequence[Any]) -> dict[str, float] | None:
    """Per matrix type, the mean over the models of its share of the summed contributions
    (``tables.type_shares``), over the models where those shares are defined; None when
    none is (every model's contributions beyond float64, or no model)."""
    shares = [s for s in (type_shares(a) for a in analyses) if s is not None]
    if not shares:
        return None
    return {k: sum(s[k] for s in shares) / len(shares) for k in shares[0]}
