"""The study and correlate pages of protocol v4 (issue 45 item 5): the study page opens with
the answer, the sign convention and the independent zoos, then a forest plot with one row per
primary contrast (secondary rows apart); a folder page says "this zoo alone" beside every
verdict and shows correlation.csv in Jiang et al.'s compact form; scatter axes in numeric
order, models at the rank ceiling marked, log axes for measures spanning decades."""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

HOSTILE = "x<script>alert(3)</script>"


def _primary() -> pd.DataFrame:
    """Four family rows of two folders and two secondary rows (a pooled folder), one row
    with both interval ends undefined."""
    rows = []
    spec = [
        ("results/a", "family", "P1", -0.12, -0.24, -0.03, "worse"),
        ("results/a", "family", "P2", 0.16, 0.04, 0.30, "better"),
        ("results/b", "family", "P1", 0.02, np.nan, np.nan, "insufficient evidence"),
        ("results/b", "family", "P2", 0.05, -0.05, 0.15, "undetermined"),
        ("results/pooled", "secondary", "P1", -0.10, -0.20, 0.01, "undetermined"),
        ("results/pooled", "secondary", "P2", 0.12, 0.02, 0.22, "better"),
    ]
    for folder, ind, c, d, lo, hi, v in spec:
        rows.append(
            {
                "folder": folder,
                "task": "digits",
                "role": "single",
                "contrast": c,
                "measure": "spectrum_adaptive",
                "versus": "norm_based" if c == "P1" else "num_parameters",
                "statistic": "tau_fixed_n",
                "delta": d,
                "low": lo,
                "high": hi,
                "B": 10000,
                "p": 0.01,
                "p_holm": 0.02,
                "verdict": v,
                "verdict_stable": "yes" if ind == "family" else "",
                "evidence": "B = 10000",
                "replicated": "",
                "independence": ind,
                "overlaps": "results/a" if ind == "secondary" else "",
                "shared_models": 144 if ind == "secondary" else 0,
            }
        )
    return pd.DataFrame(rows)


def _study() -> object:
    from specbound.studies.correlate.multizoo import Study

    sec = [{"folder": "results/pooled", "overlaps": "results/a", "shared_models": 144}]
    return Study(_primary(), pd.DataFrame(), ["results/a", "results/b"], [], [], sec)


def _text(html: str) -> str:
    return html_lib.unescape(re.sub(r"<[^>]+>", " ", html))


# --- the forest plot -----------------------------------------------------------------------


def test_forest_has_one_row_per_primary_contrast_secondary_apart(tmp_path: Path) -> None:
    """Rows named by the two measures compared; the verdict by marker as well as colour; the
    legend above the panels; numbers on every panel's x axis."""
    from specbound.report.figures.study import VERDICT_STYLE, forest_figure, forest_rows

    fam, sec = forest_rows(_primary())
    p1, p2 = "spectrum_adaptive − norm_based", "spectrum_adaptive − num_parameters"
    assert [r["label"] for r in fam] == [f"a: {p1}", f"a: {p2}", f"b: {p1}", f"b: {p2}"]
    assert [r["label"] for r in sec] == [f"pooled: {p1}", f"pooled: {p2}"]
    markers = [m for _, m in VERDICT_STYLE.values()]
    assert len(set(markers)) == len(markers)  # a shape per verdict, not colour alone
    fig = forest_figure(_primary(), tmp_path)
    assert fig is not None
    svg = fig.files[0].read_text(encoding="utf-8")
    for label in [f"a: {p1}", f"a: {p2}", f"b: {p1}", f"b: {p2}", f"pooled: {p1}"]:
        assert svg.count(label) == 1, label  # one y label per row, no other text
    assert "Secondary folders" in svg and "Independent zoos" in svg
    axes = re.findall(r'<g id="axes_\d+">', svg)
    assert len(axes) == 2
    # every panel has x tick labels (matplotlib writes one text group per tick label)
    for ax in re.split(r'<g id="axes_\d+">', svg)[1:]:
        assert re.search(r'<g id="xtick_\d+">', ax) and "text_" in ax.split('<g id="ytick')[0]


