"""Which proxy grows faster? An honest reading of fitted slopes (pure functions, no I/O).

Two slopes b1 ± se1 and b2 ± se2 (OLS standard errors) are called different only when

    |b1 - b2| > k * sqrt(se1^2 + se2^2),   k = max(2, t_0.975(df)),

df the residual degrees of freedom of the fits (the smaller of the two; k = 2 when the table
does not say), otherwise "not shown to differ on this grid" (never "indistinguishable": a
difference within the noise of a small grid is not evidence of equal growth). Slopes are written
``b ± se (SE)``, the standard error named. A slope without a standard error
(no residual degrees of freedom: as many parameters as points) cannot be judged: the verdict
says so instead of guessing, and never calls such a difference significant. When every
per-fixed line rests on two points the verdict says so.

Beyond the two proxies (``study_verdict``): whether the spectrum-adaptive proxy grows like its
rank ceiling B_ceiling = sum_A sqrt(r(A) N) + sqrt(L) (SPEC 10; then its growth is the ranks'
and N's, not the trained spectra's), how many models sit at the ceiling, which measures have
no fit and why, which are logs with negative values (their slopes are not growth exponents),
and whether the spectrum-adaptive proxy exceeds the norm-based one in every model.

Interaction: a pooled fit assumes one slope for every value of the other axis. When the
per-fixed slopes of a measure differ pairwise by more than k combined standard errors, or the
per-fixed verdicts disagree (slower at one fixed value, faster at another), the pooled verdict
hides that, so ``growth_verdict`` reports it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .fit import AXES
from .notes import ceiling_count, dominance_note, measure_notes

if TYPE_CHECKING:
    import pandas as pd

#: Verdict words, from the point of view of the first slope.
SLOWER, FASTER, SAME, UNKNOWN = "more slowly", "faster", "not shown to differ", "undetermined"
#: A fit with fewer residual degrees of freedom than this is flagged (its SE rests on at most
#: one residual; with none there is no SE at all).
MIN_RESID_DF = 2

K_SE = 2.0
AXIS_SYMBOL = {"hidden_size": "N", "num_layers": "L"}
#: the slope compared along each axis: power-law exponent in N, orders of magnitude per layer in L
AXIS_SLOPE = {"hidden_size": "exponent", "num_layers": "log10_per_unit"}


def _finite(x: Any) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


#: t_0.975 quantiles of Student's t by degrees of freedom (two-sided 95%); beyond 30, ~2.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def critical_value(df: Any, k: float = K_SE) -> float:
    """max(k, t_0.975(df)) for df >= 1 residual degrees of freedom; k when df is unknown;
    inf when df < 1 (no standard error: nothing can be called different)."""
    if not _finite(df):
        return k
    d = int(df)
    if d < 1:
        return math.inf
    return max(k, _T975[d - 1] if d <= len(_T975) else 1.96)


def compare_slopes(
    b1: float, se1: float | None, b2: float, se2: float | None, k: float = K_SE
) -> str:
    """SLOWER if b1 < b2 by more than k*sqrt(se1^2+se2^2), FASTER if b1 > b2 by more,
    SAME otherwise (also within 1e-9 relative: equal up to rounding); UNKNOWN when a slope or
    a standard error is missing (None/NaN/inf)."""
    if not (_finite(b1) and _finite(b2) and _finite(se1) and _finite(se2)):
        return UNKNOWN
    # floor: slopes equal to rounding (a proxy exactly at its ceiling) are never "different"
    margin = max(
        k * math.hypot(float(se1 or 0.0), float(se2 or 0.0)),
        1e-9 * max(1.0, abs(float(b1)), abs(float(b2))),
    )
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
    words (its caveats included), ``interaction`` notes (empty when none is seen),
    ``per_fixed`` verdict per value, ``caveats`` (e.g. two points per line) on their own."""

    axis: str
    word: str
    sentence: str
    interaction: list[str] = field(default_factory=list)
    per_fixed: dict[Any, str] = field(default_factory=dict)
    caveats: list[str] = field(default_factory=list)


