"""The pages beside an output folder (a benchmark's ``results/``): every sibling folder that
holds a report.html (correlate folders, the study, a size ladder), never a hidden folder
(``.specbound-*.tmp``, a write in progress), and the write-up above them. Found by listing the
folder's parent, before the write: a page links to them (report/ renders the links)."""

from __future__ import annotations

from pathlib import Path

#: The study's folder name beside the correlate folders (``specbound study --out results/study``).
STUDY = "study"


def sibling_pages(out: str | Path, *, readme: bool = True) -> list[tuple[str, str]]:
    """(label, relative href) of the pages beside ``out`` (the folder being written, or the
    temporary folder of its write, which lies beside it): each visible sibling folder with a
    report.html, in name order, the study's first; then README.md of the folder above them
    when ``readme`` and there is one (a benchmark's write-up)."""
    me = Path(out).absolute()
    parent = me.parent
    if not parent.is_dir():
        return []
    names = sorted(
        d.name
        for d in parent.iterdir()
        if d.is_dir()
        and not d.name.startswith(".")
        and d.name != me.name
        and (d / "report.html").is_file()
    )
    names.sort(key=lambda n: n != STUDY)
    pages = [("the study" if n == STUDY else n, f"../{n}/report.html") for n in names]
    if readme and pages and (parent.parent / "README.md").is_file():
        pages.append(("README", "../../README.md"))
    return pages
