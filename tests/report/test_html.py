"""report.html: self-contained, opens with the answer; optional headless-Chromium check."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

import specbound
from specbound.cli import app
from specbound.report.html import table as table_html
from tests.support.study_helpers import write_bert, write_grid

pytest.importorskip("matplotlib")
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECBOUND_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("rep")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECBOUND_CACHE_DIR", str(root / "cache"))
        one = write_bert(root / "m", 3, 128)
        r = CliRunner().invoke(
            app, ["analyze", str(one), "--out", str(root / "a"), "--report", "-q"]
        )
        assert r.exit_code == 0, r.output
        grid = write_grid(root / "grid")
        r = CliRunner().invoke(  # every format, PNG first: the page embeds the PNG
            app,
            [
                "scale",
                *map(str, grid),
                "--out",
                str(root / "s"),
                "-q",
                "--figure-formats",
                "png,pdf,svg",
            ],
        )
        assert r.exit_code == 0, r.output
    return {
        "analysis": root / "a" / "report.html",
        "study": root / "s" / "report.html",
        "model": one,
    }


@pytest.fixture(scope="module")
def objects(reports: dict[str, Path]) -> dict[str, object]:
    """The fixture's model and grid as Python objects (spectra from the fixture's cache)."""
    from specbound.studies.scale import scale

    root = reports["model"].parent
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECBOUND_CACHE_DIR", str(root / "cache"))
        return {
            "analysis": specbound.analyze(str(reports["model"])),
            "study": scale([str(p) for p in sorted((root / "grid").glob("L*"))]),
        }


def _self_contained(html: str, root: Path) -> None:
    """No URL: images embedded, and every link a relative one to a file next to the page
    (``root``, its folder: the CSVs and figure files, issue 36) or an anchor."""
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"""src\s*=\s*["'](?!data:)""", html)
    for href in re.findall(r"""href\s*=\s*["']([^"']*)""", html):
        if not href.startswith("#"):
            assert ":" not in href and not href.startswith("/") and ".." not in href, href
            assert (root / href).is_file(), href
    assert "<link" not in html and not re.search(r"<script[^>]+src", html)
    assert "@import" not in html and "url(" not in html
    assert '<table class="sortable sticky1">' in html and "<script>" in html


def test_analysis_report(reports: dict[str, Path], objects: dict[str, object]) -> None:
    html = reports["analysis"].read_text()
    _self_contained(html, reports["analysis"].parent)
    imgs = re.findall(r'<img[^>]+src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', html)
    # spectral decay, contribution vs p, head heatmap (unless constant: said in words),
    # depth_factor, HTSR alpha per layer, ESD with its power-law fit (esd="worst")
    assert len(imgs) in (5, 6)
    assert ("head_heatmap" in html) != ("so no heatmap is drawn" in html)
    import base64

    assert all(base64.b64decode(b).lstrip().startswith((b"<?xml", b"<svg")) for b in imgs)
    a = objects["analysis"]
    answer = html.split("<figure", 1)[0]  # everything before the first figure
    assert f"log10 {a.bounds.spectrum_adaptive.log10:.3f}" in answer
    assert f"log10 {a.bounds.norm_based.log10:.3f}" in answer
    assert "Which matrices dominate" in answer and "Which p they chose" in answer
    for name in ("spectral_decay", "contribution_vs_p", "depth_factor", "htsr_alpha", "esd"):
        assert (reports["analysis"].parent / "figures" / f"{name}.svg").is_file()
    assert "proxies: leading factors" in answer.lower() or "not bounds on the test error" in answer
    # the depth factor is never headed plain "alpha"
    assert not re.search(r"<th[^>]*>(log10 )?alpha</th>", html)
    # matrices table: an FFN matrix has no head ("n/a", not applicable), never the CSV -1
    table = re.split(r"\((?:<a [^>]+>)?matrices\.csv(?:</a>)?\)</h2>", html, maxsplit=1)[1]
    table = table.split("</table>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", table)
    cells = [c for r in rows if (c := re.findall(r"<td[^>]*>(.*?)</td>", r))]
    ffn = [c for c in cells if c[2] in ("M_in", "M_out")]
    assert ffn and all(c[1] == "n/a" for c in ffn)
    assert all(c[1] != "-1" for c in cells)


def test_study_report(reports: dict[str, Path]) -> None:
    html = reports["study"].read_text()
    _self_contained(html, reports["study"].parent)
    assert html.count('src="data:image/png;base64,') >= 2
    answer = html.split("<figure", 1)[0]
    assert "Against N" in answer and "Against L" in answer
    assert "spectrum-adaptive" in answer and "norm-based" in answer
    assert html.index('class="answer"') < html.index("<figure")
    assert html.count('<table class="sortable') == 2


