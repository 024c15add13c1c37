"""``specbound trajectory``: the report page of a ``track.csv`` (SPEC 11).

The page opens with the answer, from the milestones table: whether a grokking phase was
detected (train accuracy at its plateau long before test accuracy moved) and which measures
moved at the test metric's step ("no measure moved at the grokking step"), with the caveat that
a half-change step is one summary of a curve. Then the metrics and mean p* panels, one panel
per measure, the milestones and every row (paged). The file is read by ``track.read_track``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import SpecboundError
from ...studies.gap import resolve_gap
from ..html import escape, figure_html, page, table

if TYPE_CHECKING:
    import pandas as pd

#: A measure "moved at" a step when its half-change step lies within this share of the
#: tracked step range of it.
NEAR = 0.05
#: Grokking: train accuracy within this of its maximum ...
PLATEAU = 0.02
#: ... at least this share of the step range before test accuracy's half-change step, and
#: test accuracy rising by at least this much overall.
MIN_DELAY, MIN_RISE = 0.1, 0.2


def load_track(path: str | Path) -> pd.DataFrame:
    """The rows of a track.csv (``track.read_track``: the one reader)."""
    from ...track import read_track

    return read_track(path)


def _gap(df: pd.DataFrame, kind: str) -> Any:
    from ...studies.gap import normalize_kind

    normalize_kind(kind, "--gap")
    return resolve_gap(df.columns, kind, strict=False)


def gap(df: pd.DataFrame, kind: str = "auto") -> tuple[str, np.ndarray] | None:
    """(label, values) of the generalization gap (``studies.gap``), or None without metrics."""
    g = _gap(df, kind)
    return None if g is None else (g.label, g.values(df))


def measure_columns(df: pd.DataFrame) -> list[str]:
    """The measure columns of ``df`` with at least one finite value, in SPEC 9 order."""
    from ...track import all_data_measure_names, all_measure_names

    return [
        m
        for m in [*all_measure_names(), *all_data_measure_names()]
        if m in df.columns and np.isfinite(df[m].to_numpy(dtype=float)).any()
    ]


def metric_columns(df: pd.DataFrame) -> list[str]:
    """The columns the training loop reported (not computed by the tracker)."""
    from ...track import (
        ANALYSIS_COLUMNS,
        BASE_COLUMNS,
        NOTE_COLUMNS,
        TYPE_COLUMNS,
        all_data_measure_names,
        all_measure_names,
        computed_columns,
    )

    known = {*BASE_COLUMNS, *TYPE_COLUMNS, *ANALYSIS_COLUMNS, *NOTE_COLUMNS}
    known |= {*all_measure_names(), *all_data_measure_names(), *computed_columns()}
    return [c for c in df.columns if c not in known]


def _milestone(name: str, kind: str, steps: np.ndarray, v: np.ndarray) -> dict[str, Any]:
    from ...track import half_change_step

    ok = np.isfinite(v)
    return {
        "series": name,
        "kind": kind,
        "first": float(v[ok][0]) if ok.any() else None,
        "last": float(v[ok][-1]) if ok.any() else None,
        "half_change_step": half_change_step(steps, v),
    }


def milestones(df: pd.DataFrame, gap_kind: str = "auto") -> pd.DataFrame:
    """Per measure (and metric): first and last value and the step by which half of the net
    change had happened (``track.half_change_step``)."""
    import pandas as pd

    steps = df["step"].to_numpy(dtype=float)
    rows = [
        _milestone(m, "measure", steps, df[m].to_numpy(dtype=float)) for m in measure_columns(df)
    ]
    rows += [
        _milestone(m, "metric", steps, df[m].to_numpy(dtype=float)) for m in metric_columns(df)
    ]
    g = gap(df, gap_kind)
    if g is not None:
        rows.append(_milestone(g[0], "gap", steps, g[1]))
    return pd.DataFrame(rows, columns=["series", "kind", "first", "last", "half_change_step"])


@dataclass(frozen=True)
class Phase:
    """A detected grokking phase: train accuracy at its plateau from ``start``; test
    accuracy's half-change step ``end``."""

    train: str
    test: str
    start: float
    end: float


def grokking_phase(df: pd.DataFrame) -> Phase | None:
    """The grokking phase, or None: train accuracy within PLATEAU of its maximum at step t0,
    test accuracy rising by >= MIN_RISE with its half-change step t1 >= t0 + MIN_DELAY x range."""
    from ...track import half_change_step

    g = resolve_gap(df.columns, "accuracy", strict=False)
    if g is None:
        return None
    steps = df["step"].to_numpy(dtype=float)
    tr, te = df[g.train].to_numpy(dtype=float), df[g.test].to_numpy(dtype=float)
    ok_tr, ok_te = np.isfinite(tr), np.isfinite(te)
    if ok_tr.sum() < 3 or ok_te.sum() < 3:
        return None
    span = float(steps.max() - steps.min()) or 1.0
    t0 = float(steps[ok_tr][np.argmax(tr[ok_tr] >= np.max(tr[ok_tr]) - PLATEAU)])
    t1 = half_change_step(steps, te)
    rise = float(te[ok_te][-1] - te[ok_te][0])
    if t1 is None or rise < MIN_RISE or t1 - t0 < MIN_DELAY * span:
        return None
    return Phase(g.train, g.test, t0, float(t1))


