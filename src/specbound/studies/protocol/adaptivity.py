"""Protocol v5 (SPEC 10): the adaptivity family and its pre-registered answer, as entries of the
protocol's registry.

Entries: the contrast ``D0`` = ``spectrum_adaptive - spectrum_adaptive_modal`` (the proxy against
itself with each matrix at its cell's modal p*, chosen without looking at any gap) and the family
``adaptivity`` = D0, A1, A3 on tau_arch, for a zoo that declares ``design: adaptivity`` (its
zoo.json, or ``correlate(design=...)``) and has depth and width columns; ``primary`` auto tries it
before ``arch``. The answer of a replicate pair of such zoos is :func:`answer` (one function,
below); the study applies it (:func:`pair_answer`).

The answer's inputs per zoo
its primary rows D0 (``spectrum_adaptive - spectrum_adaptive_modal``), A1
(``- norm_based``) and A3 (``- distance_from_init``) on tau_arch, each with delta, its 95%
interval, its verdict and ``verdict_stable``; and its switching share per cell
(correlate.json ``p_switch_share``). Pooled over the two zoos (disjoint seeds, draws
independent): Delta = the mean of the two deltas; its standard error from each zoo's interval
read as a normal one, se_i = (high_i - low_i) / (2 z_0.975), se = sqrt(se_1^2 + se_2^2) / 2
(independent draws: the variances add); the two-sided 95% interval Delta +- z_0.975 se and the
one-sided 95% upper bound Delta + z_0.95 se.

Exactly one answer, checked in this order (``ANSWERS``):

1. "adaptivity is inert here": p_switch_share < 5% in every cell of both zoos, or the pooled 95%
   interval of D0 lies inside [-0.02, +0.02];
2. "adaptivity helps": D0 "better" and ``verdict_stable`` in each zoo;
3. "no meaningful advantage": the pooled one-sided 95% upper bounds of D0, A1 and A3 are all
   below +0.05;
4. "not shown".

A missing or undefined figure makes its condition false (never true by default); a zoo without
switching shares cannot be inert by rule 1's first half.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from ...io.readback import ADAPTIVITY_DESIGN
from ...measures.spectrum_adaptive import MODAL_FORM
from .arch import CELL_AXES
from .families import TAU_ARCH
from .registry import REGISTRY, Contrast, Family, ZooFacts, register

#: The four answers, in the order they are checked.
INERT = "adaptivity is inert here"
HELPS = "adaptivity helps"
NO_ADVANTAGE = "no meaningful advantage"
NOT_SHOWN = "not shown"
ANSWERS = (INERT, HELPS, NO_ADVANTAGE, NOT_SHOWN)
#: Rule 1: every cell's switching share below this, or the pooled D0 interval inside +-EQUIVALENCE.
INERT_SHARE = 0.05
EQUIVALENCE = 0.02
#: Rule 3: each pooled one-sided upper bound below this.
MEANINGFUL = 0.05
#: The family's name (a value of ``primary``).
FAMILY = "adaptivity"
_Z2 = NormalDist().inv_cdf(0.975)
_Z1 = NormalDist().inv_cdf(0.95)
#: The design a zoo declares to be an adaptivity zoo (zoo.json / correlate.json ``design``).
ADAPTIVITY = ADAPTIVITY_DESIGN


def _refused(facts: ZooFacts) -> str:
    if facts.declared != ADAPTIVITY:
        return (
            "primary adaptivity is for a zoo that declares design: adaptivity (its zoo.json, "
            "or correlate's design); use primary arch or standard"
        )
    if not facts.has_cells:
        return f"primary adaptivity needs {' and '.join(CELL_AXES)} columns (the cells of tau_arch)"
    return ""


register(
    Contrast(
        "D0", "spectrum_adaptive", MODAL_FORM,
        doc="the proxy against itself at its cell's modal p*: what choosing p after training adds",
    ),
    Family(
        FAMILY, ("D0", "A1", "A3"), lambda facts: TAU_ARCH, (TAU_ARCH,),
        lambda facts: facts.declared == ADAPTIVITY and facts.has_cells, _refused, rank=5,
        doc="protocol v5: the adaptive choice itself, on tau_arch", design=ADAPTIVITY,
    ),
)  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One primary row of one zoo: delta, its 95% interval, verdict, ``verdict_stable``."""

    delta: float
    low: float
    high: float
    verdict: str = ""
    stable: bool = False