def test_table_html_escapes_and_sort_keys() -> None:
    import pandas as pd

    t = table_html(pd.DataFrame({"model": ["<b>x</b>"], "v": [1.5e-7]}))
    assert "<b>x</b>" not in t and "&lt;b&gt;" in t
    assert 'data-v="1.5e-07"' in t


def _chromium(path: Path, shot: Path) -> str:
    with tempfile.TemporaryDirectory() as prof:
        proc = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={prof}",
                f"--screenshot={shot}",
                "--window-size=1280,1600",
                "--enable-logging=stderr",
                "--v=0",
                path.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stderr


def _console_errors(log: str) -> list[str]:
    return [line for line in log.splitlines() if "CONSOLE" in line or "Uncaught" in line]


@pytest.mark.skipif(
    not Path(CHROMIUM).exists() or shutil.which("chromium") is None,
    reason="Chromium not installed (apt-get install chromium)",
)
def test_reports_open_in_headless_chromium(reports: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"  # the check itself must be able to fail
    bad.write_text("<html><body><script>throw new Error('boom')</script></body></html>")
    assert _console_errors(_chromium(bad, tmp_path / "bad.png"))
    for key in ("analysis", "study"):
        shot = tmp_path / f"{key}.png"
        assert _console_errors(_chromium(reports[key], shot)) == []
        assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20000


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium not installed")
def test_table_sorting_runs_in_chromium(reports: dict[str, Path], tmp_path: Path) -> None:
    probe = (
        "<script>var t=document.querySelector('table.sortable');"
        "var th=t.querySelectorAll('th')[1];th.click();th.click();"
        "document.body.setAttribute('data-first',t.tBodies[0].rows[0].cells[1].textContent);"
        "</script></body>"
    )
    page = tmp_path / "probe.html"
    page.write_text(reports["study"].read_text().replace("</body>", probe))
    with tempfile.TemporaryDirectory() as prof:
        proc = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                f"--user-data-dir={prof}",
                "--dump-dom",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # models table, column num_layers, clicked twice: descending, so the first row has L = 4
    assert 'data-first="4"' in proc.stdout


# --- issue 13: honest, paper-ready, no paths, no "inf" --------------------------------------


def _html_text_without_images(html: str) -> str:
    return re.sub(r'src="data:image/[^;"]+;base64,[^"]*"', 'src=""', html)


@pytest.mark.parametrize("key", ["analysis", "study"])
def test_no_inf_and_no_absolute_paths(reports: dict[str, Path], key: str) -> None:
    html = _html_text_without_images(reports[key].read_text())
    assert not re.search(r"\binf\b|\bnan\b|-inf", html, flags=re.IGNORECASE)
    root = str(reports["model"].parent)
    assert root not in html and str(Path(root).resolve()) not in html
    assert not re.search(r"(?<![\w.:/])/(tmp|home|root|usr|work|var|private)/", html)
    assert "<h1>specbound report: m</h1>" in html or key == "study"


def test_report_tables_key_columns_sticky_header(reports: dict[str, Path]) -> None:
    html = reports["analysis"].read_text()
    assert '<div class="tw"><table class="sortable sticky1">' in html
    assert re.search(r"th\{[^}]*position:sticky;top:0", html)
    assert re.search(r"table\.sticky1 tbody td:first-child\{position:sticky;left:0", html)
    assert re.search(r"\.tw\{[^}]*overflow:auto", html)
    mats = html.split("Matrices, largest contributions first", 1)[1]
    heads = re.findall(r'<th[^>]*title="([^"]+)"', mats)[:6]
    assert heads == ["layer", "head", "matrix_type", "p_star", "contribution", "log10_contribution"]
    assert 'title="p_star">p*</th>' in mats  # words, with the CSV name as tooltip
    assert '<td class="txt" data-v="QK">' in mats or '<td class="txt" data-v="M_in">' in mats
    study = reports["study"].read_text()
    models = re.split(r"Models \((?:<a [^>]+>)?models\.csv", study, maxsplit=1)[1]
    assert re.findall(r'<th[^>]*title="([^"]+)"', models)[:3] == [
        "model",
        "num_layers",
        "hidden_size",
    ]
    names = re.findall(r'<td class="txt" data-v="([^"]+)">', models.split("Growth fits")[0])
    assert names == ["L2_N64", "L2_N128", "L4_N64", "L4_N128"]  # no path prefix, natural order


def test_answer_says_what_the_formula_says(reports: dict[str, Path]) -> None:
    html = reports["analysis"].read_text()
    answer = html.split("<figure", 1)[0]
    assert "(||A||_F x s)^(1/2) x N^(3/4)" in answer
    assert "Frobenius norm times" not in html and "times its scale" not in html
    assert "p = 0 wins when the scale is large" in answer


def test_p2_charge_sentence_matches_the_formula() -> None:
    # c(A, 2) = S_2^(1/4) s^(1/2) N^(3/4) = (||A||_F s)^(1/2) N^(3/4): check the sentence's
    # formula against the package's curve on a random matrix
    import numpy as np

    from specbound.measures.bounds import log_contribution_curve

    rng = np.random.default_rng(3)
    a = rng.normal(size=(12, 9))
    sv = np.linalg.svd(a, compute_uv=False)
    s, n = 37.5, 12
    c2 = math.exp(log_contribution_curve(sv, math.log(s), n, np.array([2.0]))[0])
    assert c2 == pytest.approx(math.sqrt(np.linalg.norm(a) * s) * n**0.75, rel=1e-12)
    c0 = math.exp(log_contribution_curve(sv, math.log(s), n, np.array([0.0]))[0])
    assert c0 == pytest.approx(math.sqrt(9 * n), rel=1e-12)


def test_explain_p_all_zero_says_ranks_only() -> None:
    import numpy as np

    from specbound.report.terminal import explain_p

    t = explain_p(np.zeros(10))
    assert "no longer depends on the trained singular values, only on the ranks" in t
    mixed = explain_p(np.array([0.0, 0.5, 2.0, 2.0]))
    assert "25% of matrices picked p = 0" in mixed and "50% p = 2" in mixed


def test_figures_are_paper_ready(reports: dict[str, Path]) -> None:
    from PIL import Image

    figs = reports["analysis"].parent / "figures"
    for svg_file in figs.glob("*.svg"):
        svg = svg_file.read_text()
        assert "<text" in svg  # svg.fonttype = none: text stays text, not glyph paths
        assert "×10" not in svg and "times10" not in svg  # no "4x10^0" tick labels
    study_figs = reports["study"].parent / "figures"
    for png in study_figs.glob("*.png"):  # the study asked for PNG too
        im = Image.open(png)
        dpi = im.info.get("dpi", (0, 0))[0]
        assert abs(dpi - 200) < 1, (png.name, dpi)
        assert 1200 <= im.size[0] <= 2200 and im.size[1] <= 1700, (png.name, im.size)
    names = {p.name for p in study_figs.glob("*.png")}
    assert {
        "growth_vs_hidden_size.png",
        "growth_vs_num_layers.png",
        "L4_N128_spectral_decay.png",
        "L4_N128_contribution_vs_p.png",
    } <= names
    html = reports["study"].read_text()
    assert "shared by both panels" in html
    for title in re.findall(r"<figcaption><b>([^<]*)</b>", html):
        assert "/" not in title.replace("L = 4, N = 128", "")


def test_plain_ticks_and_layer_choice() -> None:
    from specbound.report.figures.style import log_ticks, pick_layers, plain_number

    assert plain_number(4.0) == "4" and plain_number(0.5) == "0.5"
    assert plain_number(1e8) == "10⁸" and plain_number(1e-5) == "10⁻⁵"
    assert "$" not in plain_number(3.3e9)  # no mathtext anywhere
    t = log_ticks(0.9, 4.2)
    assert 1.0 in t and 2.0 in t and all(0.9 <= x <= 4.2 for x in t) and len(t) <= 8
    big = log_ticks(1.0, 1e20)
    assert len(big) <= 8 and all(math.log10(x) == round(math.log10(x)) for x in big)
    assert pick_layers(3) == [0, 1, 2]
    assert pick_layers(48) == [0, 16, 31, 47]


def test_heatmap_constant_is_said_in_words() -> None:
    import numpy as np

    from specbound.report.figures.analysis import heatmap_summary

    const = {"QK": np.full((6, 12), 2.0412), "OV": np.full((6, 12), 2.0449)}
    lo, hi, words = heatmap_summary(const)
    assert words is not None and "Every QK and OV cell is 2.04" in words
    assert hi - lo >= 1.0  # not stretched over a 0.004-decade range
    varied = {"QK": np.array([[1.0, 2.0]]), "OV": np.array([[3.0, np.nan]])}
    assert heatmap_summary(varied) == (1.0, 3.0, None)  # one scale for both panels


def test_names_for_display() -> None:
    from specbound.naming import display_name, display_names, natural_key

    assert display_names(["/a/b/L2-N128", "/a/b/L2-N64"]) == ["L2-N128", "L2-N64"]
    assert sorted(["L2-N128", "L10-N64", "L2-N64"], key=natural_key) == [
        "L2-N64",
        "L2-N128",
        "L10-N64",
    ]
    assert display_name("google/bert_uncased_L-2_H-128_A-2") == (
        "google/bert_uncased_L-2_H-128_A-2"
    )
    assert display_name("/x/y/my-model") == "my-model"


@pytest.mark.parametrize("width", [80, 120])
def test_terminal_titles_do_not_wrap(
    objects: dict[str, object], width: int, capsys: pytest.CaptureFixture[str]
) -> None:
    from specbound.report.terminal import print_study, print_summary

    out = Path("/some/very/long/output/directory/that/does/not/fit/in/the/line/at/all/out")
    print_summary(objects["analysis"], out=out, report=True, width=width)
    text = capsys.readouterr().out
    lines = text.splitlines()
    for title in (
        "per layer: depth factor, contributions by matrix type, p* counts",
        "p* picked, by matrix type (count)",
        "largest contributions",
        "bounds",
    ):
        assert title in [ln.strip() for ln in lines], title
    assert all(len(ln) <= width for ln in lines)
    assert [ln for ln in lines if ln.startswith("wrote ")] and "/some/very/long" not in text
    assert "report.html" in text.split("wrote ", 1)[1] and "figures/" in text
    print_study(objects["study"], out=out, width=width)
    lines = capsys.readouterr().out.splitlines()
    assert "growth, pooled fits (growth.csv)" in [ln.strip() for ln in lines]
    assert all(len(ln) <= width for ln in lines)
    assert any("L2_N128" in ln for ln in lines)  # names without their shared path prefix


def test_study_to_dir_writes_csvs_without_matplotlib(
    objects: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    for mod in ("matplotlib", "matplotlib.pyplot"):
        monkeypatch.setitem(sys.modules, mod, None)  # any import of it now fails
    out = objects["study"].to_dir(tmp_path / "s")
    names = {p.name for p in Path(out).iterdir()}
    assert {"models.csv", "growth.csv"} <= names
    assert "report.html" not in names and "figures" not in names


def test_terminal_summary_of_minilm_keeps_every_column_at_80(
    minilm_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """At 80 columns every per-layer column is shown in full (no ellipsis), one format per
    quantity: contributions with thousands separators and one decimal, spectral norms with
    three decimals, both bounds in scientific notation."""
    import specbound
    from specbound.report.terminal import print_summary

    a = specbound.analyze(minilm_dir)
    print_summary(a, width=80)
    lines = capsys.readouterr().out.splitlines()
    assert all(len(ln) <= 80 and "…" not in ln for ln in lines), lines
    cols = a.layer_columns()
    start = next(i for i, ln in enumerate(lines) if ln.strip().startswith("per layer"))
    first = next(i for i in range(start, len(lines)) if lines[i].split()[:1] == ["0"])
    for layer in range(6):
        cells = lines[first + layer].split()
        total = float(cols["contribution_total"][layer])
        assert cells[0] == str(layer) and cells[6] == f"{total:,.1f}", cells
        assert float(cells[6].replace(",", "")) == pytest.approx(total, abs=0.05)
        assert len(cells) == 9
    assert any("2.0573e+04" in ln for ln in lines)  # 20573 in the bounds table, scientific
    biggest = next(i for i, ln in enumerate(lines) if ln.strip() == "largest contributions")
    norm = lines[biggest + 3].split()[-1]
    assert len(norm.split(".")[1]) == 3, lines[biggest + 3]
    params = next(ln for ln in lines if ln.strip().startswith("num_parameters"))
    n_params = int(a.measures["num_parameters"])
    assert n_params > 1000 and f"{n_params:,}" in params


def test_one_format_per_column() -> None:
    """Every numeric column of a page table has one format (issue 21): no "2.8291e+22" above
    "23,370" above "1" in one column, no "13.4" beside "8.88"."""
    import math

    import pandas as pd

    from specbound.report.html import column_format, table

    f = column_format("depth_factor", [2.8291e22, 1.1608e18, 23370.2, 1.0])
    assert [f(v) for v in (2.8291e22, 23370.2, 1.0)] == ["2.8291e+22", "2.3370e+04", "1.0000e+00"]
    f = column_format("log10_depth_factor", [22.4517, 13.4, 0.0])
    assert [f(v) for v in (22.4517, 13.4, 0.0, -0.0004)] == ["22.452", "13.400", "0.000", "0.000"]
    f = column_format("spectral_norm", [11.176, 8.001, 4.97])
    assert [f(v) for v in (11.176, 8.001, 4.97)] == ["11.18", "8.00", "4.97"]
    f = column_format("contribution", [3428.4, 384.0])
    assert [f(v) for v in (3428.4, 384.0)] == ["3,428", "384"]
    f = column_format("rank", [384.0, 1536.0])
    assert [f(v) for v in (384.0, 1536.0)] == ["384", "1,536"]
    f = column_format("x", [0.5, math.nan])
    assert f(math.nan) == "undefined" and f(0.5) == "0.5000"
    df = pd.DataFrame({"head": [0.0, math.nan], "v": [1.5, 2.25]})
    html = table(df, missing={"head": "n/a"})
    cells = re.findall(r"<td[^>]*>(.*?)</td>", html)
    assert cells == ["0", "1.500", "n/a", "2.250"]


# --- figure formats: one SVG per figure unless asked (issue 33 item 7) ------------------------


def test_default_writes_one_svg_per_figure(reports: dict[str, Path]) -> None:
    figs = reports["analysis"].parent / "figures"
    files = sorted(figs.iterdir())
    assert files and all(p.suffix == ".svg" for p in files)
    html = reports["analysis"].read_text()
    links = re.findall(r'href="(figures/[^"]+)"', html)
    assert sorted(links) == sorted(f"figures/{p.name}" for p in files)
    assert html.count("<img ") == len(files)


def test_figure_formats_asked_are_written_and_linked(reports: dict[str, Path]) -> None:
    out = reports["study"].parent
    stems = {p.stem for p in (out / "figures").iterdir()}
    for stem in stems:
        assert {p.suffix for p in (out / "figures").glob(f"{stem}.*")} == {".png", ".pdf", ".svg"}
    html = reports["study"].read_text()
    for stem in stems:  # in the order asked: the embedded PNG first, then PDF and SVG
        assert (
            f'<a href="figures/{stem}.png">PNG</a>, <a href="figures/{stem}.pdf">PDF</a>, '
            f'<a href="figures/{stem}.svg">SVG</a>'
        ) in html
    assert "data:image/svg+xml" not in html


def test_bad_figure_format_is_one_line_naming_the_flag(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        app,
        [
            "analyze",
            "demo:minilm",
            "--out",
            str(tmp_path / "o"),
            "--report",
            "--figure-formats",
            "png,gif",
        ],
    )
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert lines == [
        "error: --figure-formats must be a comma list of svg, png, pdf (got 'png,gif')"
    ]
    assert not (tmp_path / "o").exists()


def test_figure_formats_parsing_and_pdf_only_page(tmp_path: Path) -> None:
    from specbound.errors import SpecboundError
    from specbound.report.figures.style import (
        figure_formats,
        require_matplotlib,
        save,
        writing_formats,
    )
    from specbound.report.html import figure_html

    assert figure_formats(None) == ("svg",)
    assert figure_formats(" PNG,svg,png ") == ("png", "svg")
    assert figure_formats(["pdf"]) == ("pdf",)
    for bad in ("", "png,", "jpg", ["svg", "eps"]):
        with pytest.raises(SpecboundError, match="figure_formats must be a comma list"):
            figure_formats(bad)
    plt = require_matplotlib()
    with writing_formats("pdf"):
        fig = save(plt.figure(), tmp_path / "figures", "only", "Only PDF")
    assert [p.name for p in fig.files] == ["only.pdf"]
    html = figure_html(fig)  # no image a browser shows in <img>: the link alone
    assert "<img" not in html and '<a href="figures/only.pdf">PDF</a>' in html
    fig = save(plt.figure(), tmp_path / "figures", "again", "Default")  # the default is back
    assert [p.name for p in fig.files] == ["again.svg"]


def test_svg_bytes_are_deterministic(tmp_path: Path) -> None:
    from specbound.report.figures.style import require_matplotlib, save

    plt = require_matplotlib()
    out = []
    for k in range(2):
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3], [3, 1, 2])
        ax.set_title("same")
        out.append(save(fig, tmp_path / str(k), "f", "F").files[0].read_bytes())
    assert out[0] == out[1]