def test_forest_splits_tau_n_and_tau_arch(tmp_path: Path) -> None:
    from specbound.report.figures.study import forest_figure

    prim = _primary()
    prim.loc[prim["folder"] == "results/b", "statistic"] = "tau_arch"
    fig = forest_figure(prim, tmp_path)
    assert fig is not None
    svg = fig.files[0].read_text(encoding="utf-8")
    assert len(re.findall(r'<g id="axes_\d+">', svg)) == 3  # family τ_n, family τ_arch, secondary


# --- the study page --------------------------------------------------------------------------


def _answer_block(html: str) -> str:
    m = re.search(r'<div class="answer" id="answer">(.*?)</div>', html, re.S)
    assert m, "the study page opens with its answer"
    return m.group(1)


def test_study_page_opens_with_the_generated_answer(tmp_path: Path) -> None:
    from specbound.report.pages.study import report_html

    html = report_html(_study(), tmp_path)
    body = html.split("</h1>", 1)[1]
    assert body.lstrip().startswith('<div class="answer" id="answer">')
    ans = _text(_answer_block(html))
    # one plain sentence first: the family rows only, counted here from the table above
    first = re.search(r'<p class="lead"><b>(.*?)</b></p>', html, re.S)
    assert first
    assert _text(first.group(1)) == (
        "On 2 independent zoos (1 task), comparing models trained on the same number of "
        "examples, the spectrum-adaptive proxy ranked the generalization gap better than the "
        "norm-based proxy in 0 and worse in 1 (no clear difference in 1), and better than "
        "plain measures (parameter count) in 1 and worse in 0 (no clear difference in 1)."
    )
    for word in ("P1", "τ", "Holm", "[C"):
        assert word not in _text(first.group(1))
    # the tally names the two measures of each comparison
    assert (
        "the spectrum-adaptive proxy against the norm-based proxy (P1, τ_n (at equal "
        "training-set size); 2 zoos): 1 worse, 1 insufficient evidence" in ans
    )
    text = _text(html)
    assert "delta = statistic of the first measure − statistic of the second" in text
    assert "rests on 2 independent zoos" in text
    # secondary rows decided either way are listed (here the favourable one)
    assert "better in 1: pooled (the spectrum-adaptive proxy against parameter count)" in text
    assert "[undefined, undefined]" not in text and "no interval" in text
    assert "verdict stable" in text
    assert "pooled: shares 144 models with a" in text
    assert "protocol v3" not in text
    # the forest plot comes right after the answer
    assert html.index('id="forest"') < html.index('id="family"') if 'id="forest"' in html else 1


def test_study_page_takes_the_answer_text_escaped(tmp_path: Path) -> None:
    from specbound.report.pages.study import report_html

    answer = f"# The answer\n\nFirst {HOSTILE}\nparagraph.\n\n\nSecond paragraph.\n"
    html = report_html(_study(), tmp_path, answer)
    block = _answer_block(html)
    assert "<script>alert" not in html
    assert "&lt;script&gt;" in block
    paras = re.findall(r"<p[^>]*>(.*?)</p>", block.split("<details", 1)[1], re.S)
    assert paras[:3] == [
        "<b>The answer</b>",
        f"First {html_lib.escape(HOSTILE, quote=True)} paragraph.".replace("&#x27;", "&#39;"),
        "Second paragraph.",
    ]


def test_study_cli_answer_file(tmp_path: Path) -> None:
    from tests.support.cli_runner import run_cli

    (tmp_path / "a").mkdir()
    r = run_cli("study", str(tmp_path / "a"), "--answer", str(tmp_path / "missing.md"),
                "--out", str(tmp_path / "out"))  # fmt: skip
    assert r.code == 2
    assert "--answer" in r.one_error_line() and "cannot read" in r.one_error_line()
    assert not (tmp_path / "out").exists()


# --- the correlate folder page ---------------------------------------------------------------