def _test_series(df: pd.DataFrame) -> tuple[str, float] | None:
    """The test metric and its half-change step (accuracy first, then loss)."""
    from ...track import half_change_step

    g = resolve_gap(df.columns, "auto", strict=False)
    if g is None:
        return None
    h = half_change_step(df["step"].to_numpy(dtype=float), df[g.test].to_numpy(dtype=float))
    return None if h is None else (g.test, float(h))


def answer_sentences(df: pd.DataFrame, ms: pd.DataFrame) -> list[str]:
    """The page's answer in plain words, from the milestones table."""
    steps = df["step"].to_numpy(dtype=float)
    span = float(steps.max() - steps.min()) or 1.0
    near = NEAR * span
    phase = grokking_phase(df)
    test = _test_series(df)
    measures = ms[ms["kind"] == "measure"]
    half = {
        r.series: float(r.half_change_step)
        for r in measures.itertuples()
        if r.half_change_step is not None and not math.isnan(float(r.half_change_step))
    }
    flat = [m for m in measures["series"] if m not in half]
    out: list[str] = []
    if test is None:
        out.append(
            "No test metric was recorded, so the page cannot say whether any measure moved "
            "with generalization; the table gives each measure's half-change step."
        )
        return out
    name, t = test
    at = sorted((m for m, h in half.items() if abs(h - t) <= near), key=lambda m: half[m])
    before = sorted((m for m, h in half.items() if h < t - near), key=lambda m: half[m])
    after = sorted((m for m, h in half.items() if h > t + near), key=lambda m: half[m])
    where = "the grokking step" if phase is not None else f"the step where {name} moved"
    if at:
        out.append(
            f"{len(at)} of {len(half)} measures moved at {where} (step {t:,.0f}, within "
            f"{near:,.0f} steps): {', '.join(at)}."
        )
    else:
        out.append(f"No measure moved at {where} (step {t:,.0f}, half-change of {name}).")
    if before:
        last = max(half[m] for m in before)
        out.append(
            f"{len(before)} moved earlier (half-change by step {last:,.0f}): "
            f"{', '.join(before)}; moving early is not anticipating: they moved with training."
        )
    if after:
        out.append(f"{len(after)} moved later: {', '.join(after)}.")
    if flat:
        out.append(f"No net change: {', '.join(flat)}.")
    if phase is not None:
        out.append(
            f"Grokking phase detected: {phase.train} was at its plateau by step "
            f"{phase.start:,.0f}, {phase.test} reached half of its rise only at step "
            f"{phase.end:,.0f} (shaded in the figures)."
        )
    out.append(
        "Caveat: a half-change step summarizes a whole curve in one number; a measure can "
        "change shape at the grokking step without its half-change step moving there (see the "
        "mean p* panel and each measure's panel)."
    )
    return out


def write_trajectory_report(track: str | Path, out: str | Path, gap_kind: str = "auto") -> Path:
    """Write ``out``/report.html, figures/ (metrics, trajectory; PNG, PDF, SVG) and a copy of
    the validated track.csv, through ``io.output_dir`` (all or nothing)."""
    from ...io import output_dir
    from ...track import TRACK_CSV
    from ..figures import trajectory as F
    from ..figures.style import require_matplotlib

    require_matplotlib()
    df = load_track(track)
    g = _gap(df, gap_kind)
    names = measure_columns(df)
    if not names:
        raise SpecboundError("track.csv holds no measure values to plot")
    phase = grokking_phase(df)
    ph = None if phase is None else (phase.start, phase.end)
    test = _test_series(df)
    with output_dir(out) as tmp:
        tmp = Path(tmp)
        figs = [
            F.metrics_figure(df, tmp / "figures", g, ph),
            F.trajectory_figure(df, tmp / "figures", names, ph, None if test is None else test[1]),
        ]
        df.to_csv(tmp / TRACK_CSV, index=False, float_format="%.17g")  # validated rows
        ms = milestones(df, gap_kind)
        spent = float(df["analysis_s"].sum())
        total = float(df["wall_s"].max()) + float(df["analysis_s"].iloc[-1])
        share_text = f"{100 * spent / total:.2g}%" if total > 0 else "an unknown share"
        said = answer_sentences(df, ms)
        answer = (
            '<div class="answer">'
            + f'<p class="lead"><b>{escape(said[0])}</b></p>'
            + "".join(f"<p>{escape(s)}</p>" for s in said[1:])
            + f"<p>{len(df):,} evaluations from step {int(df['step'].min()):,} to "
            f"{int(df['step'].max()):,}; analysis took {spent:.3g} s in all, {share_text} of "
            "the wall time up to the last evaluation."
            + (
                f" Gap: {escape(g.label)}."
                if g is not None
                else " No gap: the loop reported no train/test accuracy or loss pair."
            )
            + "</p><p>Half-change step: the first step at which a series had covered half of "
            "its net change from the first to the last evaluation.</p></div>"
        )
        sections = [
            answer,
            "<h2>Trajectory</h2>" + "".join(figure_html(f) for f in figs if f is not None),
            "<h2>When each series moved</h2>" + table(ms),
            f"<h2>Rows ({escape(TRACK_CSV)}, all {len(df):,})</h2>" + table(df, page_size=50),
        ]
        (tmp / "report.html").write_text(page("specbound trajectory", sections), encoding="utf-8")
    return Path(out)
