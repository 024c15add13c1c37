"""The HTML layer of every report page: ONE escaper, ONE table renderer, ONE word for undefined.

Every user-derived string (model path, axis name and value, task, measure label, metric name)
reaches a page only through :func:`escape` (``html.escape`` with ``quote=True``). A page is
self-contained: figures embedded as base64 (SVG, or PNG when asked), inline CSS and a few lines
of inline JS (click a column header to sort a table); no URL of any kind except relative links
to the files written next to the page (:func:`file_link`: the CSVs and figures of the same
output folder, checked to exist). Every table scrolls inside its box with a sticky header row
and a sticky first column (the row's key), so it is readable at 900 px. Numbers are
right-aligned with thousands separators, one format per quantity (:func:`fmt`), and a missing
value is always written :data:`UNDEFINED`. No absolute filesystem path and no "inf" reaches a
page.
"""

from __future__ import annotations

import base64
import html as _html
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._version import __version__

if TYPE_CHECKING:
    import pandas as pd

    from .figures.style import Figure

#: The one way a page writes a value that is not defined (NaN, missing).
UNDEFINED = "undefined"
#: How a page writes a cell that has no meaning for its row (a feed-forward matrix's head).
NOT_APPLICABLE = "n/a"
#: How a page writes a positive value beyond the float64 range (its log10 is kept).
BEYOND = "> 1.8e308"

from .html_assets import CSS, GLOSSARY, JS, LABELS  # noqa: E402 (re-exported)

_ABS_PATH = re.compile(
    r"(?<![\w.:/])(?:[A-Za-z]:)?[/\\](?:[^\s/\\'\"<>,;:()]+[/\\])+"
    r"([^\s/\\'\"<>,;:()]+)"
)


def escape(x: Any) -> str:
    """The one HTML escaper: ``html.escape(str(x), quote=True)``."""
    return _html.escape(str(x), quote=True)


def scrub_paths(text: str) -> str:
    """Absolute filesystem paths in ``text`` replaced by their last component."""
    return _ABS_PATH.sub(lambda m: m.group(1), str(text))


def is_undefined(v: Any) -> bool:
    """None, NaN and pandas' missing values are undefined."""
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return math.isnan(float(v))
    try:
        import pandas as pd

        r = pd.isna(v)
    except (TypeError, ValueError):  # pragma: no cover
        return False
    return bool(r) if isinstance(r, (bool, np.bool_)) else False


def fmt(v: Any, digits: int | None = None) -> str:
    """One format per quantity: integers (counts, parameters) with thousands separators; floats
    with 4 significant digits, from 1e3 to 1e6 rounded to an integer with thousands separators
    (5 significant digits from 1e6 on); ``digits``
    fixes the decimals instead; undefined -> :data:`UNDEFINED`; +-inf -> beyond float64."""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return UNDEFINED
        if math.isinf(v):
            return BEYOND if v > 0 else "< -1.8e308"
        if digits is not None:
            return f"{v:,.{digits}f}"
        if v == 0:  # also -0.0 and float noise rounded to zero: never "-0"
            return "0"
        if v.is_integer() and abs(v) < 1e15:  # counts (parameters, ranks): every digit
            return f"{int(v):,}"
        if 1e3 <= abs(v) < 1e6:  # 1,890 like 29,376: one format for the whole range
            return f"{v:,.0f}"
        return f"{v:.4g}" if abs(v) < 1e4 else f"{v:.5g}"
    if v is None or is_undefined(v):
        return UNDEFINED
    return str(v)


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


