"""The HTML layer of every report page: jinja2 templates with autoescaping, ONE table renderer,
ONE number formatter (:mod:`.numbers`), ONE word for undefined.

Every page is rendered from ``report/templates/*.html`` by :func:`render` (a
``jinja2.Environment`` with ``autoescape=True``): a user-derived string (model path, axis name
and value, task, measure label, metric name) is passed to a template as plain text and escaped
there, so no page code escapes anything by hand. Only markup that specbound itself produced
enters a template unescaped, as ``markupsafe.Markup``: the output of another template (a table,
a figure, a link), the page CSS and JS of :mod:`.html_assets`, and base64 figure data that
specbound's matplotlib wrote. A page is self-contained: figures embedded as base64 (SVG, or
PNG when asked), inline CSS and a few lines of inline JS (click a column header to sort a
table); no URL of any kind except relative links to the files written next to the page
(:func:`file_link`: the CSVs and figures of the same output folder, checked to exist). Every
table scrolls sideways inside its box (every row shown, no height cap), with a sticky first
column (the row's key), so it is readable at 900 px. Numbers are right-aligned with thousands
separators, one format per quantity (:func:`fmt`); an empty table cell is empty text, or
:data:`NOT_APPLICABLE` ("n/a") in a number column, never "undefined".
No absolute filesystem path and no "inf" reaches a page.
"""

from __future__ import annotations

import base64
import functools
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from markupsafe import Markup

from .._version import __version__
from ..naming import without_bidi
from .numbers import (  # noqa: F401 (re-exported: the pages' formatters)
    BEYOND,
    NOT_APPLICABLE,
    UNDEFINED,
    fmt,
    interval,
    is_undefined,
    sig3,
)

if TYPE_CHECKING:
    import jinja2
    import pandas as pd

    from .figures.style import Figure

from .html_assets import CSS, GLOSSARY, JS, LABELS  # (LABELS re-exported)

_ABS_PATH = re.compile(
    r"(?<![\w.:/])(?:[A-Za-z]:)?[/\\](?:[^\s/\\'\"<>,;:()]+[/\\])+"
    r"([^\s/\\'\"<>,;:()]+)"
)

