"""One number formatter (issue 44): an undefined value is written as the glossary says
("undefined"), never ``nan``/``+nan``/``inf``, on every page and terminal table; and every
page, rendered from the autoescaping templates, escapes every user-derived string."""

from __future__ import annotations

import io
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.report.test_pages import (
    HOSTILE,
    _grokking_track,
    _hostile_correlation,
    _hostile_study,
    _safe,
)

pytest.importorskip("matplotlib")

RESULTS = Path(__file__).parents[2] / "benchmarks/generalization/results"
#: A number word a page must never show for an undefined value.
NAN_WORD = re.compile(r"(?<![\w-])[+-]?(nan|inf|infinity)(?![\w-])", re.IGNORECASE)
UNDEFINED_VALUES = [math.nan, None, pd.NA, np.float64("nan"), np.float32("nan")]


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECBOUND_CACHE_DIR", str(tmp_path / "cache"))


class _Text(HTMLParser):
    """The visible text of a page (no tags, no script, no style), written here with the
    standard library's parser only."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._skip += tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("script", "style")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def visible(html: str) -> str:
    p = _Text()
    p.feed(html)
    return " ".join(p.parts)


def _no_nan(html: str) -> None:
    text = visible(html)
    assert not NAN_WORD.search(text), NAN_WORD.search(text)


# --- the formatter -------------------------------------------------------------------------------


@pytest.mark.parametrize("v", UNDEFINED_VALUES)
def test_every_formatter_writes_undefined(v: object) -> None:
    from specbound.report import numbers as N

    for f in (N.fmt, N.sig3, N.sig_small, N.percent, lambda x: N.fixed(x, 3)):
        assert f(v) == "undefined"
    for s in ("+.3g", ".3f", ",.0f", ".4e"):
        assert N.spec(v, s) == "undefined"  # a sign spec never gives "+nan"
    assert N.interval(v, 1.0) == "no interval"


def test_beyond_float64_is_never_inf() -> None:
    from specbound.report import numbers as N

    for f in (N.fmt, N.sig3, N.sig_small, lambda x: N.spec(x, "+.3g")):
        assert f(math.inf) == "> 1.8e308" and f(-math.inf) == "< -1.8e308"


@pytest.mark.parametrize(
    "v", [0.0, -0.0, 1e-9, -0.004567, 0.12345, -2.5, 3.14159, 1234.5678, -98765.4321, 1.5e12]
)
def test_finite_values_read_back(v: float) -> None:
    """Parsed back (brute force: float() of the text), each format is within its own rounding
    of the value: half a unit of its last decimal, or of its third significant digit."""
    from specbound.report import numbers as N

    def back(text: str) -> float:
        return float(text.replace(",", "").rstrip("%"))

    assert abs(back(N.fixed(v, 3)) - v) <= 0.5e-3 * (1 + 1e-12)
    assert abs(back(N.spec(v, "+.3g")) - v) <= 0.5e-2 * abs(v) * (1 + 1e-12)
    tol = 0.5e-3 if abs(v) >= 0.01 else 0.5e-2 * abs(v)
    assert abs(back(N.sig_small(v)) - v) <= tol * (1 + 1e-12)
    assert not N.fixed(v, 3).startswith("-0.000") and N.spec(-0.0, ".3f") == "0.000"


# --- the terminal -------------------------------------------------------------------------------


def _primary_with_nan() -> pd.DataFrame:
    p = pd.read_csv(RESULTS / "study" / "primary.csv").head(3).copy()
    for c in ("delta", "low", "high", "p_holm"):
        p.loc[0, c] = np.nan  # a contrast without a statistic
    p["replicated"] = p["replicated"].astype(object)
    p.loc[1, "replicated"] = "yes"
    p.loc[2, "contrast"] = "[bold]P3[/bold]"  # rich markup in a user-derived cell
    for col, value in (("independence", "family"), ("overlaps", ""), ("shared_models", 0)):
        if col not in p:  # protocol v4 columns (a v3 primary.csv lacks them)
            p[col] = value
    if "verdict_stable" not in p:
        p["verdict_stable"] = "yes"
    return p


def test_study_terminal_table_never_prints_nan() -> None:
    from rich.console import Console

    from specbound.report.terminal_correlate import study_table

    console = Console(width=200, record=True, file=io.StringIO())
    primary = _primary_with_nan()
    console.print(study_table(primary))
    text = console.export_text()
    assert not NAN_WORD.search(text), text
    assert text.count("undefined") == 3  # delta, interval, p_holm of row 0
    assert "(replicated: yes)" in text and "[bold]P3[/bold]" in text
    row = primary.iloc[1]  # row 1 as the committed file has it
    assert f"{row['delta']:+.3f}" in text
    assert f"[{row['low']:+.3f}, {row['high']:+.3f}]" in text


# --- every page ---------------------------------------------------------------------------------


def test_scale_page_without_growth_fits(tmp_path: Path) -> None:
    from specbound.report.pages.scale import write_study

    study = _hostile_study()
    study.models.loc[0, ["spectrum_adaptive", "norm_based", "spectrum_adaptive_share_p0"]] = np.nan
    html = write_study(study, tmp_path).read_text()
    _safe(html)
    _no_nan(html)
    assert "(1 models beyond float64: undefined)" in visible(html)


def test_correlate_page_with_undefined_statistics(tmp_path: Path) -> None:
    from specbound.report.pages.correlate import write_correlation

    res = _hostile_correlation()
    c = res.correlation
    stats = [
        col for col in c.columns if col not in ("measure", "verdict") and c[col].dtype.kind == "f"
    ]
    c.loc[c["measure"] == HOSTILE, stats] = np.nan  # a measure without any statistic
    write_correlation(res, tmp_path / "c")
    html = (tmp_path / "c" / "report.html").read_text()
    _safe(html)
    _no_nan(html)


def test_study_page_escapes_and_writes_undefined(tmp_path: Path) -> None:
    from specbound.report.pages.study import report_html
    from specbound.studies.correlate.multizoo import Study

    prim = _primary_with_nan()
    prim.loc[1, ["folder", "role", "verdict", "evidence"]] = [
        f"results/{HOSTILE}",
        HOSTILE,
        HOSTILE,
        HOSTILE,
    ]
    ex = pd.read_csv(RESULTS / "study" / "exploratory.csv").head(4)
    ex.loc[0, ["measure", "q_bh"]] = [HOSTILE, np.nan]
    groups = [{"group": HOSTILE, "seeds": {HOSTILE: [HOSTILE]}, "replicated": {"P1": HOSTILE}}]
    html = report_html(Study(prim, ex, [HOSTILE], groups, [HOSTILE]), tmp_path)
    _safe(html)
    _no_nan(html)
    assert ">undefined<" in html


def test_trajectory_page_with_undefined_series(tmp_path: Path) -> None:
    from specbound.report.pages.trajectory import write_trajectory_report

    track = _grokking_track(tmp_path / "run")
    df = pd.read_csv(track / "track.csv")
    df.loc[::3, "norm_based"] = np.nan
    df["QK_mean_p_star"] = np.nan  # a series that is never defined
    df.to_csv(track / "track.csv", index=False)
    write_trajectory_report(track, tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text()
    _safe(html)
    _no_nan(html)
