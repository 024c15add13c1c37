"""The words of a trajectory page (``specbound trajectory``, SPEC 11), decided from the
track's rows and milestones so that ``report/`` only renders: which measures moved at the test
metric's step (by the half-change statistic, within :data:`NEAR` of the tracked range), training
instability after the plateau (train accuracy more than :data:`DIP` below its maximum), measures
that swing after the plateau (range above :data:`SWING` times their net change there) and the
rank-ceiling caveat (share p*=0 at least :data:`HIGH_SHARE`). Values with 3 significant digits."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..track import half_change_step
from .gap import resolve_gap
from .trajectory import FLAT_TOL, NET_TOL, PLATEAU, Phase, grokking_phase, plateau

if TYPE_CHECKING:
    import pandas as pd

#: A measure "moved at" a step when its half-change step lies within this share of the
#: tracked step range of it.
NEAR = 0.05
#: Training instability: an evaluation after the plateau step whose train accuracy lies more
#: than this below its maximum is a dip.
DIP = 0.1
#: A measure swings after the plateau when its range there exceeds this many times its net
#: change there (it goes back and forth more than it drifts).
SWING = 2.0
#: The rank-ceiling caveat is stated when share p*=0 reaches this at some evaluation.
HIGH_SHARE = 0.5


def sig3(v: float) -> str:
    """A measured value with 3 significant digits ("n/a" when not finite)."""
    return f"{v:.3g}" if math.isfinite(v) else "n/a"


def instability(df: pd.DataFrame) -> str | None:
    """The sentence naming training instability after the plateau: how many later evaluations
    have train accuracy more than DIP below its maximum (None when there are none)."""
    pl = plateau(df)
    if pl is None:
        return None
    steps = df["step"].to_numpy(dtype=float)
    tr = df[pl.train].to_numpy(dtype=float)
    later = (steps > pl.start) & np.isfinite(tr)
    dips = later & (tr < pl.top - DIP)
    n = int(dips.sum())
    if n == 0:
        return None
    low = int(np.argmin(np.where(dips, tr, np.inf)))
    return (
        f"Training was unstable after the plateau: {pl.train} fell more than {DIP:g} below its "
        f"maximum ({sig3(pl.top)}) at {n:,} of the {int(later.sum()):,} evaluations after step "
        f"{pl.start:,.0f} (lowest {sig3(float(tr[low]))} at step {steps[low]:,.0f})."
    )


def swinging(df: pd.DataFrame, names: list[str]) -> tuple[float, list[str]] | None:
    """(plateau step, measures of ``names`` whose range after the plateau exceeds SWING times
    their net change there); None without a plateau."""
    pl = plateau(df)
    if pl is None:
        return None
    steps = df["step"].to_numpy(dtype=float)
    out = []
    for m in names:
        v = df[m].to_numpy(dtype=float)
        x = v[(steps >= pl.start) & np.isfinite(v)]
        if x.size < 3:
            continue
        span, net = float(x.max() - x.min()), abs(float(x[-1] - x[0]))
        if span > FLAT_TOL * float(np.abs(x).max()) and span > SWING * net:
            out.append(m)
    return pl.start, out


def ceiling_caveat(df: pd.DataFrame) -> str | None:
    """The rank-ceiling caveat when share p*=0 reaches HIGH_SHARE at some evaluation
    (``spectrum_adaptive_share_p0``; else the per-type shares), None otherwise."""
    steps = df["step"].to_numpy(dtype=float)
    tail = (
        ": where most matrices pick p* = 0 the spectrum-adaptive proxy counts ranks (c(A, 0) "
        "= sqrt(rank x N)), so its changes there are rank changes, not the trained spectra's; "
        "at 100% it equals the rank ceiling."
    )
    col = "spectrum_adaptive_share_p0"
    if col in df.columns:
        sh = df[col].to_numpy(dtype=float)
        if not np.isfinite(sh).any() or float(np.nanmax(sh)) < HIGH_SHARE:
            return None
        i = int(np.nanargmax(sh))
        n_high = int((sh >= HIGH_SHARE).sum())
        gap_col = "spectrum_adaptive_ceiling_gap"
        gap = ""
        if gap_col in df.columns and np.isfinite(float(df[gap_col].iloc[i])):
            gap = f", ceiling gap {sig3(float(df[gap_col].iloc[i]))} in log10"
        return (
            f"Rank ceiling: share p*=0 reaches {100 * float(sh[i]):.3g}% at step "
            f"{steps[i]:,.0f}{gap} (at least {100 * HIGH_SHARE:.0f}% at {n_high:,} of "
            f"{len(sh):,} evaluations){tail}"
        )
    high = []
    for t in ("QK", "OV", "M_in", "M_out"):
        c = f"{t}_share_p0"
        if c in df.columns:
            sh = df[c].to_numpy(dtype=float)
            if np.isfinite(sh).any() and float(np.nanmax(sh)) >= HIGH_SHARE:
                i = int(np.nanargmax(sh))
                high.append(f"{t} {100 * float(sh[i]):.3g}% (step {steps[i]:,.0f})")
    if not high:
        return None
    return f"Rank ceiling: share p*=0 reaches {', '.join(high)}{tail}"


def test_metric_step(df: pd.DataFrame) -> tuple[str, float] | None:
    """The test metric and its half-change step (accuracy first, then loss)."""
    g = resolve_gap(df.columns, "auto", strict=False)
    if g is None:
        return None
    h = half_change_step(df["step"].to_numpy(dtype=float), df[g.test].to_numpy(dtype=float))
    return None if h is None else (g.test, float(h))


#: What every claim about when a measure moved rests on.
BY_HALF_CHANGE = (
    "By the half-change statistic (the step by which a series covered half its net change)"
)
NO_TEST_METRIC = (
    "No test metric was recorded, so the page cannot say whether any measure moved "
    "with generalization; the table gives each measure's half-change step."
)
ONE_NUMBER_CAVEAT = (
    "Caveat: a half-change step summarizes a whole curve in one number; a measure can "
    "change shape at the grokking step without its half-change step moving there (see the "
    "mean p* panel and each measure's panel)."
)


def half_change_steps(ms: pd.DataFrame) -> tuple[dict[str, float], list[str]]:
    """({measure: its half-change step} of the milestones' measures that have one, the
    measures without one: they do not move)."""
    measures = ms[ms["kind"] == "measure"]
    half = {
        r.series: float(r.half_change_step)
        for r in measures.itertuples()
        if r.half_change_step is not None and not math.isnan(float(r.half_change_step))
    }
    return half, [m for m in measures["series"] if m not in half]


def timing_sentences(
    half: dict[str, float], test: tuple[str, float], near: float, grokking: bool
) -> list[str]:
    """Which measures moved at the test metric's half-change step (their own within ``near``
    steps of it), which earlier, which later; the step is "the grokking step" when
    ``grokking``."""
    name, t = test
    at = sorted((m for m, h in half.items() if abs(h - t) <= near), key=lambda m: half[m])
    before = sorted((m for m, h in half.items() if h < t - near), key=lambda m: half[m])
    after = sorted((m for m, h in half.items() if h > t + near), key=lambda m: half[m])
    where = "the grokking step" if grokking else f"the step where {name} moved"
    if at:
        out = [
            f"{BY_HALF_CHANGE}, {len(at)} of {len(half)} measures moved at {where} (step "
            f"{t:,.0f}, within {near:,.0f} steps): {', '.join(at)}."
        ]
    else:
        out = [
            f"{BY_HALF_CHANGE}, no measure moved at {where} (step {t:,.0f}, half-change of {name})."
        ]
    if before:
        last = max(half[m] for m in before)
        out.append(
            f"By the same statistic, {len(before)} moved earlier (half-change by step "
            f"{last:,.0f}): {', '.join(before)}; moving early is not anticipating: they moved "
            "with training."
        )
    if after:
        out.append(f"By the same statistic, {len(after)} moved later: {', '.join(after)}.")
    return out


def swing_sentence(df: pd.DataFrame, half: dict[str, float]) -> str | None:
    """The sentence naming the measures that swing after the plateau (:func:`swinging`), which
    the half-change statistic does not see; None when none does."""
    sw = swinging(df, list(half))
    if sw is None or not sw[1]:
        return None
    return (
        f"The statistic does not see swings: after the plateau (step {sw[0]:,.0f}), "
        f"{len(sw[1])} of {len(half)} measures range over more than {SWING:g} times their "
        f"net change there ({', '.join(sw[1])}): they go back and forth after the "
        "plateau, which a single step cannot summarize; see their panels."
    )


def phase_sentence(phase: Phase | None) -> str | None:
    """The grokking phase (``trajectory.grokking_phase``) in words; None without one."""
    if phase is None:
        return None
    return (
        f"Grokking phase detected: {phase.train} first reached its plateau (within "
        f"{PLATEAU:g} of its maximum) at step {phase.start:,.0f}; {phase.test} reached half "
        f"of its rise only at step {phase.end:,.0f} (shaded in the figures)."
    )


def answer_sentences(df: pd.DataFrame, ms: pd.DataFrame) -> list[str]:
    """The page's answer in plain words, from the milestones table; every claim about when a
    measure moved is scoped to the half-change statistic it rests on."""
    steps = df["step"].to_numpy(dtype=float)
    span = float(steps.max() - steps.min()) or 1.0
    phase = grokking_phase(df)
    test = test_metric_step(df)
    half, flat = half_change_steps(ms)
    if test is None:
        return [NO_TEST_METRIC]
    out = timing_sentences(half, test, NEAR * span, phase is not None)
    if flat:
        out.append(
            f"Undefined (the series does not move, so it has no half-change step): "
            f"{', '.join(flat)}."
        )
    later = (swing_sentence(df, half), phase_sentence(phase), instability(df), ceiling_caveat(df))
    out += [s for s in later if s]
    out.append(ONE_NUMBER_CAVEAT)
    return out


def half_change_rule() -> str:
    """What the milestones' half-change step is, with the thresholds of
    ``studies.trajectory.movement`` (:data:`~specbound.studies.trajectory.NET_TOL`,
    :data:`~specbound.studies.trajectory.FLAT_TOL`) under which a series does not move."""
    return (
        "Half-change step: the first step at which a series had covered half of "
        "its net change from the first to the last evaluation; undefined when the series "
        f"does not move (net change below {100 * NET_TOL:g}% of its range, or a range "
        f"below {FLAT_TOL:g} of its size)."
    )