@dataclass(frozen=True)
class Zoo:
    """One adaptivity zoo: its name, its primary rows by contrast (D0, A1, A3) and its
    switching share per cell (empty: unknown)."""

    name: str
    rows: Mapping[str, Row]
    cell_shares: Sequence[float] = field(default_factory=tuple)


@dataclass(frozen=True)
class Pooled:
    """A contrast pooled over the pair: mean delta, two-sided interval, one-sided upper bound
    (module doc); NaN when either zoo lacks the row or its interval."""

    delta: float
    low: float
    high: float
    upper: float

    def to_dict(self) -> dict[str, float]:
        return {"delta": self.delta, "low": self.low, "high": self.high, "upper": self.upper}


def contrasts() -> dict[str, tuple[str, str]]:
    """{id: (measure, versus)} of the family's contrasts (D0, A1, A3), from the registry."""
    return {c: (a, b) for c, a, b in REGISTRY.contrasts_of(REGISTRY.families[FAMILY])}


def pooled(a: Row | None, b: Row | None) -> Pooled:
    """The pooled figures of one contrast (module doc)."""
    nan = Pooled(math.nan, math.nan, math.nan, math.nan)
    if a is None or b is None:
        return nan
    vals = (a.delta, a.low, a.high, b.delta, b.low, b.high)
    if not all(math.isfinite(v) for v in vals):
        return nan
    d = (a.delta + b.delta) / 2.0
    se = math.hypot((a.high - a.low) / (2 * _Z2), (b.high - b.low) / (2 * _Z2)) / 2.0
    return Pooled(d, d - _Z2 * se, d + _Z2 * se, d + _Z1 * se)


def _below(shares: Sequence[float]) -> bool:
    return bool(shares) and all(math.isfinite(s) and s < INERT_SHARE for s in shares)


def answer(first: Zoo, second: Zoo) -> dict[str, Any]:
    """The pre-registered answer of a replicate pair (module doc) as a JSON-ready dict:
    ``answer`` (one of ``ANSWERS``), ``rule`` (1-4), ``why`` (the condition that decided it),
    ``pooled`` ({contrast: delta, low, high, upper}), ``switching`` ({zoo: its largest and
    every cell share}), ``zoos`` and a one-line ``statement``."""
    pool = {c: pooled(first.rows.get(c), second.rows.get(c)) for c in contrasts()}
    d0 = pool["D0"]
    zoos = (first, second)
    if all(_below(z.cell_shares) for z in zoos):
        rule, why = 1, f"p_switch_share < {INERT_SHARE:.0%} in every cell of both zoos"
    elif math.isfinite(d0.low) and d0.low >= -EQUIVALENCE and d0.high <= EQUIVALENCE:
        rule, why = 1, f"the pooled 95% interval of D0 lies inside [-{EQUIVALENCE}, +{EQUIVALENCE}]"
    elif all(
        (r := z.rows.get("D0")) is not None and r.verdict == "better" and r.stable for z in zoos
    ):
        rule, why = 2, 'D0 is "better" with a stable verdict in each zoo'
    elif all(math.isfinite(p.upper) and p.upper < MEANINGFUL for p in pool.values()):
        rule, why = (
            3,
            f"the pooled one-sided 95% upper bounds of D0, A1, A3 are below +{MEANINGFUL}",
        )
    else:
        rule, why = 4, "none of rules 1-3 holds"
    word = ANSWERS[rule - 1]
    switching = {
        z.name: {
            "max_cell_share": max(z.cell_shares) if z.cell_shares else math.nan,
            "cell_shares": [float(s) for s in z.cell_shares],
        }
        for z in zoos
    }
    return {
        "answer": word,
        "rule": rule,
        "why": why,
        "zoos": [z.name for z in zoos],
        "pooled": {c: p.to_dict() for c, p in pool.items()},
        "switching": switching,
        "statement": statement(word, why, pool, switching),
    }


def _fmt(p: Pooled) -> str:
    if not math.isfinite(p.delta):
        return "undefined"
    return f"{p.delta:+.3f} [{p.low:+.3f}, {p.high:+.3f}]"


def statement(
    word: str, why: str, pool: Mapping[str, Pooled], switching: Mapping[str, Mapping[str, Any]]
) -> str:
    """The answer in one sentence, with the pooled deltas, their intervals and the largest
    switching share of each zoo."""
    deltas = "; ".join(
        f"{c} ({a} - {b}) {_fmt(pool[c])}" for c, (a, b) in contrasts().items() if c in pool
    )
    shares = ", ".join(
        f"{name} {s['max_cell_share']:.1%}" if math.isfinite(s["max_cell_share"]) else f"{name} ?"
        for name, s in switching.items()
    )
    return (
        f"{word[0].upper()}{word[1:]} ({why}). Pooled over the two zoos, on tau_arch: {deltas}. "
        f"Largest switching share in a cell: {shares}."
    )


