"""report.html: self-contained, opens with the answer; optional headless-Chromium check."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from study_helpers import write_bert, write_grid
from typer.testing import CliRunner

import specbound
from specbound.cli import app
from specbound.report import table_html

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
        r = CliRunner().invoke(app, ["analyze", str(one), "--out", str(root / "a"),
                                     "--report", "-q"])
        assert r.exit_code == 0, r.output
        grid = write_grid(root / "grid")
        r = CliRunner().invoke(app, ["scale", *map(str, grid), "--out", str(root / "s"), "-q"])
        assert r.exit_code == 0, r.output
    return {"analysis": root / "a" / "report.html", "study": root / "s" / "report.html",
            "model": one}


def _self_contained(html: str) -> None:
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"""(src|href)\s*=\s*["'](?!data:|#)""", html)
    assert "<link" not in html and not re.search(r"<script[^>]+src", html)
    assert "@import" not in html and "url(" not in html
    assert '<table class="sortable">' in html and "<script>" in html


def test_analysis_report(reports: dict[str, Path]) -> None:
    html = reports["analysis"].read_text()
    _self_contained(html)
    imgs = re.findall(r'<img[^>]+src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(imgs) == 4  # spectral decay, contribution vs p, head heatmap, alpha
    import base64

    assert all(base64.b64decode(b)[:4] == b"\x89PNG" for b in imgs)
    a = specbound.analyze(str(reports["model"]))
    answer = html.split("<figure", 1)[0]  # everything before the first figure
    assert f"log10 {a.bounds.spectrum_adaptive.log10:.3f}" in answer
    assert f"log10 {a.bounds.norm_based.log10:.3f}" in answer
    assert "Which matrices dominate" in answer and "Which p they chose" in answer
    for name in ("spectral_decay", "contribution_vs_p", "head_heatmap", "alpha"):
        assert (reports["analysis"].parent / "figures" / f"{name}.svg").is_file()


def test_study_report(reports: dict[str, Path]) -> None:
    html = reports["study"].read_text()
    _self_contained(html)
    assert html.count('src="data:image/png;base64,') >= 2
    answer = html.split("<figure", 1)[0]
    assert "Against N" in answer and "Against L" in answer
    assert "spectrum-adaptive" in answer and "norm-based" in answer
    assert html.index('class="answer"') < html.index("<figure")
    assert html.count('<table class="sortable">') == 2


def test_table_html_escapes_and_sort_keys() -> None:
    import pandas as pd

    t = table_html(pd.DataFrame({"model": ["<b>x</b>"], "v": [1.5e-7]}))
    assert "<b>x</b>" not in t and "&lt;b&gt;" in t
    assert 'data-v="1.5e-07"' in t


def _chromium(path: Path, shot: Path) -> str:
    with tempfile.TemporaryDirectory() as prof:
        proc = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={prof}", f"--screenshot={shot}",
             "--window-size=1280,1600", "--enable-logging=stderr", "--v=0",
             path.resolve().as_uri()],
            capture_output=True, text=True, timeout=120,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stderr


def _console_errors(log: str) -> list[str]:
    return [line for line in log.splitlines() if "CONSOLE" in line or "Uncaught" in line]


@pytest.mark.skipif(not Path(CHROMIUM).exists() or shutil.which("chromium") is None,
                    reason="Chromium not installed (apt-get install chromium)")
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
    probe = ("<script>var t=document.querySelector('table.sortable');"
             "var th=t.querySelectorAll('th')[1];th.click();th.click();"
             "document.body.setAttribute('data-first',t.tBodies[0].rows[0].cells[1].textContent);"
             "</script></body>")
    page = tmp_path / "probe.html"
    page.write_text(reports["study"].read_text().replace("</body>", probe))
    with tempfile.TemporaryDirectory() as prof:
        proc = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", f"--user-data-dir={prof}", "--dump-dom",
             page.as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # models table, column num_layers, clicked twice: descending, so the first row has L = 4
    assert 'data-first="4"' in proc.stdout
