"""The report page of ``specbound correlate`` (SPEC 10, protocol v3): figures/ and report.html.

The tables and correlate.json are the result's own (``Correlation.to_dir``); this page and its
figures are drawn in memory and added to the same atomic write, which io makes:
``result.to_dir(out, files=correlation_files(result, **driver.beside(out).page_args()))``. The
page never sees ``out``: what lies beside it (the pages there, the study's rows) is found by
``studies.correlate.driver.beside``.

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

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import SpecboundError
from ...io.files import REPORT_PAGE
from ...io.readback import read_zoo_json
from ...naming import display_names
from ...studies.correlate.driver import beside
from ..figures.correlate import color_axis, measure_figure, tau_psi_figure
from ..figures.style import drawing_in_memory, writing_formats
from ..html import Folder, figure_html, file_link, files_html, page, table
from .compact import compact_table, sig_text
from .correlate_answer import answer_context

if TYPE_CHECKING:
    import pandas as pd

    from ...studies.correlate.result import Correlation
    from ..figures.style import Figure

__all__ = [
    "color_axis",
    "correlation_files",
    "report_html",
    "write_correlation",
]

#: The folder of the figures beside the page.
FIGURES = "figures"

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
    out_dir: Folder = None,
    siblings: Sequence[tuple[str, str]] = (),
    study_href: str | None = None,
    study: pd.DataFrame | None = None,
) -> str:
    """The whole report page (templates/correlate.html), figures embedded; links to the files
    written next to it (``out_dir``: the folder, or the files io will write there), to
    ``siblings`` (label, relative href) pages and to the study's page (``study_href``) beside
    the "this zoo alone" caveat of every verdict. correlation.csv is shown in its compact form
    (:func:`compact_table`) and linked in full."""
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


def correlation_files(
    result: Correlation,
    *,
    figures: bool = True,
    siblings: Sequence[tuple[str, str]] = (),
    figure_formats: str | Sequence[str] | None = None,
    study_href: str | None = None,
    study: pd.DataFrame | None = None,
) -> dict[str, bytes | str]:
    """The page of ``result``, drawn in memory: {relative path: content} of each figure file
    (``figures/NAME.svg``, bytes; each figure in ``figure_formats``, SVG by default; none
    unless ``figures``) and of report.html (text, :func:`report_html`), for
    ``Correlation.to_dir(out, files=...)`` to write with the tables. The page links to the
    tables and figures written beside it, to ``siblings`` (label, relative href) and to the
    study's page ``study_href``, with the study's verdict of each primary row (``study``):
    what ``studies.correlate.driver.beside`` finds beside the folder."""
    with writing_formats(figure_formats), drawing_in_memory():
        figs = correlation_figures(result, Path(FIGURES)) if figures else []
    files: dict[str, bytes | str] = {
        p.as_posix(): data for f in figs for p, data in zip(f.files, f.contents or [], strict=True)
    }
    present = frozenset([*CORRELATE_FILES, *files])
    files[REPORT_PAGE] = report_html(result, figs, present, siblings, study_href, study)
    return files


def write_correlation(
    result: Correlation,
    out: str | Path,
    figures: bool = True,
    siblings: Sequence[tuple[str, str]] = (),
    *,
    figure_formats: str | Sequence[str] | None = None,
) -> Path:
    """Write the result's tables and correlate.json, figures/ and report.html into ``out`` in
    one atomic write (what ``specbound correlate`` does, for a script):
    :func:`correlation_files` with what is beside ``out`` (``driver.beside``; ``siblings``
    when given), written by ``result.to_dir(out, files=...)``; ``figure_formats``: the files of
    each figure (``"svg"`` by default; e.g. ``"png,pdf"``)."""
    near = beside(out)
    files = correlation_files(
        result,
        figures=figures,
        siblings=list(siblings) or near.siblings,
        figure_formats=figure_formats,
        study_href=near.study_href,
        study=near.study,
    )
    return result.to_dir(out, files=files)
