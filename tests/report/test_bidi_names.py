"""Bidirectional controls and line breaks in names (issue 54, items 4 and 11): one function
(``naming.without_bidi``) strips U+202A-U+202E, U+2066-U+2069, U+200E, U+200F and U+061C
wherever a name reaches a page (the jinja environment), a figure (``style.plain_labels``) or
the terminal (``naming.printable``); a newline in a model folder's name is shown escaped."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from specbound.naming import BIDI_CONTROLS, printable, short_path, without_bidi
from tests.support.checkpoints import write_tiny_bert
from tests.support.cli_runner import run_cli

ALL_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
BIDI = re.compile(f"[{BIDI_CONTROLS}]")
RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "generalization" / "results"


def test_without_bidi_removes_every_bidi_control_and_nothing_else():
    text = "a" + ALL_BIDI + "b\u200dc\u00e9\n"  # ZWJ, é and a newline are not bidi controls
    assert without_bidi(text) == "ab\u200dc\u00e9\n"
    assert len(ALL_BIDI) == 12 and not BIDI.search(without_bidi(ALL_BIDI))


def test_printable_strips_bidi_and_escapes_a_newline():
    assert printable("mod\nel\u202eX") == "mod\\nelX"
    assert printable("a\nb", layout=True) == "a\nb"  # a caller's own line breaks stay
    assert short_path("/x/mod\nel") == "/x/mod\\nel"


def test_page_environment_strips_bidi_from_every_printed_text():
    from specbound.report.html import render

    html = str(render("_link.html", href="a.csv", text="ab\u202edcba"))
    assert "abdcba" in html and not BIDI.search(html)


def test_figure_labels_lose_bidi_controls(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    from specbound.report.figures.style import save

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="zoo\u202eA")
    ax.set_title("model\u2066x\u2069")
    ax.set_xlabel("axis\u200f")
    ax.set_yticks([0, 1])
    ax.set_yticklabels(["task\u061c", "m\u202d"])
    ax.legend()
    fig.suptitle("t\u202aitle")
    f = save(fig, tmp_path, "f", "title")
    svg = f.files[0].read_text(encoding="utf-8")
    assert not BIDI.search(svg)
    for word in ("zooA", "modelx", "axis", "task", "title"):
        assert word in svg


def _first_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if "bert" in ln]


def test_terminal_header_of_a_model_named_with_a_newline_is_one_line(tmp_path):
    """Before: the header was split in two at the name's newline."""
    model = write_tiny_bert(tmp_path / "mod\nel")
    r = run_cli("analyze", model, "--no-cache")
    assert r.code == 0, r.err
    header = _first_lines(r.out)
    assert len(header) == 1 and "mod\\nel" in header[0], r.out


def test_analysis_page_and_terminal_of_a_bidi_model_name(tmp_path):
    pytest.importorskip("matplotlib")
    model = write_tiny_bert(tmp_path / "ab\u202edcba")
    out = tmp_path / "out"
    r = run_cli("analyze", model, "--no-cache", "--report", "--out", out)
    assert r.code == 0, r.err
    assert not BIDI.search(r.out + r.err)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "abdcba" in html and not BIDI.search(html)
    for svg in out.rglob("*.svg"):
        assert not BIDI.search(svg.read_text(encoding="utf-8")), svg


def test_correlate_page_and_figures_of_bidi_model_and_zoo_names(tmp_path):
    pytest.importorskip("matplotlib")
    d = tmp_path / "c"
    shutil.copytree(RESULTS / "digits-arch", d, ignore=shutil.ignore_patterns("figures", "*.html"))
    m = pd.read_csv(d / "models.csv")
    m["model"] = [f"m\u202e{i}" for i in range(len(m))]
    m["zoo"] = "zoo\u202eA"
    m.to_csv(d / "models.csv", index=False, float_format="%.17g")
    out = tmp_path / "out"
    r = run_cli("correlate", d, "--out", out, "--bootstrap", "200")
    assert r.code == 0, r.err
    html = (out / "report.html").read_text(encoding="utf-8")
    assert not BIDI.search(html)
    svgs = list(out.rglob("*.svg"))
    assert svgs
    for svg in svgs:
        assert not BIDI.search(svg.read_text(encoding="utf-8")), svg
    assert not BIDI.search(r.out + r.err)
