"""Which proxy grows faster? An honest reading of two fitted slopes (pure functions, no I/O).

Two slopes b1 ± se1 and b2 ± se2 (OLS standard errors) are called different only when

    |b1 - b2| > k * sqrt(se1^2 + se2^2),   k = 2 (about two combined standard errors),

otherwise "indistinguishable on this grid". A slope without a standard error (too few points
for residual degrees of freedom) cannot be judged: the verdict says so instead of guessing.

Interaction: a pooled fit assumes one slope for every value of the other axis. When the
per-fixed slopes of a measure differ pairwise by more than k combined standard errors, or the
per-fixed verdicts disagree (slower at one fixed value, faster at another), the pooled verdict
hides that, so ``growth_verdict`` reports it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: Verdict words, from the point of view of the first slope.
SLOWER, FASTER, SAME, UNKNOWN = "more slowly", "faster", "indistinguishable", "undetermined"

K_SE = 2.0
AXIS_SYMBOL = {"hidden_size": "N", "num_layers": "L"}
#: the slope compared along each axis: power-law exponent in N, orders of magnitude per layer in L
AXIS_SLOPE = {"hidden_size": "exponent", "num_layers": "log10_per_unit"}


def _finite(x: Any) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def compare_slopes(
    b1: float, se1: float | None, b2: float, se2: float | None, k: float = K_SE
) -> str:
    """SLOWER if b1 < b2 by more than k*sqrt(se1^2+se2^2), FASTER if b1 > b2 by more,
    SAME otherwise; UNKNOWN when a slope or a standard error is missing (None/NaN/inf)."""
    if not (_finite(b1) and _finite(b2) and _finite(se1) and _finite(se2)):
        return UNKNOWN
    margin = k * math.hypot(float(se1), float(se2))
    diff = float(b1) - float(b2)
    if abs(diff) <= margin:
        return SAME
    return SLOWER if diff < 0 else FASTER


def inconsistent_pairs(
    slopes: list[tuple[Any, float, float]], k: float = K_SE
) -> list[tuple[Any, Any]]:
    """Pairs (z_i, z_j) of per-fixed fits ``(z, slope, se)`` whose slopes differ by more than
    k combined standard errors (pairs with a missing SE are skipped)."""
    out = []
    for i in range(len(slopes)):
        for j in range(i + 1, len(slopes)):
            zi, bi, si = slopes[i]
            zj, bj, sj = slopes[j]
            if compare_slopes(bi, si, bj, sj, k) in (SLOWER, FASTER):
                out.append((zi, zj))
    return out


@dataclass
class Verdict:
    """The verdict along one axis: ``word`` for the pooled fit, ``sentence`` in HTML-free
    words, ``interaction`` notes (empty when none is seen), ``per_fixed`` verdict per value."""

    axis: str
    word: str
    sentence: str
    interaction: list[str] = field(default_factory=list)
    per_fixed: dict[Any, str] = field(default_factory=dict)


def _pm(v: float, se: float | None) -> str:
    return f"{v:.3g}" + (f" ± {float(se):.2g}" if _finite(se) else " (no SE)")


def _fmt_z(z: Any) -> str:
    try:
        return str(int(z))
    except (TypeError, ValueError):
        return str(z)


def growth_verdict(
    growth: pd.DataFrame,
    axis: str,
    first: str = "spectrum_adaptive",
    second: str = "norm_based",
    k: float = K_SE,
) -> Verdict | None:
    """Compare the growth of ``first`` and ``second`` along ``axis`` (see the module doc).

    ``growth`` has the columns of ``study.growth`` (``proxy`` or ``measure``, ``axis``,
    ``fit`` in {pooled, per_fixed}, ``fixed_value``, slope and ``<slope>_se``, ``n_points``).
    Returns None when the table has no pooled fit of both along ``axis``.
    """
    name_col = "measure" if "measure" in growth.columns else "proxy"
    slope = AXIS_SLOPE.get(axis, "exponent")
    sym, other = (
        AXIS_SYMBOL.get(axis, axis),
        AXIS_SYMBOL.get("num_layers" if axis == "hidden_size" else "hidden_size", ""),
    )
    rows = growth[growth["axis"] == axis]
    pooled = rows[rows["fit"] == "pooled"]
    fits = {r[name_col]: r for _, r in pooled.iterrows()}
    if first not in fits or second not in fits:
        return None
    a, b = fits[first], fits[second]
    word = compare_slopes(a[slope], a[f"{slope}_se"], b[slope], b[f"{slope}_se"], k)
    unit = "exponent" if slope == "exponent" else "log10 B per layer"
    la, lb = first.replace("_", "-"), second.replace("_", "-")
    what = (
        f"{unit} {_pm(a[slope], a[f'{slope}_se'])} ({la}) vs "
        f"{_pm(b[slope], b[f'{slope}_se'])} ({lb})"
    )
    if word == SAME:
        sentence = (
            f"{what}: the difference is within {k:g} combined standard errors, so the "
            f"growth with {sym} is indistinguishable on this grid."
        )
    elif word == UNKNOWN:
        sentence = (
            f"{what}: without standard errors (too few models per fit) this grid "
            f"cannot tell which grows faster with {sym}."
        )
    else:
        sentence = (
            f"{what}: the spectrum-adaptive proxy grows {word} with {sym} (difference "
            f"beyond {k:g} combined standard errors)."
        )

    per: dict[Any, str] = {}
    notes: list[str] = []
    fixed = rows[rows["fit"] == "per_fixed"]
    by_name: dict[str, list[tuple[Any, float, float]]] = {first: [], second: []}
    for _, r in fixed.iterrows():
        if r[name_col] in by_name:
            by_name[r[name_col]].append(
                (r["fixed_value"], float(r[slope]), float(r[f"{slope}_se"]))
            )
    fa = {z: (bz, sz) for z, bz, sz in by_name[first]}
    fb = {z: (bz, sz) for z, bz, sz in by_name[second]}
    for z in sorted(set(fa) & set(fb), key=lambda v: float(v)):
        per[z] = compare_slopes(fa[z][0], fa[z][1], fb[z][0], fb[z][1], k)
    decided = {w for w in per.values() if w in (SLOWER, FASTER)}
    if decided == {SLOWER, FASTER}:
        where = "; ".join(
            f"{word_} at {other} = {_fmt_z(z)}"
            for word_ in (SLOWER, FASTER)
            for z in [z for z, w in per.items() if w == word_]
        )
        notes.append(
            f"The comparison flips with {other}: the spectrum-adaptive proxy grows "
            f"{where}; a single pooled verdict would hide this."
        )
    for name in (first, second):
        pairs = inconsistent_pairs(by_name[name], k)
        if pairs:
            label = name.replace("_", "-")
            vals = ", ".join(f"{_fmt_z(z)}: {_pm(bz, sz)}" for z, bz, sz in by_name[name])
            notes.append(
                f"The {label} slope against {sym} differs across {other} beyond "
                f"{k:g} combined standard errors ({other} = {vals}): an interaction, "
                "so the pooled slope is an average of unequal slopes."
            )
    return Verdict(axis, word, sentence, notes, per)
