"""The columns of the protocol's tables, derived from the registry (:mod:`.registry`): what the
writers write and the checked readers (``studies.readback``) check.

- correlation.csv: ``LEAD``, then each statistic's columns in registry order (per axis for a
  per-axis statistic), then ``TAIL`` (:func:`correlation_columns`; typed:
  :func:`correlation_cells`);
- differences.csv: ``DIFFERENCE_COLUMNS`` (typed: ``DIFFERENCE_CELLS``); its ``statistic``
  column holds the compared statistics' names (``REGISTRY.compared()``);
- primary.csv (``study``): ``PRIMARY_COLUMNS``;
- exploratory.csv (``study``): ``EXPLORATORY_COLUMNS``, a folder's exploratory rows of
  differences.csv with the folder and its task in front.

:func:`carriers` says which tables carry a statistic, with the column names.
"""

from __future__ import annotations

from collections.abc import Sequence

from .registry import AXIS, REGISTRY, Cell, Statistic
from .verdicts import EXPLORATORY, PRIMARY, VERDICTS

#: The columns of correlation.csv before the statistics' ...
LEAD = (
    Cell("measure", "text", required=True, empty=False),
    Cell("n_models", "int", 0.0),
    Cell("n_configurations", "int", 0.0),
)
#: ... and after them (the verdict words of the measure's row).
TAIL = (Cell("verdict", "any"),)

_UNIT = dict(low=0.0, high=1.0)
#: differences.csv, typed: one row per difference (measure - versus) on a compared statistic.
DIFFERENCE_CELLS = (
    Cell("measure", "text", required=True, empty=False),
    Cell("versus", "text", required=True, empty=False),
    Cell("statistic", "text", required=True, empty=False),
    Cell("delta", required=True),
    Cell("low", required=True),
    Cell("high", required=True),
    Cell("family", "text", empty=False, choices=(PRIMARY, EXPLORATORY)),
    Cell("contrast", "text"),
    Cell("B", "int", 0.0),
    Cell("p", **_UNIT),  # type: ignore[arg-type]
    Cell("p_holm", **_UNIT),  # type: ignore[arg-type]
    Cell("q_bh", **_UNIT),  # type: ignore[arg-type]
    Cell("verdict", "text", empty=False, choices=VERDICTS),
    Cell("evidence", "text"),
    Cell("verdict_stable", "any"),
    Cell("p_seeds", "any"),
    Cell("low_seeds", "any"),
    Cell("high_seeds", "any"),
)
DIFFERENCE_COLUMNS = [c.name for c in DIFFERENCE_CELLS]
#: The columns of differences.csv a difference is computed with (before its verdicts).
COMPUTED_COLUMNS = DIFFERENCE_COLUMNS[:10]
#: The per-seed columns of a primary row (protocol v4).
SEED_COLUMNS = ("p_seeds", "low_seeds", "high_seeds")
#: primary.csv of a study: every primary row of every folder, the study's Holm and verdicts.
PRIMARY_COLUMNS = (
    "folder", "task", "zoos", "role", "group", "contrast", "measure", "versus", "statistic",
    "delta", "low", "high", "B", "p", "p_holm_folder", "p_holm", "verdict", "verdict_stable",
    "evidence", "replicated", "independence", "overlaps", "shared_models",
)  # fmt: skip
#: exploratory.csv of a study: the exploratory rows of each folder's differences.csv.
EXPLORATORY_COLUMNS = ("folder", "task", *DIFFERENCE_COLUMNS)


def correlation_cells(axes: Sequence[str]) -> list[Cell]:
    """The columns of correlation.csv for ``axes``, typed, in order."""
    out = list(LEAD)
    for st in REGISTRY.statistics.values():
        out += st.cells(list(axes))
    return [*out, *TAIL]


def correlation_columns(axes: Sequence[str]) -> list[str]:
    """The columns of correlation.csv for ``axes``, in order."""
    return [c.name for c in correlation_cells(axes)]


def header_axes(header: Sequence[str]) -> list[str]:
    """The axes of a correlation.csv ``header``: the names ``a`` for which every column of
    every per-axis statistic is there, in the order of the first per-axis statistic's columns."""
    per_axis = [st for st in REGISTRY.statistics.values() if st.per_axis]
    if not per_axis:
        return []
    have = set(header)
    first = per_axis[0]
    before, after = first.column_stem.split(AXIS, 1)
    lead = after + first.parts[0].suffix
    found = []
    for c in header:
        if c.startswith(before) and c.endswith(lead) and len(c) > len(before) + len(lead):
            a = c[len(before) : len(c) - len(lead)] if lead else c[len(before) :]
            if all(set(st.columns([a])) <= have for st in per_axis) and a not in found:
                found.append(a)
    return found


def correlation_schema(header: Sequence[str], axes: Sequence[str] | None = None) -> list[Cell]:
    """The typed columns of a correlation.csv with ``header`` (``axes``: its axes, default
    :func:`header_axes`): every registry column the header holds; a column the registry does
    not know is not in it (kept as read)."""
    cells = correlation_cells(header_axes(header) if axes is None else axes)
    have = set(header)
    return [c for c in cells if c.name in have or c.required]


def carriers(statistic: Statistic, axes: Sequence[str] = (AXIS,)) -> dict[str, list[str]]:
    """The tables that carry ``statistic`` and its columns there (``statistic`` of
    differences.csv, primary.csv and exploratory.csv: its name is a value of that column)."""
    out = {"correlation.csv": statistic.columns(list(axes))}
    if statistic.compared:
        for table in ("differences.csv", "primary.csv", "exploratory.csv"):
            out[table] = ["statistic"]
    return out
