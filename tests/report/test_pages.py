"""Every report page: hostile user strings escaped (issue 20), answer first with its caveats,
one HTML layer (issue 21, 23); optional headless-Chromium screenshots at 1280 and 900 px."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.support.study_helpers import write_bert

pytest.importorskip("matplotlib")

HOSTILE = "x<script>alert(3)</script>"
TEX = "$\\foo$"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


#: A hostile directory name (no "/": it is one path component).
HOSTILE_DIR = "x<script>alert(3)"


def _safe(html: str, needle: str = HOSTILE) -> None:
    """No hostile markup survived, and the escaped form is there."""
    assert "<script>alert" not in html and "alert(3)</script>" not in html
    assert needle.replace("<", "&lt;").replace(">", "&gt;") in html


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECBOUND_CACHE_DIR", str(tmp_path / "cache"))


# --- the HTML layer ---------------------------------------------------------------------------


def test_one_table_escaped_by_its_template() -> None:
    from specbound.report import html as H

    t = H.table(
        pd.DataFrame(
            {"model": [HOSTILE, "b"], "num_parameters": [22713728, 5], "v": [np.nan, 1234567.0]}
        )
    )
    _safe(t)
    assert ">22,713,728<" in t and ">1,234,567<" in t  # thousands separators
    # an empty number cell is "n/a", an empty text cell empty: never "undefined" (issue 53)
    assert ">n/a<" in t and "undefined" not in t and ">-<" not in t
    assert 'data-v="22713728"' in t  # sort keys stay plain numbers
    big = H.table(pd.DataFrame({"i": range(223)}), page_size=50)
    assert big.count("<tr>") == 224  # every row is in the page (paged, not cut)
    assert 'class="sortable sticky1 paged"' in big and "First 200" not in big


def test_no_hand_escaping_in_report() -> None:
    """Pages escape through jinja2's autoescaping only: no ``escape(`` call and no
    ``html.escape`` / ``markupsafe.escape`` import in the HTML layer (the terminal modules
    escape rich markup, not HTML, and are not pages)."""
    root = Path(__file__).parents[2] / "src/specbound/report"
    html_layer = [p for p in root.rglob("*.py") if not p.name.startswith("terminal")]
    assert len(html_layer) >= 10
    bad = [
        p.name
        for p in html_layer
        if re.search(
            r"\bescape\(|import html\b|html\.escape|from markupsafe import .*escape", p.read_text()
        )
    ]
    assert bad == []
    templates = root / "templates"
    assert {p.name for p in templates.glob("*.html")} >= {
        "layout.html",
        "analysis.html",
        "scale.html",
        "correlate.html",
        "study.html",
        "trajectory.html",
        "_table.html",
    }
    # autoescaping on, never switched off in a template
    from specbound.report.html import environment

    assert environment().autoescape is True
    for t in templates.glob("*.html"):
        assert "autoescape false" not in t.read_text() and "|safe" not in t.read_text(), t.name


# --- analysis page ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def analysis_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    import specbound
    from specbound.report.pages.analysis import write_analysis_report

    root = tmp_path_factory.mktemp("an")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECBOUND_CACHE_DIR", str(root / "cache"))
        model = write_bert(root / HOSTILE_DIR, 2, 64)
        a = specbound.analyze(str(model))
        out = root / "out"
        out.mkdir()
        write_analysis_report(a, out, esd="all")
    return out / "report.html", a


def test_analysis_page_escapes_and_answers_first(analysis_page: tuple[Path, object]) -> None:
    path, a = analysis_page
    html = path.read_text()
    _safe(html, HOSTILE_DIR)
    from tests.report.test_undefined import _no_nan

    _no_nan(html)
    answer = html.split("<figure", 1)[0]
    lead = re.search(r'<p class="lead"><b>(.*?)</b>', answer).group(1)
    if a.spectrum_adaptive_share_p0 == 1.0:
        assert "rank ceiling" in lead and "the same for any full-rank checkpoint" in lead
    else:
        assert "below its rank ceiling" in lead
    assert "not bounds on the test error" in answer
    assert answer.index("rank ceiling") < answer.index("spectrum-adaptive proxy:")
    assert '<h2 id="glossary">Glossary</h2>' in html and "depth_factor" in html and "grid m" in html
    assert not re.search(r"<th[^>]*>(log10 )?alpha</th>", html)
    figs = path.parent / "figures"
    for name in ("esd", "htsr_alpha", "depth_factor", "spectral_decay"):
        assert {p.suffix for p in figs.glob(f"{name}*.*")} == {".svg"}, name  # one format


def test_esd_option(analysis_page: tuple[Path, object], tmp_path: Path) -> None:
    from specbound.errors import SpecboundError
    from specbound.report.figures.htsr import esd_selection, htsr_fits
    from specbound.report.pages.analysis import write_analysis_report

    _, a = analysis_page
    fits = htsr_fits(a)
    fitted = [i for i, f in enumerate(fits) if f.alpha is not None]
    assert esd_selection(a, "all") == fitted and esd_selection(a, "none") == []
    worst = esd_selection(a, "worst")
    assert 0 < len(worst) <= 4 and set(worst) <= set(fitted)
    # worst: farthest from 2..6 first (recomputed here from the alphas)
    dist = [max(2.0 - fits[i].alpha, fits[i].alpha - 6.0, 0.0) for i in worst]
    assert dist == sorted(dist, reverse=True)
    with pytest.raises(SpecboundError, match="esd"):
        write_analysis_report(a, tmp_path, esd="some")
    write_analysis_report(a, tmp_path, esd="none")
    assert not list((tmp_path / "figures").glob("esd*")) and (tmp_path / "report.html").exists()


def test_esd_histogram_matches_the_weights(analysis_page: tuple[Path, object]) -> None:
    """The eigenvalues drawn are those of W^T W of the checkpoint (dense, no shared code)."""
    from specbound.report.figures.htsr import _kept_eigenvalues
    from tests.support.safetensors_np import load_file

    _, a = analysis_page
    ws = a.weight_spectra
    i = 0
    tensors = load_file(str(Path(a.model) / "model.safetensors"))
    w = tensors[str(ws.tensor[i])].astype(np.float64)
    lam = np.sort(np.linalg.svd(w, compute_uv=False) ** 2)
    kept = _kept_eigenvalues(a, i)
    top = lam[-kept.size :]
    assert np.allclose(kept, top, rtol=0, atol=1e-9 * lam[-1])


# --- scale page ------------------------------------------------------------------------------


def _hostile_study() -> object:
    from specbound.studies.scale import Study

    models = pd.DataFrame(
        {
            "model": [f"{HOSTILE}/a", f"{HOSTILE}/b"],
            "num_layers": [2, 2],
            "hidden_size": [64, 128],
            "num_parameters": [123456, 654321],
            "spectrum_adaptive": [2.0, 2.5],
            "norm_based": [3.0, 4.0],
            "spectrum_adaptive_share_p0": [1.0, 0.5],
        }
    )
    return Study(
        models,
        pd.DataFrame(),
        missing=[HOSTILE],
        skipped=[(HOSTILE, HOSTILE)],
        title=f"Scaling {HOSTILE}",
    )


def test_scale_page_escapes(tmp_path: Path) -> None:
    from specbound.report.pages.scale import write_study

    html = write_study(_hostile_study(), tmp_path).read_text()
    _safe(html)
    assert "not bounds on the test error" in html
    assert "share p*=0 from 50% to 100%" in html  # one format: percentages
    assert ">654,321<" in html


# --- correlate page --------------------------------------------------------------------------


def _hostile_correlation(axis: str = HOSTILE, value: str = HOSTILE) -> object:
    from specbound.studies import correlate as C
    from specbound.studies.correlate.ceiling import rank_ceiling
    from specbound.studies.correlate.table import correlation_study

    rng = np.random.default_rng(0)
    rows = []
    for depth in (1, 2):
        for width in (32, 64):
            for v in ("p", value):
                for seed in range(3):
                    rows.append(
                        {
                            "model": f"/zoo/{HOSTILE}/d{depth}w{width}{v}{seed}",
                            "depth": depth,
                            "width": width,
                            axis: v,
                            "seed": seed,
                        }
                    )
    m = pd.DataFrame(rows)
    m["gap"] = rng.uniform(0, 0.3, len(m))
    m["spectrum_adaptive"] = m["depth"] * 10 + m["width"] / 10 + rng.normal(0, 1e-3, len(m))
    m[HOSTILE] = m["gap"] + rng.normal(0, 0.05, len(m))
    m["init"] = ["/zoo/init/" + HOSTILE] * len(m)
    measures = ["spectrum_adaptive", HOSTILE]
    axes = ["depth", "width", axis]
    t = correlation_study(m, measures, axes, bootstrap=200, seed=0)
    return C.Correlation(
        m,
        t.correlation,
        pd.DataFrame({"model": [HOSTILE], "reason": [HOSTILE]}),
        axes,
        measures,
        task=HOSTILE,
        manifest=HOSTILE,
        n_listed=len(m) + 1,
        bootstrap=200,
        notes=[HOSTILE],
        differences=t.differences,
        rank_ceiling=rank_ceiling(m),
        n_configurations=t.n_configurations,
    )


def test_correlate_page_escapes_and_says_undetermined(tmp_path: Path) -> None:
    from specbound.report.html import interval
    from specbound.report.pages.correlate import write_correlation

    res = _hostile_correlation()
    write_correlation(res, tmp_path / "c", figure_formats="png,pdf,svg")  # each format asked
    html = (tmp_path / "c" / "report.html").read_text()
    _safe(html)
    answer = html.split("<figure", 1)[0]
    row = res.correlation.set_index("measure").loc["spectrum_adaptive"]
    lo, hi = float(row["kendall_tau_low"]), float(row["kendall_tau_high"])
    # the proxy's own sentence follows the primary rows' bold lead (issue 53)
    lead = re.search(r"<p>(spectrum_adaptive [^<]*)</p>", answer).group(1)
    if lo <= 0 <= hi:  # SPEC 10: an interval holding 0 is "undetermined", never "does not"
        assert lead.startswith("spectrum_adaptive is undetermined here: not shown to predict")
        assert "does not predict" not in html
    assert interval(lo, hi) in lead
    assert "coloured by architecture" in html  # the stripes of spectrum_adaptive
    assert "init/" not in html.split("models.csv (", 1)[1].split("</table>", 1)[0]
    for f in ("tau_psi", "measure_spectrum_adaptive"):
        for ext in ("png", "pdf", "svg"):
            assert (tmp_path / "c" / "figures" / f"{f}.{ext}").is_file()
            assert f'<a href="figures/{f}.{ext}">{ext.upper()}</a>' in html
    assert "data:image/png;base64," in html and "data:image/svg" not in html


def test_tex_like_labels_do_not_break_figures(tmp_path: Path) -> None:
    from specbound.report.pages.correlate import write_correlation

    write_correlation(_hostile_correlation(TEX, TEX), tmp_path / "t")
    from specbound.report.figures.style import file_stem

    svg = (tmp_path / "t" / "figures" / f"{file_stem('measure_' + HOSTILE)}.svg").read_text()
    assert "foo" in svg  # drawn as plain text


# --- trajectory page -------------------------------------------------------------------------


def _grokking_track(path: Path, metric: str = HOSTILE) -> Path:
    steps = np.arange(0, 1000, 10)
    train = np.clip(steps / 100, 0, 1)  # memorized by step 100
    test = 1 / (1 + np.exp(-(steps - 700) / 30))  # generalizes at ~700
    early = 1 - np.exp(-steps / 50)  # moves with training
    cols = {
        "step": steps,
        "wall_s": steps * 0.1,
        "analysis_s": np.full(steps.size, 0.01),
        metric: np.linspace(0, 1, steps.size),
        "train_acc": train,
        "test_acc": test,
        "spectrum_adaptive": early,
        "norm_based": 2 + early,
        "QK_mean_p_star": 0.1 * early,
    }
    path.mkdir(parents=True)
    pd.DataFrame(cols).to_csv(path / "track.csv", index=False, float_format="%.17g")
    return path


def test_trajectory_page_escapes_and_answers_first(tmp_path: Path) -> None:
    from specbound.report.pages.trajectory import write_trajectory_report
    from specbound.studies.trajectory import grokking_phase

    track = _grokking_track(tmp_path / "run")
    write_trajectory_report(track, tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text()
    _safe(html)
    lead = re.search(r'<p class="lead"><b>(.*?)</b></p>', html).group(1)
    assert lead.startswith("By the half-change statistic (the step by which a series covered")
    assert "no measure moved at the grokking step" in lead
    assert "Grokking phase detected" in html and "moved earlier" in html
    ph = grokking_phase(pd.read_csv(track / "track.csv"))
    assert ph is not None and ph.start == 100 and 690 <= ph.end <= 710
    assert html.count("<tr>") >= 100  # every row (paged), not "first 200"
    for f in ("metrics", "trajectory"):
        assert (tmp_path / "out" / "figures" / f"{f}.svg").is_file()


# --- screenshots -------------------------------------------------------------------------------


def _shot(page: Path, png: Path, width: int) -> None:
    with tempfile.TemporaryDirectory() as prof:
        proc = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={prof}",
                f"--window-size={width},2400",
                f"--screenshot={png}",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium not installed")
@pytest.mark.parametrize("width", [1280, 900])
def test_pages_render_in_chromium(
    analysis_page: tuple[Path, object], tmp_path: Path, width: int
) -> None:
    from PIL import Image

    from specbound.report.pages.correlate import write_correlation
    from specbound.report.pages.trajectory import write_trajectory_report

    write_correlation(_hostile_correlation(), tmp_path / "c")
    write_trajectory_report(_grokking_track(tmp_path / "run"), tmp_path / "t")
    for page in (analysis_page[0], tmp_path / "c" / "report.html", tmp_path / "t" / "report.html"):
        png = tmp_path / f"{page.parent.name}_{width}.png"
        _shot(page, png, width)
        im = Image.open(png).convert("L")
        assert im.size[0] == width
        arr = np.asarray(im, dtype=float)
        assert arr.std() > 10 and not math.isnan(arr.mean())  # not a blank page


# --- issue 21 review fixes (Chromium at 1280 and 900 px) ----------------------------------


def test_fmt_thousands_from_1e3_and_no_negative_zero() -> None:
    from specbound.report.html import fmt, interval

    assert fmt(1890.2) == "1,890" and fmt(3428.0) == "3,428" and fmt(29376.4) == "29,376"
    assert fmt(-1234.6) == "-1,235" and fmt(843.5) == "843.5"
    assert fmt(-0.0) == "0" and fmt(np.float64(-0.0)) == "0"
    assert interval(-0.001, 0.5) == "[0.00, 0.50]"


def test_object_column_of_numbers_is_right_aligned() -> None:
    from specbound.report.html import table

    df = pd.DataFrame({"measure": ["a", "b"], "value": [39971.2, None]}, dtype=object)
    html = table(df)
    assert '<td data-v="39971.2">39,971</td>' in html  # numeric cell: no "txt" class
    assert '<th class="" title="value">' in html
    assert '<td class="txt" data-v="a">a</td>' in html


def test_best_by_lead_needs_every_difference() -> None:
    from specbound.report.pages.correlate_answer import lead_clause

    mixed = [
        "vs a on psi: delta +0.17 [-0.33, 0.50]: not shown",
        "vs b on psi: delta +0.5 [0.19, 1.00]: better",
    ]
    assert lead_clause(mixed) == "; its lead over a is not established"
    assert lead_clause(mixed[1:]) == ""
    assert (
        lead_clause(mixed[:1]) == lead_clause([]) == "; its lead over the others is not established"
    )


def test_correlate_stats_never_minus_zero() -> None:
    from specbound.report.pages.correlate_answer import _stat

    row = {"psi": -2.776e-17, "psi_low": -1.0, "psi_high": 0.5}
    assert _stat(row, "psi", "Ψ") == "Ψ 0.00 [-1.00, 0.50]"


def test_small_multiples_two_columns_at_900px() -> None:
    from specbound.report.html import CSS

    # body max 1180 px, padding 1.6em: at a 900 px window two 360 px columns fit (420 did not),
    # and a lone figure is not blown up past its 1280 px size
    assert "minmax(360px,1fr)" in CSS and ".grid figure img{max-width:min(100%,560px)}" in CSS


def test_track_type_columns_have_labels() -> None:
    from specbound.report.html import table

    html = table(
        pd.DataFrame({"QK_mean_p_star": [0.5], "M_in_share_p0": [1.0], "OV_contribution": [3.0]})
    )
    assert ">QK mean p*</th>" in html and ">M_in share p*=0</th>" in html and ">OV c*</th>" in html
    assert "p star" not in html


def test_trajectory_ylabels_say_log10() -> None:
    from specbound.report.figures.trajectory import measure_ylabel

    assert measure_ylabel("spectrum_adaptive") == "spectrum_adaptive\n(log10 B)"
    assert measure_ylabel("log_spectral_product").endswith("(log10)")
    assert measure_ylabel("frobenius_sum") == "frobenius_sum"


def test_scale_models_table_one_share_column_in_percent() -> None:
    from types import SimpleNamespace

    from specbound.report.pages.scale import SHARE_LABELS, models_display

    m = pd.DataFrame(
        {
            "model": ["a/L2", "a/L4"],
            "num_layers": [2, 4],
            "hidden_size": [64, 64],
            "spectrum_adaptive_share_p0": [0.25, 1.0],
            "share_p0": [0.25, 1.0],
            "share_p2": [0.5, 0.0],
        }
    )
    d = models_display(SimpleNamespace(models=m))
    assert "share_p0" not in d.columns
    assert list(d["spectrum_adaptive_share_p0"]) == [25.0, 100.0]
    assert list(d["share_p2"]) == [50.0, 0.0]
    assert SHARE_LABELS["share_p2"].endswith("(%)")


def test_trajectory_metrics_exclude_computed_columns() -> None:
    from specbound.studies.trajectory import metric_columns
    from specbound.track import NOTE_COLUMN, computed_columns

    cols = ["step", "wall_s", "analysis_s", "train_acc", "test_acc", *computed_columns()]
    assert NOTE_COLUMN in cols and "QK_mean_p_star" in cols
    df = pd.DataFrame([[0.0] * len(cols)], columns=cols)
    assert metric_columns(df) == ["train_acc", "test_acc"]


def test_analysis_measures_values_are_numbers(analysis_page: tuple[Path, object]) -> None:
    from specbound.report.html import table
    from specbound.report.pages.analysis import measures_table

    _, a = analysis_page
    html = table(measures_table(a))
    v = a.measures["spectrum_adaptive"]
    assert re.search(rf'<td data-v="{re.escape(repr(float(v)))}">[^<]+</td>', html)
    assert '<td class="txt" data-v="undefined"' not in html


def test_correlate_scatter_labels_say_the_scale() -> None:
    """Log-valued measures (SPEC 9 log10 measures and their n/margin forms) say log10 on the x
    axis; counts and exponents say linear."""
    pytest.importorskip("matplotlib")
    from specbound.report.figures.correlate import x_label

    assert x_label("spectrum_adaptive") == "spectrum_adaptive (log10)"
    assert x_label("norm_based_per_sqrt_n") == "norm_based_per_sqrt_n (log10)"
    assert x_label("norm_based_per_margin_sqrt_n") == "norm_based_per_margin_sqrt_n (log10)"
    assert x_label("log_spectral_product_over_margin").endswith("(log10)")
    assert x_label("sample_size_only").endswith("(log10)")
    assert x_label("num_parameters") == "num_parameters (linear)"
    assert x_label("htsr_alpha").endswith("(linear)")
    assert x_label("pacbayes_flatness").endswith("(linear)")


# --- issue 36 item 3: pages a practitioner can act on ---------------------------------------


def _hrefs(html: str) -> list[str]:
    return re.findall(r'<a href="([^"]+)"', html)


def _links_resolve(page_path: Path) -> list[str]:
    """Every relative link of a page points at a file next to it; returns the links."""
    html = page_path.read_text()
    links = [h for h in _hrefs(html) if not h.startswith("#")]
    for h in links:
        assert "://" not in h and not h.startswith("/"), h
        assert (page_path.parent / h).is_file(), h
    anchors = set(re.findall(r'id="([^"]+)"', html))
    for h in _hrefs(html):
        if h.startswith("#"):
            assert h[1:] in anchors, h
    return links


def _tied_analysis(n_tie: int) -> object:
    """A stand-in Analysis: 12 matrices, the first ``n_tie`` M_in at c* = 384 (p* = 0)."""
    from types import SimpleNamespace

    c = np.full(12, 100.0)
    c[:n_tie] = 384.0
    c[0] *= 1 + 1e-12  # rounding: still a tie
    types = np.array([2] * 6 + [0] * 6)
    return SimpleNamespace(
        details=SimpleNamespace(log_contribution=np.log(c), p_star=np.zeros(12)),
        spectra=SimpleNamespace(
            matrix_type=types, head=np.where(types == 2, -1, 1), layer=np.arange(12) % 6
        ),
    )


def test_largest_term_tie_is_not_a_finding() -> None:
    from specbound.report.pages.analysis import largest_term_sentence

    text = largest_term_sentence(_tied_analysis(5))
    assert (
        text == "No single matrix has the largest term: 5 matrices tie at c* = 384 (M_in; p* = 0)."
    )
    assert "largest single term is" not in text
    one = largest_term_sentence(_tied_analysis(1))
    assert one.startswith("The largest single term is M_in (layer 0), c* = 384")
    assert one.endswith("the next largest is 100.")


def test_analysis_page_links_sticky_and_glossary(analysis_page: tuple[Path, object]) -> None:
    path, _ = analysis_page
    html = path.read_text()
    links = _links_resolve(path)
    for name in ("matrices.csv", "layers.csv", "summary.json"):
        assert name in links or not (path.parent / name).exists(), name
    assert any(h.startswith("figures/") and h.endswith(".svg") for h in links)
    assert not any(h.endswith((".png", ".pdf")) for h in links)  # only the files written
    assert html.count('class="sortable sticky1') == html.count("<table")
    assert "table.sticky1 tbody td:first-child{position:sticky;left:0" in html
    for term in ("HTSR D", "HTSR x_min", "HTSR tail size", "SE", "not shown to differ"):
        assert f'<dt id="g-{re.sub(r"[^A-Za-z0-9]+", "-", term)}">{term}</dt>' in html, term
    assert "<code>docs/guide/analyze.md</code>" in html and "<code>docs/spec.md</code>" in html


def _unstable_track(path: Path) -> Path:
    """A grokking run with 3 train-accuracy dips after the plateau, a measure at 8.21 -> 1.36
    (rounded to integers it would read 8 -> 1), a gap that ends where it started and share
    p*=0 reaching 1."""
    steps = np.arange(0, 1000, 10)
    train = np.clip(steps / 100, 0, 1)
    train[[30, 50, 80]] = [0.5, 0.85, 0.3]  # 3 dips more than 0.1 below the maximum
    test = 1 / (1 + np.exp(-(steps - 700) / 30))
    early = 1 - np.exp(-steps / 50)
    swing = 2 + early + 0.5 * np.sin(steps / 20)  # back and forth after the plateau
    cols = {
        "step": steps,
        "wall_s": steps * 0.1,
        "analysis_s": np.full(steps.size, 0.01),
        "train_acc": train,
        "test_acc": test,
        "spectrum_adaptive": early,
        "norm_based": swing,
        "htsr_alpha": 8.21 - 6.85 * early,
        "mean_stable_rank": np.full(steps.size, 3.0),
        "spectrum_adaptive_share_p0": np.where(steps < 100, 1.0, 0.2),
        "spectrum_adaptive_ceiling_gap": np.where(steps < 100, 0.0, 0.3),
    }
    path.mkdir(parents=True)
    pd.DataFrame(cols).to_csv(path / "track.csv", index=False, float_format="%.17g")
    return path


def test_trajectory_claims_scoped_instability_undefined_and_ceiling(tmp_path: Path) -> None:
    from specbound.report.pages.trajectory import write_trajectory_report
    from specbound.studies.trajectory import milestones, movement

    track = _unstable_track(tmp_path / "run")
    write_trajectory_report(track, tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text()
    answer = html.split("<h2>Trajectory</h2>", 1)[0]
    assert "By the same statistic, 3 moved earlier" in answer
    assert (
        "Training was unstable after the plateau: train_acc fell more than 0.1 below its "
        "maximum (1) at 3 of the 89 evaluations after step 100 (lowest 0.3 at step 800)."
    ) in answer
    assert "first reached its plateau (within 0.02 of its maximum) at step 100" in answer
    assert (
        "1 of 3 measures range over more than 2 times their net change there (norm_based)" in answer
    )
    assert "Rank ceiling: share p*=0 reaches 100% at step 0, ceiling gap 0 in log10" in answer
    assert "Undefined (the series does not move, so it has no half-change step): " in answer
    assert "mean_stable_rank" in answer.split("Undefined (", 1)[1].split("</p>", 1)[0]
    # the milestones: 3 significant digits, undefined half-change for the flat series
    table = html.split("When each series moved</h2>", 1)[1].split("</table>", 1)[0]
    assert ">8.21<" in table and ">1.36<" in table
    ms = milestones(pd.read_csv(track / "track.csv")).set_index("series")
    assert ms.loc["mean_stable_rank", "note"] == "does not move"
    assert pd.isna(ms.loc["mean_stable_rank", "half_change_step"])
    gap = ms.loc["gap = train_acc - test_acc"]  # 0 -> 1 -> 0: ends where it started
    assert gap["note"].startswith("ends where it started") and pd.isna(gap["half_change_step"])
    assert movement(np.array([0.0, 1.0, 0.04])).startswith("ends where it started")
    assert movement(np.array([0.0, 1.0, 0.06])) == ""
    assert _links_resolve(tmp_path / "out" / "report.html")


def _grid_study() -> object:
    """3 N x 2 L models: per-fixed lines on 3 points (resid df 1, flagged) and 2 points
    (resid df 0 along L); the proxies grow 4.63 vs 1.02-ish with N."""
    from specbound.studies.scale import Study
    from specbound.studies.scale.fit import growth_table

    rows = []
    for L in (2, 4):
        for k, N in enumerate((64, 128, 256)):
            wobble = (0.01, -0.02, 0.01)[k]
            rows.append(
                {
                    "model": f"m/L{L}_N{N}",
                    "num_layers": L,
                    "hidden_size": N,
                    "spectrum_adaptive": 1.02 * math.log10(N) + 0.1 * L + wobble,
                    "norm_based": 4.63 * math.log10(N) + 0.3 * L - wobble,
                    "spectrum_adaptive_share_p0": 0.5,
                }
            )
    models = pd.DataFrame(rows)
    return Study(models, growth_table(models), title="Scaling grid")


def test_scale_page_names_se_not_shown_to_differ_and_flags_low_df(tmp_path: Path) -> None:
    from specbound.report.pages.scale import write_study
    from specbound.studies.scale.verdict import growth_verdict, low_df_flag

    study = _grid_study()
    g = study.growth
    assert {low_df_flag(r) for _, r in g[g["fit"] == "per_fixed"].iterrows()} == {
        "resid df 1 < 2",
        "resid df 0: no SE",
    }
    study.to_dir(tmp_path / "s", extra=lambda tmp: write_study(study, tmp))
    path = tmp_path / "s" / "report.html"
    html = path.read_text()
    answer = html.split("<h2>Figures</h2>", 1)[0]
    assert re.search(r"exponent [0-9.]+ ± [0-9.e-]+ \(SE\) \(spectrum-adaptive\)", answer)
    assert "indistinguishable" not in html
    v = growth_verdict(g, "num_layers")
    if v is not None and v.word == "not shown to differ":
        assert "not shown to differ on this grid" in answer
    assert "spectrum_adaptive against N at L = 2, 4 (resid df 1, 1)" in answer
    assert "fewer than 2 residual degrees of freedom" in answer
    table = html.split("Growth fits (", 1)[1]
    assert ">resid df 1 &lt; 2<" in table and ">resid df 0: no SE<" in table
    assert "Dotted, labelled &#39;resid df&#39;" in html  # the figure caption says so (escaped)
    assert html.count('class="sortable sticky1') == html.count("<table")
    links = _links_resolve(path)
    assert {"models.csv", "growth.csv"} <= set(links)


def test_growth_table_slope_and_se_share_a_format() -> None:
    """An SE is never printed next to a slope rounded to 0.000 (3 significant digits each)."""
    from specbound.report.html import sig3, table

    t = table(
        pd.DataFrame({"exponent": [0.000123, 4.5], "exponent_se": [0.0186, 0.7]}),
        formats={"exponent": sig3, "exponent_se": sig3},
    )
    assert ">0.000123<" in t and ">0.0186<" in t and "0.000<" not in t
    assert (
        sig3(223775.0) == "223,775" and sig3(8.2097) == "8.21" and sig3(float("nan")) == "undefined"
    )


def test_scale_summary_is_json_ready_with_the_verdicts() -> None:
    import json

    study = _grid_study()
    summary = study.summary()
    json.dumps(summary, allow_nan=False)  # JSON-ready: records, not DataFrames; no NaN
    assert list(summary) == ["title", "models", "growth", "verdict", "skipped", "missing"]
    assert summary["title"] == "Scaling grid"
    assert len(summary["models"]) == len(study.models)
    assert len(summary["growth"]) == len(study.growth)
    assert set(summary["verdict"]) <= {"hidden_size", "num_layers"}
    for v in summary["verdict"].values():
        assert isinstance(v["sentence"], str) and isinstance(v["interaction"], list)
    hostile = _hostile_study().summary()
    assert hostile["growth"] == [] and hostile["verdict"] == {}
    assert hostile["skipped"] == [{"model": HOSTILE, "reason": HOSTILE}]
    assert hostile["missing"] == [HOSTILE]


def test_trajectory_contract_summary_and_to_dir(tmp_path: Path) -> None:
    import json

    from specbound.errors import SpecboundError
    from specbound.report.pages.trajectory import write_report
    from specbound.studies.trajectory import read_trajectory

    t = read_trajectory(_grokking_track(tmp_path / "run"))
    summary = t.summary()
    json.dumps(summary, allow_nan=False)  # JSON-ready: records, no NaN
    assert list(summary) == ["rows", "milestones"] and summary["rows"] == len(t.rows)
    assert [m["series"] for m in summary["milestones"]] == list(t.milestones()["series"])
    t.to_dir(tmp_path / "csv")
    assert {p.name for p in (tmp_path / "csv").iterdir()} == {
        "track.csv",
        ".specbound-manifest.json",
    }
    out = t.to_dir(tmp_path / "out", extra=lambda tmp: write_report(t, tmp))
    assert (out / "report.html").is_file() and (out / "figures").is_dir()
    with pytest.raises(SpecboundError, match=r"^gap_kind must be one of"):
        read_trajectory(tmp_path / "run", "bogus")


def test_pages_return_their_text_and_io_writes_it(tmp_path: Path) -> None:
    """A page function draws its figures and returns the page; it writes no report.html
    (issue 51: report/ renders, io writes). The folder's manifest lists the page that
    io.files.write_report_page wrote, as it lists every file of the write."""
    import json

    from specbound.io import write_report_page
    from specbound.report.pages.trajectory import trajectory_page
    from specbound.studies.trajectory import read_trajectory

    t = read_trajectory(_grokking_track(tmp_path / "run"))
    bare = tmp_path / "bare"
    bare.mkdir()
    text = trajectory_page(t, bare)
    assert text.lstrip().startswith("<!DOCTYPE html>") and "specbound trajectory" in text
    assert not (bare / "report.html").exists() and (bare / "figures").is_dir()
    written: list[str] = []

    def extra(tmp: Path) -> None:
        page = trajectory_page(t, tmp)
        written.append(page)
        write_report_page(tmp, page)

    out = t.to_dir(tmp_path / "out", extra=extra)
    assert (out / "report.html").read_text(encoding="utf-8") == written[0]
    manifest = json.loads((out / ".specbound-manifest.json").read_text())
    assert "report.html" in manifest["files"]