#: The prefix of an axis used as a measure in an adaptivity zoo (``axis:<name>``).
AXIS_PREFIX = "axis:"


def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def zoo_of(folder: str, primary: Any, shares: Sequence[float]) -> Zoo:
    """One replicate as the answer reads it: its rows D0, A1, A3 from the study's primary table
    (columns folder, contrast, delta, low, high, verdict, verdict_stable) and its cell shares."""
    rows = {}
    for rec in primary[primary["folder"] == folder].to_dict("records"):
        c = rec.get("contrast")
        if c in contrasts():
            rows[str(c)] = Row(
                _num(rec.get("delta")),
                _num(rec.get("low")),
                _num(rec.get("high")),
                str(rec.get("verdict") or ""),
                str(rec.get("verdict_stable") or "") == "yes",
            )
    return Zoo(folder, rows, tuple(float(s) for s in shares))


def axis_rows(
    folders: Sequence[str], correlations: Mapping[str, Any], statistic: str = "tau_arch"
) -> list[dict[str, Any]]:
    """Each ``axis:<name>`` measure of each replicate of a pair, read as a measure with the sign
    observed in the other replicate (SPEC 10 v5: larger = worse gap by that sign): the signed
    ``statistic`` and its interval (flipped when the other replicate's sign is negative; None
    when that sign is 0 or undefined), beside the proxy's (``spectrum_adaptive``) in the same
    zoo, and whether the axis ranks the gap better than the proxy (point estimates)."""
    out = []
    for f, o in ((folders[0], folders[1]), (folders[1], folders[0])):
        mine, other = correlations[f], correlations[o]
        if statistic not in mine.columns:
            continue
        by = mine.set_index("measure")
        oby = other.set_index("measure") if statistic in other.columns else None
        proxy = by.loc["spectrum_adaptive"] if "spectrum_adaptive" in by.index else None
        for m in by.index:
            if not str(m).startswith(AXIS_PREFIX):
                continue
            ref = _num(oby.loc[m, statistic]) if oby is not None and m in oby.index else math.nan
            sign = 1 if ref > 0 else -1 if ref < 0 else 0
            v, lo, hi = (_num(by.loc[m, statistic + s]) for s in ("", "_low", "_high"))
            pv = _num(proxy[statistic]) if proxy is not None else math.nan
            signed = (v, lo, hi) if sign > 0 else (-v, -hi, -lo) if sign < 0 else (math.nan,) * 3
            out.append(
                {
                    "folder": f,
                    "axis": str(m)[len(AXIS_PREFIX) :],
                    "sign_from": o,
                    "sign": sign,
                    "statistic": statistic,
                    "value": signed[0],
                    "low": signed[1],
                    "high": signed[2],
                    "spectrum_adaptive": pv,
                    "spectrum_adaptive_low": _num(proxy[statistic + "_low"])
                    if proxy is not None
                    else math.nan,
                    "spectrum_adaptive_high": _num(proxy[statistic + "_high"])
                    if proxy is not None
                    else math.nan,
                    "beats_proxy": bool(math.isfinite(signed[0]) and signed[0] > pv),
                }
            )
    return out


def pair_answer(
    group: str,
    folders: Sequence[str],
    primary: Any,
    shares: Mapping[str, Sequence[float]],
    correlations: Mapping[str, Any],
) -> dict[str, Any]:
    """study.json's ``adaptivity`` record of one replicate pair: the group, ``answer`` (its
    dict, module doc), the axis rows (:func:`axis_rows`) and a sentence on whether any axis
    read off the grid ranks the gap better than the proxy."""
    a, b = (zoo_of(f, primary, shares.get(f, ())) for f in folders)
    out = {"group": group, **answer(a, b)}
    rows = axis_rows(folders, correlations)
    winners = sorted({f"{r['axis']} ({r['folder']})" for r in rows if r["beats_proxy"]})
    out["axes"] = rows
    out["axes_statement"] = (
        f"read off the grid with the other replicate's sign, {', '.join(winners)} ranks the gap "
        "better than the proxy on tau_arch (point estimates)"
        if winners
        else "no axis read off the grid ranks the gap better than the proxy on tau_arch "
        "(point estimates)"
        if rows
        else "no axis varies inside a cell"
    )
    return out