def _pm(v: float, se: float | None) -> str:
    """``b ± se (SE)`` (3 and 2 significant digits), or ``b (no SE)``."""
    return f"{v:.3g}" + (f" ± {float(se or 0.0):.2g} (SE)" if _finite(se) else " (no SE)")


def low_resid_df(row: Any) -> int | None:
    """The residual degrees of freedom of a growth row when below MIN_RESID_DF (its line is
    flagged: :func:`low_df_flag`), else None (enough, or unknown)."""
    d = _df(row)
    return d if d is not None and d < MIN_RESID_DF else None


def low_df_flag(row: Any) -> str:
    """The flag of a growth row with fewer than MIN_RESID_DF residual degrees of freedom
    ("" otherwise): the line is drawn but its SE (if any) rests on at most one residual."""
    d = _df(row)
    if d is None or d >= MIN_RESID_DF:
        return ""
    if d <= 0:
        return f"resid df {d}: no SE"
    return f"resid df {d} < {MIN_RESID_DF}"


def low_df_fits(growth: pd.DataFrame, names: tuple[str, ...] | None = None) -> list[str]:
    """The growth fits (of the measures ``names``, default all) with fewer than MIN_RESID_DF
    residual degrees of freedom, one phrase per measure and axis, e.g. "spectrum_adaptive
    against N at L = 1, 2, 3 (resid df 1, 1, 1)"."""
    if growth is None or growth.empty:
        return []
    name_col = "measure" if "measure" in growth.columns else "proxy"
    groups: dict[tuple[str, str], list[str]] = {}
    dfs: dict[tuple[str, str], list[str]] = {}
    for _, r in growth.iterrows():
        d = _df(r)
        if d is None or d >= MIN_RESID_DF or (names is not None and r[name_col] not in names):
            continue
        key = (str(r[name_col]), str(r["axis"]))
        z = _fmt_z(r["fixed_value"]) if r.get("fit") == "per_fixed" else "pooled"
        groups.setdefault(key, []).append(z)
        dfs.setdefault(key, []).append(str(d))
    out = []
    for (name, axis), zs in groups.items():
        sym, other = _symbols(axis)
        where = ", ".join(zs)
        out.append(
            f"{name} against {sym} at {other} = {where} (resid df {', '.join(dfs[(name, axis)])})"
        )
    return out


def _fmt_z(z: Any) -> str:
    try:
        return str(int(z))
    except (TypeError, ValueError):
        return str(z)


def _symbols(axis: str) -> tuple[str, str]:
    other = "num_layers" if axis == "hidden_size" else "hidden_size"
    return AXIS_SYMBOL.get(axis, axis), AXIS_SYMBOL.get(other, other)


def _df(row: Any) -> Any:
    """Residual degrees of freedom of a growth row: ``resid_df`` when the table has it, else
    n - 2 for a per-fixed line, else unknown (None)."""
    if "resid_df" in row.index and _finite(row["resid_df"]):
        return int(row["resid_df"])
    if row.get("fit") == "per_fixed" and _finite(row.get("n_points")):
        return int(row["n_points"]) - 2
    return None


def _k_for(rows: list[Any], k: float) -> float:
    dfs = [_df(r) for r in rows]
    known = [d for d in dfs if d is not None]
    return critical_value(min(known), k) if known else k


def _k_text(kk: float) -> str:
    return f"{kk:.3g}" if kk != K_SE else f"{K_SE:g}"


def _apart(a: Any, b: Any, slope: str, kk: float) -> str:
    """ "1.3 combined standard errors apart (threshold 4.3)": the difference of two fitted
    slopes in units of sqrt(se_a^2 + se_b^2), and the threshold it is compared with."""
    se = math.hypot(float(a[f"{slope}_se"]), float(b[f"{slope}_se"]))
    d = abs(float(a[slope]) - float(b[slope]))
    z = d / se if se > 0 else math.inf
    return f"{z:.2g} combined standard errors apart (threshold {_k_text(kk)})"


def _pooled(growth: pd.DataFrame, axis: str) -> dict[str, Any]:
    name_col = "measure" if "measure" in growth.columns else "proxy"
    rows = growth[(growth["axis"] == axis) & (growth["fit"] == "pooled")]
    return {r[name_col]: r for _, r in rows.iterrows()}


