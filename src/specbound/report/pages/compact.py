"""The compact table of a correlate page: correlation.csv in Jiang et al.'s form, one row per
measure, as text cells (SPEC 10's statistics with their intervals), and the small cell readers
the page shares with it."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..html import interval
from ..numbers import NOT_APPLICABLE, as_float, sig_small

if TYPE_CHECKING:
    import pandas as pd

    from ...studies.correlate.result import Correlation


def sig_text(v: Any) -> str:
    """A statistic or a difference on this page (3 decimals, 3 significant digits below 0.01);
    "n/a" when it is undefined (an empty cell, never the word "undefined")."""
    return NOT_APPLICABLE if math.isnan(as_float(v)) else sig_small(v)


def cell_text(v: Any) -> str:
    """A text cell of a table read back (an empty cell is NaN there): "" when missing."""
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def _with_interval(row: dict[str, Any], st: str) -> str:
    """``x [lo, hi]`` of one statistic (the interval "no interval" when undefined); "" when
    the statistic is not a column of the table."""
    if st not in row:
        return ""
    lo, hi = row.get(f"{st}_low"), row.get(f"{st}_high")
    if f"{st}_low" not in row or math.isnan(as_float(row.get(st))):
        return sig_text(row.get(st))  # an undefined value has no interval to show
    return f"{sig_text(row.get(st))} {interval(lo, hi, 2)}"


def compact_table(result: Correlation) -> pd.DataFrame:
    """correlation.csv in Jiang et al.'s compact form, one row per measure: τ, τ_n, τ_arch
    (with the cells used and those at the rank ceiling), Ψ and ψ per axis, the minimum CMI
    (with the axes attaining it) and the robust sign-error (with its axis), as text cells
    through :mod:`..numbers` ("x [lo, hi]"); every column is in correlation.csv."""
    import pandas as pd

    out = []
    for r in result.correlation.to_dict("records"):
        row: dict[str, Any] = {"measure": str(r["measure"]), "τ": _with_interval(r, "kendall_tau")}
        if "tau_fixed_n" in r:
            row["τ_n"] = _with_interval(r, "tau_fixed_n")
        if "tau_arch" in r:
            cells, ceil = as_float(r.get("tau_arch_cells")), as_float(r.get("tau_arch_ceiling"))
            extra = (
                ""
                if math.isnan(cells)
                else f" ({cells:.0f} cells"
                + ("" if math.isnan(ceil) else f", {ceil:.0f} at ceiling")
                + ")"
            )
            row["τ_arch"] = _with_interval(r, "tau_arch") + extra
        row["Ψ"] = _with_interval(r, "psi")
        for a in result.axes:
            if f"psi_{a}" in r:
                row[f"ψ {a}"] = sig_text(r.get(f"psi_{a}"))
        if "cmi" in r:
            axes = cell_text(r.get("cmi_axes"))
            row["CMI (min)"] = _with_interval(r, "cmi") + (f" ({axes})" if axes else "")
        if "sign_error_robust" in r:
            ax = cell_text(r.get("sign_error_robust_axis"))
            v = as_float(r.get("sign_error_robust"))
            row["robust sign-error"] = (
                ax or "too few pairs"
                if math.isnan(v)
                else f"{sig_text(v)} ({ax})"
                if ax
                else sig_text(v)
            )
        out.append(row)
    return pd.DataFrame(out)
