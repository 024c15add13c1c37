"""The one figure style of every report (matplotlib, Agg backend, imported lazily).

Every figure is written once, as SVG with editable text, unless the caller names other formats
(``figure_formats``: any of SVG, PNG at 200 dpi, PDF with fonts embedded as TrueType; the first
one a browser shows is embedded in report.html). Each file goes through a temporary file and a
rename, so a figure file is either complete or absent, and the same figure gives the same bytes
(no dates; SVG ids from a fixed salt). Wide figures are 9 inches, small multiples 4.6 inches, all
with 12-14 pt text: readable when a 900-px page scales them down and in a two-column PDF.
Axis labels carry units and say "(log scale)" on log axes (:func:`axis_label`). Labels are plain
text: mathtext is off (``text.parse_math = False``), so a user string such as ``$\\foo$`` is
drawn as written and cannot break a figure; tick labels use Unicode superscripts (10⁵).
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ... import extras
from ...errors import Param, SpecboundError
from ...io.files import atomic_file
from ...naming import without_bidi

DPI = 200
WIDTH = 9.0  # inches: a full-width figure
SMALL = 4.6  # inches: one of a grid of small multiples
#: Every format a figure can be written in, and the one written unless the caller names others
#: (the committed results: SVG is smaller than the PNG for every kind of figure the reports draw).
FORMATS = ("svg", "png", "pdf")
DEFAULT_FORMATS = ("svg",)
#: The formats ``save`` writes now (set by :func:`writing_formats` around a report's figures).
_CURRENT: ContextVar[tuple[str, ...]] = ContextVar("figure_formats", default=DEFAULT_FORMATS)
#: Whether ``save`` keeps each file's bytes on the figure instead of writing it (set by
#: :func:`drawing_in_memory` around a page whose files io writes).
_IN_MEMORY: ContextVar[bool] = ContextVar("figures_in_memory", default=False)
STYLE = {
    "svg.fonttype": "none",
    "svg.hashsalt": "specbound",
    "pdf.fonttype": 42,
    "text.parse_math": False,
    "text.usetex": False,
    "font.family": "DejaVu Sans",
    "font.size": 12,
    "axes.titlesize": 13,
    "axes.labelsize": 12,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "legend.fontsize": 11,
    "figure.titlesize": 14,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "savefig.dpi": DPI,
}
PROXY_LABELS = {"spectrum_adaptive": "spectrum-adaptive", "norm_based": "norm-based"}
PROXY_COLORS = {"spectrum_adaptive": "#1f5fa8", "norm_based": "#c0392b"}
SYMBOL = {"hidden_size": "N", "num_layers": "L"}
_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass
class Figure:
    """One saved figure: a stem, a title for the report and its files, one per format written,
    in the order the formats were named (the page embeds the first one a browser shows)."""

    name: str
    title: str
    files: list[Path] = field(default_factory=list)
    caption: str = ""
    #: The bytes of each of ``files`` (same order) when drawn in memory
    #: (:func:`drawing_in_memory`: ``files`` are then relative paths, written by io); else None.
    contents: list[bytes] | None = None


def figure_formats(value: str | Sequence[str] | None = None) -> tuple[str, ...]:
    """The figure formats named by ``value``: a comma list (``"png,svg,pdf"``) or a sequence,
    case-insensitive, duplicates dropped, order kept; ``None`` gives :data:`DEFAULT_FORMATS`.
    Raises SpecboundError naming ``figure_formats`` and the allowed values otherwise."""
    if value is None:
        return DEFAULT_FORMATS
    items = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    names = [v.strip().lower() for v in items]
    bad = [n for n in names if n not in FORMATS]
    if bad or not names:
        got = value if isinstance(value, str) else ",".join(items)
        raise SpecboundError(
            Param("figure_formats"),
            f" must be a comma list of {', '.join(FORMATS)} (got {got!r})",
        )
    return tuple(dict.fromkeys(names))


@contextlib.contextmanager
def writing_formats(value: str | Sequence[str] | None = None) -> Iterator[tuple[str, ...]]:
    """Within the block, :func:`save` writes the formats ``value`` names (:func:`figure_formats`,
    checked on entry); the formats before it come back on exit."""
    token = _CURRENT.set(figure_formats(value))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def drawing_in_memory() -> Iterator[None]:
    """Within the block, :func:`save` writes no file: each figure keeps its files' bytes
    (``Figure.contents``), its ``files`` relative to the page's folder (``figures/NAME.svg``),
    for io to write with the page."""
    token = _IN_MEMORY.set(True)
    try:
        yield
    finally:
        _IN_MEMORY.reset(token)


def require_matplotlib() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or a one-line error naming the extra."""
    return extras.pyplot()