def two_point_caveat(growth: pd.DataFrame, axis: str, names: tuple[str, ...]) -> str | None:
    """A caveat when every per-fixed line of ``names`` along ``axis`` has two points."""
    name_col = "measure" if "measure" in growth.columns else "proxy"
    rows = growth[
        (growth["axis"] == axis)
        & (growth["fit"] == "per_fixed")
        & (growth[name_col].isin(list(names)))
    ]
    if rows.empty or not (rows["n_points"] == 2).all():
        return None
    sym, other = _symbols(axis)
    pooled = [_pooled(growth, axis).get(n) for n in names]
    dfs = [_df(r) for r in pooled if r is not None]
    df_text = (
        f"; the pooled standard errors rest on {min(dfs)} residual degrees of freedom"
        if dfs and all(d is not None for d in dfs)
        else ""
    )
    return (
        f"Each fit at fixed {other} rests on two points (two values of {sym}), so it has no "
        f"standard error of its own{df_text}."
    )


def growth_verdict(
    growth: pd.DataFrame,
    axis: str,
    first: str = "spectrum_adaptive",
    second: str = "norm_based",
    k: float = K_SE,
) -> Verdict | None:
    """Compare the growth of ``first`` and ``second`` along ``axis`` (see the module doc).

    ``growth`` has the columns of ``study.growth`` (``proxy`` or ``measure``, ``axis``,
    ``fit`` in {pooled, per_fixed}, ``fixed_value``, slope and ``<slope>_se``, ``n_points``,
    optionally ``resid_df``). Returns None when the table has no pooled fit of both along
    ``axis``.
    """
    name_col = "measure" if "measure" in growth.columns else "proxy"
    slope = AXIS_SLOPE.get(axis, "exponent")
    sym, other = _symbols(axis)
    rows = growth[growth["axis"] == axis]
    fits = _pooled(growth, axis)
    if first not in fits or second not in fits:
        return None
    a, b = fits[first], fits[second]
    kk = _k_for([a, b], k)
    word = compare_slopes(a[slope], a[f"{slope}_se"], b[slope], b[f"{slope}_se"], kk)
    sentence = _pooled_sentence(word, a, b, slope, kk, (first, second), sym)
    caveats = [c for c in [two_point_caveat(growth, axis, (first, second))] if c]
    if caveats:
        sentence = f"{sentence} {' '.join(caveats)}"

    by_name, df_of = _per_fixed_slopes(rows, name_col, slope, (first, second))
    per = _per_fixed_words(by_name, df_of, (first, second), k)
    notes = _flip_notes(per, other)
    for name in (first, second):
        notes.extend(_interaction_notes(name, by_name[name], df_of, k, sym, other))
    return Verdict(axis, word, sentence, notes, per, caveats)


def _pooled_sentence(
    word: str,
    a: Any,
    b: Any,
    slope: str,
    kk: float,
    names: tuple[str, str],
    sym: str,
) -> str:
    """The sentence of ``growth_verdict`` on the pooled slopes ``a`` and ``b`` of ``names``
    (``kk`` standard errors apart make a difference), before its caveats."""
    unit = "exponent" if slope == "exponent" else "log10 B per layer"
    la, lb = names[0].replace("_", "-"), names[1].replace("_", "-")
    what = (
        f"{unit} {_pm(a[slope], a[f'{slope}_se'])} ({la}) vs "
        f"{_pm(b[slope], b[f'{slope}_se'])} ({lb})"
    )
    if word == SAME:
        return (
            f"{what}: {_apart(a, b, slope, kk)}, so their growth with {sym} is "
            "not shown to differ on this grid."
        )
    if word == UNKNOWN:
        return (
            f"{what}: without standard errors (no residual degrees of freedom: too few models "
            f"per fit) this grid cannot tell which grows faster with {sym}."
        )
    return (
        f"{what}: the spectrum-adaptive proxy grows {word} with {sym} ({_apart(a, b, slope, kk)})."
    )


