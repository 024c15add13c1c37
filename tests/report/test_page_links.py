"""The pages of one results folder read as one study (issue 53): no cell says "undefined", no
link points into a write's hidden temporary folder, every page title is unique (the zoo's
name and plan from zoo.json), every [Cn] citation of the study page resolves to a claim's row
on the page, and every primary row of a folder page carries its own verdict and the study's,
from the study's primary.csv beside it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from tests.report.test_study_pages import _correlation, _study


def _zoo(root: Path, name: str, **plan: object) -> Path:
    z = root / "zoos" / name
    z.mkdir(parents=True)
    (z / "zoo.json").write_text(json.dumps({"task": "digits", **plan}), encoding="utf-8")
    return z / "zoo.csv"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """results/ with two correlate folders of two zoos of the same preset, a study folder
    whose primary.csv names the first, and a hidden temporary folder of an unfinished write."""
    from specbound.report.pages.correlate import write_correlation
    from specbound.report.pages.study import write_report

    root = tmp_path_factory.mktemp("bench")
    res = root / "results"
    hidden = res / ".specbound-123-host-abc.tmp"
    hidden.mkdir(parents=True)
    (hidden / "correlate.json").write_text("{}")
    (hidden / "report.html").write_text("half written")
    # the study first (its rows: folder "a"'s primary rows, one verdict changed, and rows of
    # another folder), so the folder pages find it beside them
    study = _study()
    d = _correlation().differences
    mine = d[d["family"] == "primary"].assign(folder="results/a", independence="family")
    mine = mine[
        [
            "folder",
            "contrast",
            "measure",
            "versus",
            "statistic",
            "delta",
            "low",
            "high",
            "p",
            "p_holm",
            "verdict",
            "independence",
        ]
    ].reset_index(drop=True)
    mine.loc[0, "verdict"] = "borderline" if mine.loc[0, "verdict"] != "borderline" else "worse"
    others = study.primary[study.primary["folder"] == "results/pooled"]
    study.primary = pd.concat([mine, others], ignore_index=True)
    (res / "study").mkdir()
    claims = root / "claims.csv"
    claims.write_text(
        "claim,folder,measure,versus,statistic,verdict\n"
        "C1,study/b,spectrum_adaptive,norm_based,tau_fixed_n,insufficient evidence\n"
        "C2,study/b,spectrum_adaptive,num_parameters,tau_fixed_n,undetermined\n",
        encoding="utf-8",
    )
    answer = "**Answer.** P1 in b is not shown [C1]; P2 neither [C2]; p* = 0 stays.\n"
    study.primary.to_csv(res / "study" / "primary.csv", index=False)
    write_report(study, res / "study", answer, claims=claims)
    for name, plan in (
        ("a", {"preset": "standard"}),
        ("b", {"preset": "standard", "grid_file": "b.yaml"}),
    ):
        r = _correlation()
        r.manifest = str(_zoo(root, name, **plan))
        write_correlation(r, res / name)
    return res


def _pages(res: Path) -> dict[str, str]:
    return {
        p.parent.name: p.read_text(encoding="utf-8")
        for p in sorted(res.glob("*/report.html"))
        if not p.parent.name.startswith(".")
    }


def test_no_cell_says_undefined(results: Path) -> None:
    for name, html in _pages(results).items():
        cells = re.findall(r"<td[^>]*>(.*?)</td>", html, re.S)
        assert cells, name
        bad = [c for c in cells if "undefined" in re.sub(r"<[^>]+>", "", c)]
        assert not bad, (name, bad[:3])


def test_no_link_into_a_temporary_folder(results: Path) -> None:
    for name, html in _pages(results).items():
        hrefs = re.findall(r'href="([^"]+)"', html)
        assert not [h for h in hrefs if ".specbound-" in h], name
        for h in hrefs:  # every relative link resolves
            if not h.startswith("#"):
                assert (results / name / h.split("#")[0]).exists(), (name, h)


def test_titles_are_unique_and_name_the_zoo(results: Path) -> None:
    titles = {n: re.search(r"<title>(.*?)</title>", h).group(1) for n, h in _pages(results).items()}
    assert len(set(titles.values())) == len(titles), titles
    assert "zoo a (standard preset)" in titles["a"]
    assert "zoo b (grid file b.yaml)" in titles["b"]


def test_every_citation_resolves_to_a_claim_row(results: Path) -> None:
    html = _pages(results)["study"]
    cites = re.findall(r'<a href="#(claim-C\d+)">', html)
    assert sorted(cites) == ["claim-C1", "claim-C2"]
    for c in cites:
        assert f'<tr id="{c}">' in html
    assert (results / "study" / "claims.csv").read_bytes().startswith(b"claim,folder")
    assert "p* = 0" in html  # the asterisk is not taken for emphasis
    assert '<a href="claims.csv">' in html


def test_primary_rows_carry_both_verdicts(results: Path) -> None:
    html = _pages(results)["a"]
    table = re.search(r'<table id="primary"[^>]*>(.*?)</table>', html, re.S)
    assert table
    head = re.findall(r"<th[^>]*>(.*?)</th>", table.group(1))
    assert "verdict (this zoo)" in head and "study's verdict" in head
    study = pd.read_csv(results / "study" / "primary.csv")
    theirs = dict(
        zip(study.loc[study["folder"] == "results/a", "contrast"],
            study.loc[study["folder"] == "results/a", "verdict"], strict=True)
    )  # fmt: skip
    rows = re.findall(r"<tr><td[^>]*>(\w+)</td>(.*?)</tr>", table.group(1), re.S)
    assert rows
    assert len(rows) == len(theirs) >= 1
    differ = 0
    for contrast, rest in rows:
        cells = re.findall(r'<td class="verdict txt"><b>(.*?)</b>', rest)
        assert len(cells) == 2, contrast
        assert cells[1] == theirs[contrast]
        differ += cells[0] != cells[1]
        if cells[0] != cells[1]:  # and says why
            assert "Holm over the study" in rest and "not this page" in rest
    assert differ >= 1
    assert f"The study's verdict differs on {differ} of these {len(rows)} rows" in html
    # folder b has no row in the study: no study's verdict column
    assert '<th class="txt">study\'s verdict</th>' not in _pages(results)["b"]