def styled(fn: _F) -> _F:
    """Run a figure function under the house style (fonts, plain-text labels, dpi)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        plt = require_matplotlib()
        with plt.rc_context(STYLE):
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _savefig(fig: Any, fh: Any, fmt: str) -> None:
    """``fig`` saved as ``fmt`` into the binary file ``fh``: no timestamp in svg/pdf metadata,
    so the same figure gives the same bytes."""
    meta: dict[str, Any] | None = None
    if fmt in ("svg", "pdf"):
        meta = {"Date": None} if fmt == "svg" else {"CreationDate": None}
    fig.savefig(fh, format=fmt, dpi=DPI, bbox_inches="tight", metadata=meta)


def _atomic_savefig(fig: Any, path: Path, fmt: str) -> None:
    """``fig`` saved as ``fmt`` into ``path`` through ``io.files.atomic_file`` (the one file
    writer)."""
    with atomic_file(path, "wb") as fh:
        _savefig(fig, fh, fmt)


def _figure_bytes(fig: Any, fmt: str) -> bytes:
    """``fig`` saved as ``fmt`` in memory: the bytes :func:`_atomic_savefig` would write."""
    buffer = io.BytesIO()
    _savefig(fig, buffer, fmt)
    return buffer.getvalue()


def file_stem(name: str) -> str:
    """``name`` as a safe file stem: characters other than letters, digits, ``._-`` become
    ``_`` and, when any changed, 8 hex digits of its SHA-256 keep distinct names distinct."""
    import hashlib

    stem = re.sub(r"[^A-Za-z0-9._-]", "_", str(name)).lstrip(".") or "figure"
    if stem != name:
        stem = f"{stem[:60]}_{hashlib.sha256(str(name).encode()).hexdigest()[:8]}"
    return stem


#: The largest magnitude a figure draws: matplotlib's tick arithmetic overflows near 1.8e308.
PLOT_LIMIT = 1e300  # clipped_note spells it


def plottable(values: Any) -> tuple[np.ndarray, int]:
    """``values`` as float64 with every finite value beyond ±PLOT_LIMIT clipped to it, and how
    many were clipped (the caller says so on the page; tables keep the values)."""
    v = np.asarray(values, dtype=np.float64).copy()
    big = np.isfinite(v) & (np.abs(v) > PLOT_LIMIT)
    v[big] = np.sign(v[big]) * PLOT_LIMIT
    return v, int(big.sum())


def clipped_note(n: int, table: str = "the tables") -> str:
    """The caption sentence for ``n`` values :func:`plottable` clipped ("" when none)."""
    if not n:
        return ""
    return (
        f" {n} values beyond ±1e300 are drawn at ±1e300 (clipped for drawing only: {table} "
        f"{'holds' if table.endswith('.csv') else 'hold'} them)."
    )


def plain_labels(fig: Any) -> None:
    """Every text of ``fig`` without bidirectional controls (:func:`specbound.naming.
    without_bidi`): titles, axis labels, legend entries, annotations, and the tick labels of
    every formatter that can carry text (fixed labels, ``set_ticklabels``, categories) -- a
    model, zoo, axis or task name holding U+202E cannot reorder a label. The one place figures
    clean their labels: :func:`save` calls it on every figure."""
    text_kinds = (
        extras.load("matplotlib.ticker").FixedFormatter,
        extras.load("matplotlib.ticker").FuncFormatter,
        extras.load("matplotlib.category").StrCategoryFormatter,
    )
    for t in fig.findobj(extras.load("matplotlib.text").Text):
        text = t.get_text()
        if isinstance(text, str) and text != without_bidi(text):
            t.set_text(without_bidi(text))
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for f, put in (
                (axis.get_major_formatter(), axis.set_major_formatter),
                (axis.get_minor_formatter(), axis.set_minor_formatter),
            ):
                if isinstance(f, text_kinds):
                    put(_without_bidi_formatter(f))


def _without_bidi_formatter(inner: Any) -> Any:
    """A tick formatter giving ``inner``'s labels without bidirectional controls."""

    class WithoutBidi(extras.load("matplotlib.ticker").Formatter):  # type: ignore[misc]
        def __call__(self, x: Any, pos: Any = None) -> str:
            return without_bidi(inner(x, pos))

        def format_ticks(self, values: Any) -> list[str]:
            return [without_bidi(v) for v in inner.format_ticks(values)]

        def get_offset(self) -> str:
            return without_bidi(inner.get_offset())

        def set_locs(self, locs: Any) -> None:
            inner.set_locs(locs)

        def set_axis(self, axis: Any) -> None:
            super().set_axis(axis)
            inner.set_axis(axis)

        def format_data(self, value: Any) -> str:
            return without_bidi(inner.format_data(value))

        def format_data_short(self, value: Any) -> str:
            return without_bidi(inner.format_data_short(value))

    return WithoutBidi()