def _per_fixed_slopes(
    rows: pd.DataFrame, name_col: str, slope: str, names: tuple[str, str]
) -> tuple[dict[str, list[tuple[Any, float, float]]], dict[tuple[str, Any], Any]]:
    """The per-fixed fits of ``names`` in ``rows``: ``(fixed value, slope, se)`` per name, in
    table order, and each fit's row by ``(name, fixed value)``."""
    fixed = rows[rows["fit"] == "per_fixed"]
    by_name: dict[str, list[tuple[Any, float, float]]] = {names[0]: [], names[1]: []}
    df_of: dict[tuple[str, Any], Any] = {}
    for _, r in fixed.iterrows():
        if r[name_col] in by_name:
            by_name[r[name_col]].append(
                (r["fixed_value"], float(r[slope]), float(r[f"{slope}_se"]))
            )
            df_of[(r[name_col], r["fixed_value"])] = r
    return by_name, df_of


def _per_fixed_words(
    by_name: dict[str, list[tuple[Any, float, float]]],
    df_of: dict[tuple[str, Any], Any],
    names: tuple[str, str],
    k: float,
) -> dict[Any, str]:
    """The verdict word at each fixed value both names have a fit at, in increasing order."""
    first, second = names
    fa = {z: (bz, sz) for z, bz, sz in by_name[first]}
    fb = {z: (bz, sz) for z, bz, sz in by_name[second]}
    per: dict[Any, str] = {}
    for z in sorted(set(fa) & set(fb), key=lambda v: float(v)):
        kz = _k_for([df_of[(first, z)], df_of[(second, z)]], k)
        per[z] = compare_slopes(fa[z][0], fa[z][1], fb[z][0], fb[z][1], kz)
    return per


def _flip_notes(per: dict[Any, str], other: str) -> list[str]:
    """A note when the per-fixed verdicts say slower at one fixed value and faster at another."""
    decided = {w for w in per.values() if w in (SLOWER, FASTER)}
    if decided != {SLOWER, FASTER}:
        return []
    where = "; ".join(
        f"{word_} at {other} = {_fmt_z(z)}"
        for word_ in (SLOWER, FASTER)
        for z in [z for z, w in per.items() if w == word_]
    )
    return [
        f"The comparison flips with {other}: the spectrum-adaptive proxy grows "
        f"{where}; a single pooled verdict would hide this."
    ]


def _interaction_notes(
    name: str,
    slopes: list[tuple[Any, float, float]],
    df_of: dict[tuple[str, Any], Any],
    k: float,
    sym: str,
    other: str,
) -> list[str]:
    """A note when the per-fixed ``slopes`` of ``name`` differ pairwise beyond k combined
    standard errors (an interaction)."""
    kn = _k_for([df_of[(name, z)] for z, _, _ in slopes], k)
    if not inconsistent_pairs(slopes, kn):
        return []
    label = name.replace("_", "-")
    vals = ", ".join(f"{_fmt_z(z)}: {_pm(bz, sz)}" for z, bz, sz in slopes)
    return [
        f"The {label} slope against {sym} differs across {other} beyond "
        f"{_k_text(kn)} combined standard errors ({other} = {vals}): an interaction, "
        "so the pooled slope is an average of unequal slopes."
    ]


# --- the study's answer beyond the two proxies -------------------------------------------------

CEILING = "log10_spectrum_adaptive_ceiling"