#: The folder of the page templates (package data).
TEMPLATES = Path(__file__).with_name("templates")


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The one jinja2 environment of the pages: ``autoescape=True`` for every template,
    undefined names an error, the number formatters as filters (``fmt``, ``sig3``,
    ``count``: an integer with thousands separators) and ``scrub`` (:func:`scrub_paths`);
    every text a template prints loses its bidirectional controls first
    (:func:`specbound.naming.without_bidi`: a name cannot reorder a title, a heading or a cell).
    """
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_page_text,
    )
    env.filters.update(fmt=fmt, sig3=sig3, scrub=scrub_paths, count=lambda v: f"{int(v):,}")
    return env


def _page_text(value: Any) -> Any:
    """What a template prints for ``value``: text (not specbound's own markup) without
    bidirectional controls; anything else as it is (escaped by the template)."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return without_bidi(value)
    return value


def render(template: str, **context: Any) -> Markup:
    """``templates/<template>`` rendered with ``context`` (text escaped by the template)."""
    return Markup(environment().get_template(template).render(**context))


def scrub_paths(text: str) -> str:
    """Absolute filesystem paths in ``text`` replaced by their last component."""
    return _ABS_PATH.sub(lambda m: m.group(1), str(text))


def _is_whole(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) or (
        isinstance(v, (float, np.floating)) and math.isfinite(v) and float(v).is_integer()
    )


def column_format(name: str, values: Sequence[Any]) -> Any:
    """One format for a whole numeric column (a function value -> text): counts (every value
    whole) with thousands separators; log10 columns with 3 decimals; a column reaching 1e6,
    or spanning more than 4 decades below 1e-3, in scientific notation (5 significant digits)
    throughout; else fixed decimals giving its largest value 4 significant digits (so 11.18,
    8.00, 4.97 rather than 11.18, 8.001, 4.97). Undefined and beyond-float64 values as
    :func:`fmt`."""
    finite = [
        float(v)
        for v in values
        if isinstance(v, (int, float, np.integer, np.floating))
        and not isinstance(v, (bool, np.bool_))
        and math.isfinite(float(v))
    ]
    if not finite or all(_is_whole(v) for v in finite):
        return fmt
    if "log10" in str(name):
        decimals = 3
    else:
        big = max(abs(v) for v in finite)
        small = min((abs(v) for v in finite if v != 0), default=big)
        if big >= 1e6 or (small < 1e-3 and big / small > 1e4):

            def sci(v: Any) -> str:
                if isinstance(v, (bool, np.bool_)) or not isinstance(
                    v, (int, float, np.integer, np.floating)
                ):
                    return fmt(v)
                f = float(v)
                return f"{f:.4e}" if math.isfinite(f) and f != 0 else fmt(v)

            return sci
        decimals = min(6, max(0, 3 - math.floor(math.log10(big)))) if big > 0 else 0

    def fixed(v: Any) -> str:
        if isinstance(v, (bool, np.bool_)) or not isinstance(
            v, (int, float, np.integer, np.floating)
        ):
            return fmt(v)
        f = float(v)
        if not math.isfinite(f):
            return fmt(v)
        return f"{round(f, decimals) + 0.0:,.{decimals}f}"  # never "-0.000"

    return fixed


def _beyond_float64(v: Any, log10: Any) -> bool:
    """A value that is missing/inf while its log10 says it exceeds the float64 range."""
    if not isinstance(v, (float, np.floating)) or math.isfinite(float(v)):
        return False
    return float(v) > 0 or (isinstance(log10, (float, np.floating)) and float(log10) > 307)


def _sort_key(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return ""
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return repr(f)
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return str(v)


def _numeric_column(col: pd.Series, is_numeric_dtype: Any) -> bool:
    """A column of numbers: a numeric dtype, or objects that are all numbers or undefined
    (a value column with a missing entry); bools and strings are text."""
    if col.dtype == bool:
        return False
    if is_numeric_dtype(col):
        return True
    vals = [v for v in col if not is_undefined(v)]
    return bool(vals) and all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
        for v in vals
    )


def _cell(
    v: Any, format_: Callable[[Any], str], empty: str, text: bool, log10: Any
) -> dict[str, Any]:
    """One cell of :func:`table`: its sort key (``raw``), its text (``shown``: ``format_``;
    ``empty`` when undefined; :data:`BEYOND` when it overflowed, its ``log10`` beyond float64)
    and whether it is text (path-scrubbed)."""
    raw, shown = _sort_key(v), format_(v)
    if is_undefined(v):  # an empty cell: empty text, or "n/a" for a number
        shown = empty
    if _beyond_float64(v, log10):  # missing because it overflowed
        raw, shown = "Infinity", BEYOND
    if text:
        shown = scrub_paths(shown)
        raw = scrub_paths(raw)
    return {"raw": raw, "shown": shown, "txt": text}


def key_columns_first(df: pd.DataFrame, first: Sequence[str]) -> pd.DataFrame:
    """``df`` with the columns of ``first`` that it has moved to the front, in that order."""
    lead = [c for c in first if c in df.columns]
    return df[lead + [c for c in df.columns if c not in lead]]


def table(
    df: pd.DataFrame,
    max_rows: int | None = None,
    first: Sequence[str] = (),
    page_size: int | None = None,
    labels: dict[str, str] | None = None,
    missing: dict[str, str] | None = None,
    formats: dict[str, Callable[[Any], str]] | None = None,
) -> Markup:
    """THE table renderer: a sortable HTML table (click a header) in a scroll box with a sticky
    header; numbers right-aligned (:func:`fmt`) and sorted numerically; text columns path-
    scrubbed (escaped by templates/_table.html); columns of ``first`` first; headers in words
    (``LABELS``, the CSV name as tooltip). Every row is written; with ``page_size`` and more
    rows than that, a pager shows ``page_size`` rows at a time (button "all" shows them all).
    Each numeric column has one format (:func:`column_format`). ``missing``: column -> the word
    for its missing cells, else "" in a text column and :data:`NOT_APPLICABLE` in a number
    column. ``formats``:
    column -> its formatter instead (e.g. :func:`sig3`; sorting stays numeric). The first column
    stays in view when the table scrolls sideways (class ``sticky1``). ``max_rows`` is accepted
    for old callers and means ``page_size``."""
    from pandas.api.types import is_numeric_dtype

    if max_rows is not None and page_size is None:
        page_size = max_rows
    if first:
        df = key_columns_first(df, first)
    names = {**LABELS, **(labels or {})}
    cols = list(df.columns)
    text_cols = {c for c in cols if not _numeric_column(df[c], is_numeric_dtype)}
    own = formats or {}
    formats = {
        c: own.get(str(c)) or (fmt if c in text_cols else column_format(str(c), list(df[c])))
        for c in cols
    }
    empty = {c: (missing or {}).get(c, "" if c in text_cols else NOT_APPLICABLE) for c in cols}
    head = [
        {
            "name": str(c),
            "label": names.get(str(c), str(c).replace("_", " ")),
            "txt": c in text_cols,
        }
        for c in cols
    ]
    rows = []
    for row in df.itertuples(index=False):
        logs = dict(zip(cols, row, strict=True))
        rows.append(
            [
                _cell(v, formats[c], empty[c], c in text_cols, logs.get(f"log10_{c}"))
                for c, v in zip(cols, row, strict=True)
            ]
        )
    paged = page_size is not None and len(df) > page_size
    return render(
        "_table.html",
        head=head,
        rows=rows,
        paged=paged,
        n_rows=len(df),
        page_size=page_size,
        table_class="sortable sticky1 paged" if paged else "sortable sticky1",
    )


#: The files beside a page: its folder on disk, or the relative paths io will write there (a
#: page rendered before its folder exists); None: none.
Folder = str | Path | frozenset[str] | None


#: The figure formats a page can embed in an ``<img>``, with their media types.
IMAGE_TYPES = {".svg": "image/svg+xml", ".png": "image/png"}


def figure_html(fig: Figure) -> Markup:
    """A figure with its caption and relative links to its files (in ``figures/`` next to the
    page, in the order written); the first file a browser shows (SVG or PNG) is embedded as
    base64, so the page stays one self-contained file, its alt text the title and the caption's
    first clause (what the figure shows). A figure written only as PDF has no image on the
    page, only the link. (templates/_figure.html)"""
    files = [Path(p) for p in fig.files]
    root: Folder = files[0].parent.parent if files else None  # figures live in <out>/figures/
    if fig.contents is not None:  # drawn in memory: the files io writes beside the page
        root = frozenset(f"{p.parent.name}/{p.name}" for p in files)
    links = Markup(", ").join(
        file_link(root, f"{p.parent.name}/{p.name}", p.suffix.lstrip(".").upper()) for p in files
    )
    image = _embedded(fig, files)
    first = re.split(r"(?<=[.;])\s", scrub_paths(fig.caption), maxsplit=1)[0].rstrip(".;")
    return render(
        "_figure.html",
        name=fig.name,
        title=fig.title,
        alt=f"{fig.title}: {first}" if first else fig.title,
        caption=scrub_paths(fig.caption),
        links=links,
        image=image,
    )


def _embedded(fig: Figure, files: list[Path]) -> dict[str, str] | None:
    """The first of the figure's files a browser shows, as base64 with its media type (from
    the figure's bytes when drawn in memory, else from the file); None when there is none."""
    shown = next((i for i, p in enumerate(files) if p.suffix in IMAGE_TYPES), None)
    if shown is None:
        return None
    raw = files[shown].read_bytes() if fig.contents is None else fig.contents[shown]
    return {"type": IMAGE_TYPES[files[shown].suffix], "data": base64.b64encode(raw).decode("ascii")}


def glossary_id(term: str) -> str:
    """The anchor of a glossary term (``#g-...``): letters and digits, the rest ``-``."""
    return "g-" + re.sub(r"[^A-Za-z0-9]+", "-", term).strip("-")


def glossary_items(terms: Sequence[str] | None = None) -> list[tuple[str, str, str]]:
    """(term, anchor, definition) of the glossary (all terms, or those named); each term has
    an anchor (:func:`glossary_id`) that a page can link to."""
    return [(t, glossary_id(t), d) for t, d in GLOSSARY if terms is None or t in terms]


def _holds(out_dir: Folder, name: str) -> bool:
    """Whether the page's folder ``out_dir`` (:data:`Folder`) holds the file ``name``."""
    if isinstance(out_dir, frozenset):
        return name in out_dir
    return out_dir is not None and (Path(out_dir) / name).is_file()


def file_link(out_dir: Folder, name: str, text: str | None = None) -> Markup:
    """A relative link to ``name`` (a file written next to the page, e.g. ``matrices.csv`` or
    ``figures/esd.svg``) when it exists in ``out_dir`` (:data:`Folder`); else the name in plain
    text."""
    there = _holds(out_dir, name)
    return render(
        "_link.html",
        href=Path(name).as_posix() if there else None,
        text=text if text is not None else name,
    )


def files_html(out_dir: Folder, names: Sequence[str]) -> Markup:
    """One line of links to the files of ``names`` that exist in ``out_dir`` ("" when none)."""
    there = [n for n in names if _holds(out_dir, n)]
    if not there:
        return Markup("")
    return render("_files.html", links=[file_link(out_dir, n) for n in there])


#: Where the documentation of each page lives (pages of specbound's mkdocs site, docs/ in the
#: source tree); there is no published URL, so a page names them.
DOCS = {
    "analyze": "guide/analyze.md",
    "scale": "guide/scale.md",
    "trajectory": "guide/track.md",
    "correlate": "guide/correlate.md",
    "measures": "guide/measures.md",
    "weightwatcher": "weightwatcher.md",
    "spec": "spec.md",
}


def page(
    title: str,
    sections: Sequence[str] = (),
    glossary: bool = True,
    docs: Sequence[str] = (),
    *,
    template: str = "layout.html",
    **context: Any,
) -> str:
    """The whole HTML document (templates/layout.html, or a page template extending it): the
    title (paths scrubbed), the page's body (``sections``, Markup already rendered, or the
    page template's own block filled from ``context``), the glossary, the footer (the
    documentation pages of ``docs``, :data:`DOCS` keys, and the spec)."""
    names = [DOCS[p] for p in docs if p in DOCS] + [DOCS["spec"]]
    return str(
        render(
            template,
            title=scrub_paths(title),
            sections=sections,
            glossary=glossary_items() if glossary else None,
            docs=list(dict.fromkeys(names)),
            version=__version__,
            css=Markup(CSS),  # specbound's own constant stylesheet
            js=Markup(JS),  # specbound's own constant script
            **context,
        )
    )


# the old name of ``table`` (report.py), public
table_html = table