def save(fig: Any, out_dir: Path, name: str, title: str, caption: str = "") -> Figure:
    """Write ``name``.svg (or each format :func:`writing_formats` names, e.g. ``name``.png and
    ``name``.pdf) into ``out_dir`` (``name`` made a safe file stem, :func:`file_stem`; every
    label without bidirectional controls, :func:`plain_labels`); close the figure. Within
    :func:`drawing_in_memory`, the files' bytes are kept on the figure instead, and nothing is
    written."""
    plt = require_matplotlib()
    name = file_stem(name)
    out_dir = Path(out_dir)
    memory = _IN_MEMORY.get()
    if not memory:
        out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.{f}" for f in _CURRENT.get()]
    contents: list[bytes] | None = [] if memory else None
    try:
        plain_labels(fig)
        with plt.rc_context(STYLE):
            for p in paths:
                if contents is not None:
                    contents.append(_figure_bytes(fig, p.suffix[1:]))
                else:
                    _atomic_savefig(fig, p, p.suffix[1:])
    finally:
        plt.close(fig)
    return Figure(name, title, paths, caption, contents)


def axis_label(quantity: str, unit: str | None = None, log: bool = False) -> str:
    """``quantity [unit] (log scale)``: the one way an axis is labelled."""
    text = quantity + (f" [{unit}]" if unit else "")
    return text + (" (log scale)" if log else "")


# --- ticks -----------------------------------------------------------------------------------

_SUP = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _pow10(k: int) -> str:
    return "10" + str(k).translate(_SUP)


def plain_number(v: float) -> str:
    """A tick label: 0.5, 2, 150, 3000, 25,000; powers of ten beyond as 10⁵ (plain text),
    others as 1.5e+07."""
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else ""
    e = math.log10(abs(v))
    exact = abs(e - round(e)) < 1e-9
    if 1e-3 <= abs(v) < 1e4:
        return f"{v:.4g}"
    if exact:
        return ("-" if v < 0 else "") + _pow10(round(e))
    if 1e4 <= abs(v) < 1e7:
        return f"{v:,.0f}"
    return f"{v:.2g}"


def log_ticks(lo: float, hi: float, max_ticks: int = 8) -> list[float]:
    """Explicit ticks for a log axis over [lo, hi] (lo > 0): 1-2-5 steps within two decades,
    powers of ten (thinned to at most ``max_ticks``) beyond."""
    lo, hi = float(lo), float(hi)
    if not (lo > 0 and hi >= lo):
        return []
    decades = math.log10(hi / lo) if hi > lo else 0.0
    e0, e1 = math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1
    for mant in ((1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8), (1, 1.5, 2, 3, 5, 7), (1, 2, 5), (1,)):
        if decades > 2.5 and mant != (1,):
            continue
        ticks = [m * 10.0**e for e in range(e0, e1 + 1) for m in mant]
        ticks = [t for t in ticks if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)]
        if 2 <= len(ticks) <= max_ticks:
            return ticks
    ticks = [10.0**e for e in range(e0, e1 + 1) if lo <= 10.0**e <= hi]
    step = max(1, math.ceil(len(ticks) / max_ticks))
    ticks = ticks[::step]
    if len(ticks) < 2:
        ticks = sorted({lo, hi})
    return ticks