def sig3(v: Any) -> str:
    """A measured value with 3 significant digits (``8.21``, ``0.00186``, ``1.86e+04``), never
    rounded to an integer (a whole number, a count, keeps every digit: ``223,775``); undefined
    and beyond-float64 values as :func:`fmt`."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        return fmt(v)
    f = float(v)
    if not math.isfinite(f):
        return fmt(v)
    if f == 0:
        return "0"
    if f.is_integer() and abs(f) < 1e15:  # a count (parameters): every digit
        return f"{int(f):,}"
    return f"{f:.3g}"


def interval(lo: Any, hi: Any, digits: int = 2) -> str:
    """``[lo, hi]`` with ``digits`` decimals, or "no interval" when either end is undefined."""
    try:
        a, b = float(lo), float(hi)
    except (TypeError, ValueError):
        return "no interval"
    if not (math.isfinite(a) and math.isfinite(b)):
        return "no interval"
    a, b = round(a, digits) + 0.0, round(b, digits) + 0.0  # never "-0.00"
    return f"[{a:.{digits}f}, {b:.{digits}f}]"


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
) -> str:
    """THE table renderer: a sortable HTML table (click a header) in a scroll box with a sticky
    header; numbers right-aligned (:func:`fmt`) and sorted numerically; text columns escaped and
    path-scrubbed; columns of ``first`` first; headers in words (``LABELS``, the CSV name as
    tooltip). Every row is written; with ``page_size`` and more rows than that, a pager shows
    ``page_size`` rows at a time (button "all" shows them all). Each numeric column has one
    format (:func:`column_format`). ``missing``: column -> the word for its missing cells
    (e.g. :data:`NOT_APPLICABLE`), else :data:`UNDEFINED`. ``formats``: column -> its
    formatter instead (e.g. :func:`sig3`; sorting stays numeric). The first column stays in
    view when the table scrolls sideways (class ``sticky1``). ``max_rows`` is accepted for old
    callers and means ``page_size``."""
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
    missing = missing or {}
    head = "".join(
        f'<th class="{"txt" if c in text_cols else ""}" title="{escape(c)}">'
        f"{escape(names.get(str(c), str(c).replace('_', ' ')))}</th>"
        for c in cols
    )
    body = []
    for row in df.itertuples(index=False):
        cells = []
        logs = dict(zip(cols, row, strict=True))
        for c, v in zip(cols, row, strict=True):
            raw, shown = _sort_key(v), formats[c](v)
            if c in missing and is_undefined(v):
                shown = missing[c]
            if _beyond_float64(v, logs.get(f"log10_{c}")):  # missing because it overflowed
                raw, shown = "Infinity", BEYOND
            if c in text_cols:
                shown = scrub_paths(shown)
                raw = scrub_paths(raw)
            cls = ' class="txt"' if c in text_cols else ""
            cells.append(f'<td{cls} data-v="{escape(raw)}">{escape(shown)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    paged = page_size is not None and len(df) > page_size
    pager, tcls, attr = "", "sortable sticky1", ""
    if paged:
        pager = (
            '<div class="pager"><button class="prev">previous</button>'
            '<button class="next">next</button><button class="all">all rows</button> '
            f"<span>all {len(df)} rows</span></div>"
        )
        tcls, attr = "sortable sticky1 paged", f' data-page="{int(page_size)}"'  # type: ignore[arg-type]
    return (
        f'<div class="tw">{pager}<table class="{tcls}"{attr}><thead><tr>{head}</tr></thead>'
        "<tbody>" + "".join(body) + "</tbody></table></div>"
    )


#: The figure formats a page can embed in an ``<img>``, with their media types.
IMAGE_TYPES = {".svg": "image/svg+xml", ".png": "image/png"}


def figure_html(fig: Figure) -> str:
    """A figure with its caption and relative links to its files (in ``figures/`` next to the
    page, in the order written); the first file a browser shows (SVG or PNG) is embedded as
    base64, so the page stays one self-contained file. A figure written only as PDF has no
    image on the page, only the link."""
    files = [Path(p) for p in fig.files]
    root = files[0].parent.parent if files else None  # figures live in <out>/figures/
    links = ", ".join(
        file_link(root, f"{p.parent.name}/{p.name}", p.suffix.lstrip(".").upper()) for p in files
    )
    shown = next((p for p in files if p.suffix in IMAGE_TYPES), None)
    img = ""
    if shown is not None:
        data = base64.b64encode(shown.read_bytes()).decode("ascii")
        img = (
            f'<img alt="{escape(fig.title)}" src="data:{IMAGE_TYPES[shown.suffix]};base64,{data}">'
        )
    return (
        f'<figure id="fig-{escape(fig.name)}">{img}<figcaption><b>{escape(fig.title)}.</b> '
        f"{escape(scrub_paths(fig.caption))} (Files: {links}.)</figcaption></figure>"
    )


def glossary_id(term: str) -> str:
    """The anchor of a glossary term (``#g-...``): letters and digits, the rest ``-``."""
    return "g-" + re.sub(r"[^A-Za-z0-9]+", "-", term).strip("-")


def glossary_html(terms: Sequence[str] | None = None) -> str:
    """The glossary of every page (all terms, or those named); each term has an anchor
    (:func:`glossary_id`) that a page can link to."""
    rows = [(t, d) for t, d in GLOSSARY if terms is None or t in terms]
    items = "".join(
        f'<dt id="{glossary_id(t)}">{escape(t)}</dt><dd>{escape(d)}</dd>' for t, d in rows
    )
    return f'<h2 id="glossary">Glossary</h2><dl class="gloss">{items}</dl>'


def file_link(out_dir: str | Path | None, name: str, text: str | None = None) -> str:
    """A relative link to ``name`` (a file written next to the page, e.g. ``matrices.csv`` or
    ``figures/esd.svg``) when it exists in ``out_dir``; else the name in plain text."""
    label = escape(text if text is not None else name)
    if out_dir is None or not (Path(out_dir) / name).is_file():
        return label
    return f'<a href="{escape(Path(name).as_posix())}">{label}</a>'


def files_html(out_dir: str | Path | None, names: Sequence[str]) -> str:
    """One line of links to the files of ``names`` that exist in ``out_dir`` ("" when none)."""
    there = [n for n in names if out_dir is not None and (Path(out_dir) / n).is_file()]
    if not there:
        return ""
    return '<p class="files">Files: ' + "".join(file_link(out_dir, n) for n in there) + "</p>"


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


def docs_html(*pages: str) -> str:
    """The footer line naming the documentation of a page (``DOCS`` keys)."""
    names = [DOCS[p] for p in pages if p in DOCS] + [DOCS["spec"]]
    return (
        '<p class="note">Documentation: '
        + ", ".join(f"<code>docs/{escape(n)}</code>" for n in dict.fromkeys(names))
        + " (specbound's mkdocs site: <code>mkdocs serve</code> in the source tree). Terms: "
        '<a href="#glossary">glossary</a>.</p>'
    )


def page(
    title: str,
    sections: Sequence[str],
    glossary: bool = True,
    docs: Sequence[str] = (),
) -> str:
    """The whole HTML document: title, sections (already HTML), the glossary, the footer
    (the documentation pages of ``docs``, :data:`DOCS` keys, and the spec)."""
    title = scrub_paths(title)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        + "\n".join(sections)
        + (glossary_html() if glossary else "")
        + docs_html(*docs)
        + f'<p class="note">specbound {escape(__version__)}. Formulas: SPEC.md.</p>'
        + f"<script>{JS}</script></body></html>\n"
    )


# the old name of ``table`` (report.py), public
table_html = table