def _correlation() -> object:
    from specbound.studies import correlate as C
    from specbound.studies.correlate.ceiling import rank_ceiling
    from specbound.studies.correlate.table import correlation_study

    rng = np.random.default_rng(1)
    rows = [
        {"model": f"d{d}w{w}lr{lr}s{s}", "depth": d, "width": w, "lr": lr, "seed": s}
        for d in (1, 2)
        for w in (32, 64)
        for lr in (0.001, 0.01, 0.1)
        for s in range(2)
    ]
    m = pd.DataFrame(rows)
    m["gap"] = rng.uniform(0, 0.3, len(m))
    m["spectrum_adaptive"] = m["gap"] * 3 + rng.normal(0, 0.05, len(m))
    m["norm_based"] = m["gap"] + rng.normal(0, 0.1, len(m))
    m["num_parameters"] = (m["depth"] * m["width"] ** 2).astype(float)
    m["spectrum_adaptive_ceiling_gap"] = np.where(m["lr"] == 0.001, 0.0, 0.05)
    measures = ["spectrum_adaptive", "norm_based", "num_parameters"]
    axes = ["depth", "width", "lr"]
    t = correlation_study(m, measures, axes, bootstrap=1000, seed=0)
    return C.Correlation(
        m,
        t.correlation,
        pd.DataFrame({"model": [], "reason": []}),
        axes,
        measures,
        task="digits",
        manifest="zoo.csv",
        n_listed=len(m),
        bootstrap=1000,
        differences=t.differences,
        rank_ceiling=rank_ceiling(m),
        n_configurations=t.n_configurations,
    )


@pytest.fixture(scope="module")
def correlate_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, str]:
    from specbound.report.pages.correlate import write_correlation

    root = tmp_path_factory.mktemp("cor")
    res = _correlation()
    (root / "study").mkdir()
    (root / "study" / "report.html").write_text("study")
    write_correlation(res, root / "zoo")
    return res, (root / "zoo" / "report.html").read_text(encoding="utf-8")


def test_every_verdict_of_a_folder_page_says_this_zoo_alone(correlate_page) -> None:
    res, html = correlate_page
    table = re.search(r'<table id="primary"[^>]*>(.*?)</table>', html, re.S)
    assert table, "the primary table"
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)[1:]
    n = int((res.differences["family"] == "primary").sum())
    assert len(rows) == n >= 1  # A1 on tau_arch: cells of several lr
    lead = re.search(r'<p class="lead">(.*?)</p>', html, re.S)
    assert lead and f"this zoo alone (Holm over its own {n} primary rows)" in _text(lead.group(1))
    assert '<a href="../study/report.html">' in lead.group(1)
    # the bold lead states the primary rows first, before any single measure's statistic
    bold = re.search(r"<b>(.*?)</b>", lead.group(1), re.S)
    assert bold and _text(bold.group(1)).startswith("Primary contrasts")
    assert "predicts the gap" not in _text(bold.group(1))
    assert "protocol v5" in html and "protocol v4" not in html
    assert "verdict stable" in table.group(1)


def test_compact_table_has_one_row_per_measure(correlate_page) -> None:
    res, html = correlate_page
    section = html.split("Jiang et al.'s form", 1)[1].split("</table>", 1)[0]
    head = re.findall(r"<th [^>]*>(.*?)</th>", section)
    body = section.split("<tbody>", 1)[1]
    rows = re.findall(r"<tr>", body)
    assert len(rows) == len(res.correlation) == 3
    assert head[:2] == ["measure", "τ"] and "Ψ" in head and "CMI (min)" in head
    assert len(head) < 15  # not the raw dump of correlation.csv's columns
    assert len(res.correlation.columns) > 30
    assert '<a href="correlation.csv">correlation.csv</a>' in html


# --- figures ---------------------------------------------------------------------------------


def test_numeric_axes_in_numeric_order() -> None:
    from specbound.report.figures.correlate import ordered_groups

    codes, labels = ordered_groups(pd.DataFrame({"train_size": [600, 75, 200, 75]}))
    assert labels == ["75", "200", "600"] and codes.tolist() == [2, 0, 1, 0]
    _, labels = ordered_groups(pd.DataFrame({"lr": ["0.01", "0.001", "0.1"]}))
    assert labels == ["0.001", "0.01", "0.1"]
    _, labels = ordered_groups(pd.DataFrame({"depth": [2, 10, 2], "width": [64, 32, 128]}))
    assert labels == ["2 x 64", "2 x 128", "10 x 32"]


