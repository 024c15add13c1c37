"""Growth fits of the scaling study (SPEC 7): ordinary least squares, pure functions.

Growth fits ("the other axis fixed"). For axis x (N or L), measure B and the other axis z:

- ``fit = "per_fixed"``: one ordinary least-squares line per value z0 of the other axis, over the
  models with z = z0 (needs >= 2 distinct x; the standard error needs >= 3 points, else NaN);
- ``fit = "pooled"``: one common slope with a separate intercept per value of z (a fixed-effects
  OLS, ``log10 B = a_z + b * f(x)``), over every group with >= 2 distinct x. This is "the other
  axis fixed" using the whole grid at once; its standard error needs more points than
  parameters (n > 1 + number of groups).

Each row gives ``exponent`` = slope of log10 B on log10 x (d log B / d log x, the power-law
exponent) and ``log10_per_unit`` = slope of log10 B on x (orders of magnitude per unit of x, the
natural measure of exponential growth in depth), each with its OLS standard error
(sqrt(sigma^2 (X^T X)^-1), sigma^2 = RSS / (n - k)), ``n_points`` and ``resid_df`` = n - k (the
residual degrees of freedom: 0 means the line passes through every point and no standard error
exists).

Fitted series: every registered measure (log10 of it), plus ``log10_spectrum_adaptive_ceiling``
(SPEC 10: log10 of the rank ceiling sum_A sqrt(r(A) N) + sqrt(L) the spectrum-adaptive proxy is
bounded by), so the proxy's growth can be compared with the ceiling's.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ...measures import get_measure, measure_names

if TYPE_CHECKING:
    import pandas as pd

AXES = ("hidden_size", "num_layers")
#: models.csv column of log10 B_ceiling, fitted like a measure (already in log10).
CEILING_COLUMN = "log10_spectrum_adaptive_ceiling"
GROWTH_COLUMNS = [
    "measure",
    "axis",
    "fixed_axis",
    "fixed_value",
    "fit",
    "exponent",
    "exponent_se",
    "log10_per_unit",
    "log10_per_unit_se",
    "n_points",
    "resid_df",
]


def ols(x: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None) -> tuple[float, float]:
    """Slope of y on x and its standard error; ``groups`` adds one intercept per group.

    The standard error is NaN when there are no residual degrees of freedom (n <= k)."""
    slope, se, _ = ols_df(x, y, groups)
    return slope, se


def ols_df(
    x: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None
) -> tuple[float, float, int]:
    """(slope, standard error, residual degrees of freedom n - k) of the OLS fit of ``ols``."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if groups is None:
        groups = np.zeros(x.size)
    levels = np.unique(groups)
    design = np.column_stack([x] + [(groups == g).astype(np.float64) for g in levels])
    n, k = design.shape
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    if n <= k:
        return float(coef[0]), math.nan, max(n - k, 0)
    resid = y - design @ coef
    sigma2 = float(resid @ resid) / (n - k)
    cov = sigma2 * np.linalg.pinv(design.T @ design)
    return float(coef[0]), float(math.sqrt(max(cov[0, 0], 0.0))), n - k


def measure_columns() -> list[str]:
    """The measure columns of models.csv: every registered measure, in SPEC 9 order."""
    return measure_names()


def is_log10(name: str) -> bool:
    """Whether the models.csv column ``name`` already holds a log10 (proxies, the ceiling)."""
    if name == CEILING_COLUMN:
        return True

    return bool(get_measure(name).log10)


def log10_values(models: pd.DataFrame, name: str) -> np.ndarray | None:
    """log10 of measure ``name`` per model (the value itself for log10 measures); None when
    some model lacks it or a non-log measure is not positive (no log to fit)."""
    if name not in models.columns:
        return None
    y = models[name].to_numpy(dtype=np.float64)
    if not is_log10(name):
        if not np.all(y > 0):
            return None
        y = np.log10(y)
    return y if y.size and np.all(np.isfinite(y)) else None


def no_fit_reason(models: pd.DataFrame, name: str) -> str | None:
    """Why measure ``name`` has no growth fit (None when it can have one): a missing column,
    an undefined value on some model, or a non-positive value of a non-log measure."""
    if name not in models.columns:
        return "not in the table"
    y = models[name].to_numpy(dtype=np.float64)
    if y.size == 0:
        return "no models"
    bad = int(np.sum(~np.isfinite(y)))
    if bad:
        return f"undefined on {bad} of {y.size} models"
    if not is_log10(name) and not np.all(y > 0):
        return f"not positive on {int(np.sum(y <= 0))} of {y.size} models (no log to fit)"
    return None


def fitted_series(models: pd.DataFrame) -> list[str]:
    """The series ``growth_table`` fits: every measure, then the ceiling when present."""
    out = measure_columns()
    if CEILING_COLUMN in models.columns:
        out.append(CEILING_COLUMN)
    return out


def growth_table(models: pd.DataFrame) -> pd.DataFrame:
    """Per-fixed and pooled growth fits of every measure (log10 of it) along both axes (see
    module doc). Measures undefined on some model (``distance_from_init`` without an init) are
    left out (``no_fit_reason`` says why)."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for name in fitted_series(models):
        y_all = log10_values(models, name)
        if y_all is None:
            continue
        for axis in AXES:
            other = AXES[1 - AXES.index(axis)]
            x_all = models[axis].to_numpy(dtype=np.float64)
            z_all = models[other].to_numpy()
            usable = []
            for z0 in sorted(np.unique(z_all)):
                sel = z_all == z0
                if np.unique(x_all[sel]).size < 2:
                    continue
                usable.append(sel)
                rows.append(
                    _fit_row(name, axis, other, int(z0), "per_fixed", x_all[sel], y_all[sel], None)
                )
            if usable:
                sel = np.logical_or.reduce(usable)
                rows.append(
                    _fit_row(name, axis, other, None, "pooled", x_all[sel], y_all[sel], z_all[sel])
                )
    return pd.DataFrame(rows, columns=GROWTH_COLUMNS)


def _fit_row(
    name: str,
    axis: str,
    other: str,
    z0: int | None,
    fit: str,
    x: np.ndarray,
    y: np.ndarray,
    groups: np.ndarray | None,
) -> dict[str, Any]:
    e, e_se, df = ols_df(np.log10(x), y, groups)
    u, u_se, _ = ols_df(x, y, groups)
    return {
        "measure": name,
        "axis": axis,
        "fixed_axis": other,
        "fixed_value": z0,
        "fit": fit,
        "exponent": e,
        "exponent_se": e_se,
        "log10_per_unit": u,
        "log10_per_unit_se": u_se,
        "n_points": int(x.size),
        "resid_df": int(df),
    }
