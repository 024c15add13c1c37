"""Parts every page shares: the fixed assets (CSS, JS, column labels, glossary), the links to the
sibling pages of a results folder, and the compact correlation table."""

from __future__ import annotations

import math
import types
from pathlib import Path

import pandas as pd
import pytest

from specbound.io.siblings import STUDY, sibling_pages
from specbound.report.html import glossary_id, page, table
from specbound.report.html_assets import CSS, GLOSSARY, JS, LABELS
from specbound.report.pages.compact import cell_text, compact_table, sig_text


def test_a_page_carries_the_assets_and_every_glossary_term() -> None:
    html = page("a title")
    assert CSS.strip() in html and JS.strip() in html
    terms = [t for t, _ in GLOSSARY]
    assert len(set(terms)) == len(terms) and {"proxy", "p*", "grid m"} <= set(terms)
    for term, _meaning in GLOSSARY:
        assert f'id="{glossary_id(term)}"' in html, term
    assert page("t", glossary=False).count('id="g-') == 0


def test_table_headers_are_the_labels_with_the_csv_name_as_tooltip() -> None:
    html = str(table(pd.DataFrame({"p_star": [0.5], "log10_depth_factor": [1.0], "my_col": [2]})))
    assert f'title="p_star">{LABELS["p_star"]}</th>' in html and LABELS["p_star"] == "p*"
    assert 'title="log10_depth_factor">log10 depth_factor</th>' in html
    assert 'title="my_col">my col</th>' in html  # not labelled: underscores as spaces
    assert all(LABELS[f"{t}_share_p0"] == f"{t} share p*=0" for t in ("QK", "OV", "M_in", "M_out"))


def test_sibling_pages_study_first_no_hidden_folder_then_the_write_up(tmp_path: Path) -> None:
    results = tmp_path / "bench" / "results"
    for name in ("b-zoo", "a-zoo", STUDY, ".specbound-123.tmp", "me"):
        (results / name).mkdir(parents=True)
        (results / name / "report.html").write_text("<html>")
    (results / "no-page").mkdir()
    assert sibling_pages(results / "me") == [
        ("the study", "../study/report.html"),
        ("a-zoo", "../a-zoo/report.html"),
        ("b-zoo", "../b-zoo/report.html"),
    ]
    (tmp_path / "bench" / "README.md").write_text("# the write-up")
    assert sibling_pages(results / "me")[-1] == ("README", "../../README.md")
    assert ("README", "../../README.md") not in sibling_pages(results / "me", readme=False)
    assert sibling_pages(tmp_path / "nowhere" / "x") == []


def test_compact_table_cells() -> None:
    row = {
        "measure": "spectrum_adaptive",
        "kendall_tau": 0.5,
        "kendall_tau_low": 0.25,
        "kendall_tau_high": 0.75,
        "psi": math.nan,
        "psi_low": math.nan,
        "psi_high": math.nan,
        "psi_depth": 0.125,
        "cmi": 0.01234,
        "cmi_low": 0.0,
        "cmi_high": 0.02,
        "cmi_axes": "depth",
        "sign_error_robust": math.nan,
        "sign_error_robust_axis": math.nan,
    }
    result = types.SimpleNamespace(correlation=pd.DataFrame([row]), axes=["depth", "width"])
    (got,) = compact_table(result).to_dict("records")  # type: ignore[arg-type]
    assert got == {
        "measure": "spectrum_adaptive",
        "τ": "0.500 [0.25, 0.75]",
        "Ψ": "n/a",  # undefined: no interval shown
        "ψ depth": "0.125",  # ψ width is not a column: no cell
        "CMI (min)": "0.012 [0.00, 0.02] (depth)",
        "robust sign-error": "too few pairs",
    }
    assert (sig_text(0.001234), sig_text(math.nan), sig_text(0.5)) == ("0.00123", "n/a", "0.500")
    assert (cell_text(None), cell_text(math.nan), cell_text("x")) == ("", "", "x")


def test_the_report_package_exports_its_names_lazily() -> None:
    import specbound.report as report
    from specbound.report import html

    assert report.table is html.table and report.LABELS is LABELS
    for name in report.__all__:
        assert getattr(report, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        report.nothing_here  # noqa: B018