def test_scatter_marks_the_ceiling_and_logs_wide_measures(correlate_page, tmp_path: Path) -> None:
    from specbound.report.figures.correlate import measure_figure, wants_log

    res, _ = correlate_page
    fig = measure_figure(res, "spectrum_adaptive", tmp_path)
    n_at = int((res.models["spectrum_adaptive_ceiling_gap"] < 1e-3).sum())
    assert n_at == 8 and f"x: {n_at} models at the rank ceiling" in fig.caption
    assert "at the rank ceiling" in fig.files[0].read_text(encoding="utf-8")  # legend entry
    assert wants_log(np.array([1.0, 50.0, 1000.0])) == (1.0, 1000.0)
    assert wants_log(np.array([1.0, 50.0])) is None
    assert wants_log(np.array([-1.0, 500.0])) is None
    fig = measure_figure(res, "num_parameters", tmp_path)
    assert "log x axis" not in fig.caption  # 32^2 .. 2 x 64^2 spans less than 2 decades


# --- the ladder (scale) page -----------------------------------------------------------------


def _ladder() -> object:
    """2 L x 3 N models; the proxy reaches its rank ceiling at the largest N (share p*=0 = 1)."""
    import math

    from specbound.studies.scale import Study
    from specbound.studies.scale.fit import growth_table

    rows = []
    for L in (1, 2):
        for k, N in enumerate((32, 64, 128)):
            ceiling = 0.5 * math.log10(N) + 0.2 * L + 1.0
            gap = (0.4, 0.1, 0.0)[k]
            rows.append(
                {
                    "model": f"m/L{L}_N{N}",
                    "num_layers": L,
                    "hidden_size": N,
                    "spectrum_adaptive": ceiling - gap,
                    "norm_based": 3.0 * math.log10(N) + 0.5 * L + 0.01 * k,
                    "log10_spectrum_adaptive_ceiling": ceiling,
                    "spectrum_adaptive_ceiling_gap": gap,
                    "spectrum_adaptive_share_p0": (0.2, 0.7, 1.0)[k],
                    "test_acc": 0.8 + 0.01 * k,
                    "steps": 100 * (k + 1),
                }
            )
    models = pd.DataFrame(rows)
    return Study(models, growth_table(models), title="ladder")


def test_ladder_page_draws_the_ceiling_and_shows_training(tmp_path: Path) -> None:
    from specbound.report.pages.scale import write_study

    study = _ladder()
    out = tmp_path / "benchmarks" / "generalization" / "results" / "ladder"
    (tmp_path / "benchmarks" / "generalization" / "README.md").parent.mkdir(parents=True)
    (tmp_path / "benchmarks" / "generalization" / "README.md").write_text("# study\n")
    study.to_dir(out, extra=lambda tmp: write_study(study, tmp))
    html = (out / "report.html").read_text(encoding="utf-8")
    text = _text(html)
    assert '<a href="../../README.md">README</a>' in html
    assert "Training: test accuracy 0.800 to 0.820" in text and "steps 100 to 300" in text
    head = re.findall(r'<th [^>]*title="([^"]+)"', html)
    assert "test_acc" in head and "steps" in head
    assert "shape its growth" not in text
    assert (out / "figures" / "rank_ceiling.svg").is_file()
    assert "Dash-dot (spectrum-adaptive panel): the rank ceiling" in text


def test_answer_markdown_renders_the_subset_safely() -> None:
    """answer.md is Markdown: bold, lists and code render, the comment is dropped, "p* = 0"
    keeps its asterisk (it became "p = 0"), [Cn] links to a listed claim's row only, and
    every other character is escaped."""
    from specbound.report.html_markdown import render_markdown

    text = "<!-- a note\nfor editors -->\n\n**The answer.** One `x<y>`.\n\n"
    text += "1. **first** a [C1]\n   continued\n2. second 2*3, p* = 0 and *it* [C9]\n"
    out = str(render_markdown(text, {"C1"}))
    assert "a note" not in out
    assert out.startswith("<p><b>The answer.</b> One <code>x&lt;y&gt;</code>.</p>")
    assert '<ol><li><b>first</b> a <a href="#claim-C1">[C1]</a> continued</li>' in out
    assert "p* = 0" in out and "2*3" in out and "<i>it</i>" in out
    assert "[C9]" in out and "#claim-C9" not in out
