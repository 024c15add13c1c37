"""The report page of ``specbound correlate`` (SPEC 10, protocol v3): figures/ and report.html.

The tables and correlate.json are the result's own (``Correlation.to_dir``); this page is added
to the same atomic write through ``extra``: ``page = correlation_page(result, out)``, then
``result.to_dir(out, extra=lambda tmp: io.files.write_report_page(tmp, page(tmp)))``.

Protocol v3: right after the lead, the primary contrasts P1-P3 (differences.csv, family
primary) with delta, interval, p, p_holm, verdict and evidence, and the grid's configurations
without a usable model, named; exploratory differences are labelled as such.

The page opens with the answer in SPEC 10's words: what the tool's own proxy does here
("undetermined here: not shown to predict the gap" when its tau interval includes 0), each
measure's verdict (correlation.csv's ``verdict``: intervals and evidence counts decide), which
differences between measures are established (differences.csv: "better" only when the paired
interval excludes 0), the rank-ceiling diagnosis and the zoo's counts (:mod:`.correlate_answer`).
Then figures, then tables with short model labels and a legend. Rendered from
templates/correlate.html and _correlate_answer.html, which escape every user string (paths, axis
names and values, task, measure and metric names); numbers through :mod:`..numbers`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import SpecboundError
from ...io.files import write_report_page
from ...io.readback import read_zoo_json
from ...naming import display_names
from ...studies import answer as answer_words
from ..figures.correlate import color_axis, measure_figure, tau_psi_figure
from ..figures.style import writing_formats
from ..html import figure_html, file_link, files_html, page, table
from . import links
from .compact import compact_table, sig_text
from .correlate_answer import answer_context

if TYPE_CHECKING:
    import pandas as pd

    from ...studies.correlate.result import Correlation
    from ..figures.style import Figure

__all__ = [
    "color_axis",
    "correlation_page",
    "page_text",
    "report_html",
    "write_correlation",
    "write_page",
]

#: Model labels longer than this become m1, m2, ... with a legend.
LABEL_WIDTH = 28
#: Columns that repeat a path per model (the init checkpoint): shown in models.csv only.
PATH_COLUMNS = ("init", "init_path", "init_checkpoint")


#: Columns of differences.csv the page leaves to the file: the per-seed figures (``;`` lists).
SEED_COLUMNS = ("p_seeds", "low_seeds", "high_seeds")


def differences_table(d: pd.DataFrame | None) -> Any:
    """differences.csv on the page: delta, low and high in one format (:func:`sig_text`), the
    per-seed lists left to the file; None without rows."""
    if d is None or not len(d):
        return None
    shown = d.drop(columns=[c for c in SEED_COLUMNS if c in d.columns])
    return table(shown, page_size=50, formats=dict.fromkeys(("delta", "low", "high"), sig_text))


def model_labels(models: pd.DataFrame) -> tuple[list[str], pd.DataFrame | None]:
    """Short labels of the models (shared prefix removed; m1, m2, ... when still longer than
    LABEL_WIDTH) and the legend (label -> model), None when the labels are the names."""
    import pandas as pd

    names = [str(n) for n in models.get("model", pd.Series([], dtype=str))]
    short = display_names(names)
    if not short or max(len(s) for s in short) <= LABEL_WIDTH:
        return short, None
    labels = [f"m{i + 1}" for i in range(len(names))]
    return labels, pd.DataFrame({"label": labels, "model": short})


def zoo_words(result: Correlation) -> str:
    """Which zoo the page is on, from correlate.json's ``zoos`` and the zoo's zoo.json (read
    through the checked reader ``io.readback.read_zoo_json``): ``zoo NAME (standard preset)``
    or ``zoo NAME (grid file G)``; ``N zoos pooled: A + B`` for several zoos; NAME is the zoo's
    folder (correlate.json's ``zoos``, else the manifest's folder), which tells replicates and
    retrains apart (e.g. ``modular-addition-v2-avx2``)."""
    zoos = [str(z) for z in result.zoos]
    if len(zoos) > 1:
        return f"{len(zoos)} zoos pooled: {' + '.join(zoos)}"
    plan = ""
    zoo_json = Path(str(result.manifest)).with_name("zoo.json")
    if zoo_json.is_file():
        try:
            meta = read_zoo_json(zoo_json)
        except SpecboundError:
            meta = {}
        grid_file, preset = meta.get("grid_file"), meta.get("preset")
        if grid_file:
            plan = f"grid file {Path(str(grid_file)).name}"
        elif preset and preset != "grid":
            plan = f"{preset} preset"
    name = zoos[0] if zoos else Path(str(result.manifest)).parent.name
    if not name:
        return plan
    return f"zoo {name}" + (f" ({plan})" if plan else "")


def page_title(result: Correlation) -> str:
    """``Correlation study: TASK, zoo NAME (PLAN), protocol v4, with data measures``: the page
    says which zoo it is on (:func:`zoo_words`) and the protocol number correlate.json
    records."""
    parts = [str(result.task)] if result.task else []
    zoo = zoo_words(result)
    if zoo:
        parts.append(zoo)
    parts.append(f"protocol v{result.summary()['protocol']}")
    data = any(m in result.measures for m in ("sharpness", "pacbayes_flatness", "inverse_margin"))
    parts.append("with data measures" if data else "weight measures only")
    return "Correlation study: " + ", ".join(parts)


CORRELATE_FILES = (
    "models.csv",
    "correlation.csv",
    "differences.csv",
    "skipped.csv",
    "correlate.json",
)


def report_html(
    result: Correlation,
    figures: list[Figure],
    out_dir: str | Path | None = None,
    siblings: Sequence[tuple[str, str]] = (),
    study_href: str | None = None,
    study: pd.DataFrame | None = None,
) -> str:
    """The whole report page (templates/correlate.html), figures embedded; links to the files
    written next to it, to ``siblings`` (label, relative href) pages and to the study's page
    (``study_href``) beside the "this zoo alone" caveat of every verdict. correlation.csv is
    shown in its compact form (:func:`compact_table`) and linked in full."""
    d = result.differences
    models = result.models.copy()
    labels, legend = model_labels(models)
    if "model" in models.columns:
        models["model"] = labels
    drop = [c for c in PATH_COLUMNS if c in models.columns]
    models = models.drop(columns=drop)
    return page(
        page_title(result),
        docs=("correlate", "measures"),
        template="correlate.html",
        a=answer_context(result, study_href, study),
        files=files_html(out_dir, CORRELATE_FILES),
        siblings=list(siblings),
        notes=list(result.notes),
        figures=[figure_html(f) for f in figures],
        correlation=table(compact_table(result), page_size=60),
        correlation_link=file_link(out_dir, "correlation.csv"),
        differences=differences_table(d),
        n_models=len(result.models),
        path_columns=drop,
        models=table(models, page_size=50),
        legend=table(legend, page_size=50) if legend is not None else None,
        n_skipped=len(result.skipped),
        skipped=table(result.skipped, page_size=50) if len(result.skipped) else None,
    )


def correlation_figures(result: Correlation, fig_dir: Path) -> list[Figure]:
    """The tau/Psi chart, then one scatter per measure."""
    figs = [tau_psi_figure(result, fig_dir)]
    figs += [
        measure_figure(result, m, fig_dir) for m in result.measures if m in result.models.columns
    ]
    return figs


def sibling_pages(out: Path) -> list[tuple[str, str]]:
    """The other pages beside ``out`` (``links.sibling_pages``: the study, the correlate
    folders, a size ladder; never a hidden temporary folder) and the README.md of the folder
    above them when there is one (a benchmark's write-up)."""
    return links.sibling_pages(out)


def study_of(out: Path) -> pd.DataFrame | None:
    """The study's primary rows of the folder ``out`` when the study's folder sits beside it
    (``studies.answer.study_rows``); None when there is none or it cannot be read."""
    there = Path(out).absolute().parent / links.STUDY
    if Path(out).name == links.STUDY:
        return None
    try:
        return answer_words.study_rows(there, Path(out).name)
    except SpecboundError:
        return None


def study_page(out: Path) -> str | None:
    """``../study/report.html`` when the study's page sits beside ``out`` (a benchmark's
    results/ folder), else None."""
    there = Path(out).absolute().parent / "study" / "report.html"
    return "../study/report.html" if there.is_file() and Path(out).name != "study" else None


def page_text(
    result: Correlation,
    folder: str | Path,
    *,
    figures: bool = True,
    siblings: Sequence[tuple[str, str]] = (),
    figure_formats: str | Sequence[str] | None = None,
    study_href: str | None = None,
    study: pd.DataFrame | None = None,
) -> str:
    """The page of ``result`` (:func:`report_html`) with its figures drawn into
    ``folder``/figures (unless ``figures`` is False; each in ``figure_formats``, SVG by
    default): the text for ``folder``/report.html (``folder``: the result's folder being
    written; the page links to the files beside it and ``siblings``), which
    ``io.files.write_report_page`` writes."""
    folder = Path(folder)
    with writing_formats(figure_formats):
        figs = correlation_figures(result, folder / "figures") if figures else []
    return report_html(result, figs, folder, siblings, study_href, study)


def write_page(
    result: Correlation,
    folder: str | Path,
    *,
    figures: bool = True,
    siblings: Sequence[tuple[str, str]] = (),
    figure_formats: str | Sequence[str] | None = None,
    study_href: str | None = None,
    study: pd.DataFrame | None = None,
) -> Path:
    """Figures/ and report.html in ``folder``: :func:`page_text`'s text written by
    ``io.files.write_report_page``."""
    text = page_text(
        result,
        folder,
        figures=figures,
        siblings=siblings,
        figure_formats=figure_formats,
        study_href=study_href,
        study=study,
    )
    return write_report_page(folder, text)


def correlation_page(
    result: Correlation,
    out: str | Path,
    figures: bool = True,
    siblings: Sequence[tuple[str, str]] = (),
    *,
    figure_formats: str | Sequence[str] | None = None,
) -> Callable[[Path], str]:
    """The page of ``result`` for the folder being written to ``out``: a function of that
    folder (the ``tmp`` of ``result.to_dir(out, extra=...)``) that draws the figures there and
    returns the text of its report.html (:func:`page_text`), for ``io.files.write_report_page``
    to write: ``result.to_dir(out, extra=lambda tmp: write_report_page(tmp, page(tmp)))``. The
    page links to the pages beside ``out`` (``sibling_pages``, found now, before the write)
    unless ``siblings`` are given, with the study's verdict of each primary row when the
    study's folder sits beside ``out`` (:func:`study_of`)."""
    pages = list(siblings) or sibling_pages(Path(out))
    return functools.partial(
        page_text,
        result,
        figures=figures,
        siblings=pages,
        figure_formats=figure_formats,
        study_href=study_page(Path(out)),
        study=study_of(Path(out)),
    )


def write_correlation(
    result: Correlation,
    out: str | Path,
    figures: bool = True,
    siblings: Sequence[tuple[str, str]] = (),
    *,
    figure_formats: str | Sequence[str] | None = None,
) -> Path:
    """Write the result's tables and correlate.json, figures/ and report.html into ``out`` in
    one atomic write (what ``specbound correlate`` does): ``result.to_dir(out, extra=...)``
    with :func:`correlation_page`'s text written by ``io.files.write_report_page``;
    ``figure_formats``: the files of each figure (``"svg"`` by default; e.g. ``"png,pdf"``)."""
    text = correlation_page(result, out, figures, siblings, figure_formats=figure_formats)
    return result.to_dir(out, extra=lambda tmp: write_report_page(tmp, text(tmp)))