def ceiling_verdict(models: pd.DataFrame, growth: pd.DataFrame, axis: str) -> str | None:
    """Whether the spectrum-adaptive proxy grows like its rank ceiling along ``axis``: the
    fitted slope of log10 B against that of log10 B_ceiling, with their standard errors; None
    when either pooled fit is missing. When the proxy also grows more slowly than the
    norm-based one, says whether that slower growth is the ceiling's."""
    fits = _pooled(growth, axis)
    first = "spectrum_adaptive"
    if first not in fits or CEILING not in fits:
        return None
    slope = AXIS_SLOPE.get(axis, "exponent")
    sym, _ = _symbols(axis)
    a, c = fits[first], fits[CEILING]
    kk = _k_for([a, c], K_SE)
    word = compare_slopes(a[slope], a[f"{slope}_se"], c[slope], c[f"{slope}_se"], kk)
    unit = "exponent" if slope == "exponent" else "log10 per layer"
    what = (
        f"{unit} {_pm(a[slope], a[f'{slope}_se'])} (spectrum-adaptive) vs "
        f"{_pm(c[slope], c[f'{slope}_se'])} (its rank ceiling sum sqrt(r N) + sqrt(L))"
    )
    vs_norm = growth_verdict(growth, axis)
    slower = vs_norm is not None and vs_norm.word == SLOWER
    if word == SAME:
        lead = (
            f"The spectrum-adaptive proxy's slower growth with {sym} is not shown to differ "
            "from its rank ceiling's growth"
            if slower
            else f"The spectrum-adaptive proxy's growth with {sym} is not shown to differ from "
            "its rank ceiling's"
        )
        return (
            f"{lead} ({what}; within {_k_text(kk)} combined standard errors): consistent with a "
            "proxy that follows the matrix ranks and N rather than the trained singular values."
        )
    if word == UNKNOWN:
        return (
            f"Whether the spectrum-adaptive proxy grows with {sym} as its rank ceiling does is "
            f"undetermined ({what}: no residual degrees of freedom)."
        )
    toward = (
        "it comes closer to its ceiling as the model grows (the ceiling gap shrinks)"
        if word == FASTER
        else "it moves further below its ceiling as the model grows (the ceiling gap widens)"
    )
    return (
        f"The spectrum-adaptive proxy grows {word} with {sym} than its rank ceiling ({what}; "
        f"beyond {_k_text(kk)} combined standard errors): {toward}. Where every matrix picks "
        "p* = 0 (share p*=0 at 100%) the proxy is its rank ceiling, and its growth is the "
        "growth of the rank count."
    )


def study_verdict(study: Any) -> list[str]:
    """The answer of ``study`` (a ``Study``: its ``models`` and ``growth``) in plain
    sentences, caveats included (what a report or a terminal prints first): per axis the
    proxies' growth (``growth_verdict``) with its interaction notes and whether the
    spectrum-adaptive growth is its rank ceiling's; then the models at the ceiling,
    dominance, and measures without a fit or an exponent."""
    m, g = study.models, study.growth
    out: list[str] = []
    for axis in AXES:
        v = growth_verdict(g, axis) if not g.empty else None
        if v is not None:
            out.append(v.sentence)
            out.extend(v.interaction)
        c = ceiling_verdict(m, g, axis) if not g.empty else None
        if c is not None:
            out.append(c)
    for line in (ceiling_count(m), dominance_note(m), low_df_note(g)):
        if line:
            out.append(line)
    out.extend(measure_notes(m, g))
    return out


def low_df_note(
    growth: pd.DataFrame, names: tuple[str, ...] = ("spectrum_adaptive", "norm_based")
) -> str | None:
    """One sentence flagging the growth fits of ``names`` (the two proxies, whose lines the
    figures draw) with fewer than MIN_RESID_DF residual degrees of freedom, with the count
    over every measure's fits (all flagged in the page's growth table); None when none."""
    if growth is None or growth.empty:
        return None
    name_col = "measure" if "measure" in growth.columns else "proxy"
    n_all = sum(1 for _, r in growth.iterrows() if (d := _df(r)) is not None and d < MIN_RESID_DF)
    if n_all == 0:
        return None
    flagged = low_df_fits(growth, names)
    n_named = sum(
        1
        for _, r in growth.iterrows()
        if r[name_col] in names and (d := _df(r)) is not None and d < MIN_RESID_DF
    )
    head = (
        f"{n_named} growth fit{'s' if n_named != 1 else ''} of the two proxies "
        f"({'; '.join(flagged)}) and {n_all - n_named} of the other measures have"
        if flagged
        else f"{n_all} growth fit{'s' if n_all != 1 else ''} of the other measures have"
    )
    return (
        f"{head} fewer than {MIN_RESID_DF} residual degrees of freedom: such a line has too "
        "few points to check it, and its SE rests on at most one residual (none at df 0); read "
        "it as a sketch, not a measured slope (flagged in the figures and in the growth table's "
        "caveat column)."
    )