def plain_log_axis(ax: Any, which: str, lo: float, hi: float, max_ticks: int = 8) -> None:
    """Log scale on ``which`` ("x" or "y") with explicit plain ticks over [lo, hi]."""
    ticker = extras.load("matplotlib.ticker")

    pad = (hi / lo) ** 0.06 if hi > lo else 1.15
    lim = (lo / pad, hi * pad)
    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log")
    (ax.set_ylim if which == "y" else ax.set_xlim)(*lim)
    axis.set_major_locator(ticker.FixedLocator(log_ticks(*lim, max_ticks=max_ticks)))
    axis.set_minor_locator(ticker.NullLocator())
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _pos: plain_number(v)))


def value_ticks(ax: Any, which: str, values: Sequence[float], log2: bool = False) -> None:
    """Ticks exactly at ``values`` (e.g. the N or L of the grid), plain labels."""
    ticker = extras.load("matplotlib.ticker")

    vals = sorted({float(v) for v in values})
    axis = ax.yaxis if which == "y" else ax.xaxis
    if log2:
        (ax.set_yscale if which == "y" else ax.set_xscale)("log", base=2)
    if len(vals) > 12:  # keep every k-th so labels never collide
        vals = vals[:: math.ceil(len(vals) / 12)]
    axis.set_major_locator(ticker.FixedLocator(vals))
    axis.set_minor_locator(ticker.NullLocator())
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _pos: plain_number(v)))


def integer_axis(ax: Any, which: str, n: int, max_ticks: int = 16) -> None:
    """Integer ticks 0..n-1, every k-th when n is large."""
    ticker = extras.load("matplotlib.ticker")

    step = max(1, math.ceil(n / max_ticks))
    for k in (1, 2, 4, 5, 8, 10, 16, 20, 25, 50, 100):
        if k >= step:
            step = k
            break
    axis = ax.yaxis if which == "y" else ax.xaxis
    axis.set_major_locator(ticker.FixedLocator(list(range(0, n, step))))
    axis.set_minor_locator(ticker.NullLocator())


# --- shared pieces ---------------------------------------------------------------------------


def pick_layers(num_layers: int, k: int = 4) -> list[int]:
    """Up to ``k`` layers spread over the depth: first, last and evenly in between."""
    if num_layers <= k:
        return list(range(num_layers))
    return sorted({round(float(x)) for x in np.linspace(0, num_layers - 1, k)})


def layer_list(layers: Sequence[int], num_layers: int) -> str:
    shown = ", ".join(str(l) for l in layers)
    if len(layers) == num_layers:
        return f"all {num_layers} layers ({shown})" if num_layers > 1 else "layer 0"
    return f"layers {shown} of 0..{num_layers - 1}"


def band(rows: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Median, min and max over ragged rows (padded with NaN)."""
    n = max(r.size for r in rows)
    a = np.full((len(rows), n), np.nan)
    for i, r in enumerate(rows):
        a[i, : r.size] = r
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(a, axis=0), np.nanmin(a, axis=0), np.nanmax(a, axis=0)


def legend_below(fig: Any, axes: Any, ncol: int = 6) -> None:
    """One legend for all panels, in a row under them (never over a curve)."""
    handles, labels = {}, []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    if labels:
        fig.legend(
            [handles[k] for k in labels],
            labels,
            loc="outside lower center",
            frameon=False,
            ncol=min(len(labels), ncol),
        )


def layer_colors(layers: Sequence[int]) -> dict[int, Any]:
    """One colour per layer: tab10 up to 10 layers, viridis beyond."""
    plt = require_matplotlib()
    if len(layers) <= 10:
        cmap = plt.get_cmap("tab10")
        return {l: cmap(i % 10) for i, l in enumerate(layers)}
    cmap = plt.get_cmap("viridis")
    return {l: cmap(i / max(len(layers) - 1, 1) * 0.9) for i, l in enumerate(layers)}
