"""The correlation protocol as data (SPEC 10): one registry of its statistics, contrasts and
primary families. Pure: no files, no pandas.

- :class:`Statistic`: one statistic of correlation.csv (its name, the functions that compute
  it, its range, its direction, how it is bootstrapped, its columns, whether differences.csv
  compares it);
- :class:`Contrast`: one primary contrast (``measure - versus``, e.g. P1);
- :class:`Family`: a set of primary contrasts on one statistic and the rule that chooses it
  for a zoo (``primary`` auto, or by name).

``REGISTRY`` holds them in order; the order of the statistics is the order of their columns in
correlation.csv. :func:`register` adds an entry for good (the entry modules of this package);
:func:`registered` adds entries for the length of a ``with`` block (tests, scripts). The tables
derived from the registry are :mod:`.tables`'s; the entries of the protocol are in
:mod:`.statistics` and :mod:`.families`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np

    from .sample import Sample

#: How a statistic's interval is drawn: resampling the configurations (a drawn configuration
#: brings all its seeds), resampling the configurations within each cell of depth x width x n
#: (tau_arch), or not at all (no interval).
Bootstrap = Literal["configurations", "cells", "none"]
BOOTSTRAPS: tuple[str, ...] = ("configurations", "cells", "none")
#: The tables that carry statistics: correlation.csv (one column set per statistic),
#: differences.csv, primary.csv and exploratory.csv (a compared statistic's name in their
#: ``statistic`` column).
TABLES = ("correlation.csv", "differences.csv", "primary.csv", "exploratory.csv")
#: The placeholder of a per-axis column stem ("psi_{axis}").
AXIS = "{axis}"


@dataclass(frozen=True)
class Cell:
    """One column of a table: ``kind`` real (a number in [``low``, ``high``]), int (a whole
    number in [``low``, ``high``]), text (``choices``: the words it may hold, None: any), or
    any (kept as read); ``required``: a reader refuses a file without it; ``empty``: a cell
    may be empty (undefined)."""

    name: str
    kind: Literal["real", "int", "text", "any"] = "real"
    low: float | None = None
    high: float | None = None
    required: bool = False
    empty: bool = True
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Part:
    """One column a statistic writes to correlation.csv: its ``suffix`` after the statistic's
    stem ("" the value itself, "_low" / "_high" its interval, "_cells" a count...) and its
    ``kind``: value (in the statistic's range), int (a count >= 0) or text."""

    suffix: str
    kind: Literal["value", "int", "text"] = "value"


#: The value and its interval: the columns of a bootstrapped statistic.
INTERVAL = (Part(""), Part("_low"), Part("_high"))
#: The value alone.
VALUE = (Part(""),)

#: ``point(sample)``: the statistic's cells of one measure's correlation.csv row (its columns
#: but ``_low`` / ``_high``), keyed by column name.
PointFn = Callable[["Sample"], Mapping[str, Any]]
#: ``draws(sample, counts)``: per column with an interval, the statistic on each resample of
#: ``counts`` (draws x configurations, drawn as ``bootstrap`` says), keyed by column name.
DrawsFn = Callable[["Sample", "np.ndarray"], Mapping[str, "np.ndarray"]]
#: ``blind(sample)``: why the measure cannot see what the statistic measures ("" when it can);
#: a difference with such a measure is "not comparable".
BlindFn = Callable[["Sample"], str]
#: ``strata(sample)``: the statistic's strata (or cells) with enough configurations.
StrataFn = Callable[["Sample"], int]


@dataclass(frozen=True)
class Statistic:
    """One statistic of the protocol (module doc).

    ``name``: its key (the ``statistic`` of differences.csv); ``stem``: the stem of its columns
    in correlation.csv (default ``name``; with ``{axis}``, one set of columns per axis, e.g.
    ``psi_{axis}``); ``parts``: its columns (suffixes of the stem); ``low`` / ``high``: its range
    (None: unbounded); ``larger_is_better``: its direction (tau-like: larger = the measure ranks
    the gap better; sign-error: smaller is better); ``bootstrap``: how its interval is drawn
    (``BOOTSTRAPS``; the ``_low`` / ``_high`` parts come from ``draws``); ``compared``: a row of
    differences.csv per measure (and so of exploratory.csv, and of primary.csv when a family is
    on it); ``compared_when(rows)``: with ``compared``, whether this study compares it (rows:
    correlation.csv's records; None: always); ``fixed_n``: inside a stratum of equal n a measure
    and its ``_per_sqrt_n`` form rank alike (never compared with each other); ``strata`` /
    ``strata_words``: the evidence its verdicts need (>= ``verdicts.MIN_STRATA`` strata with >=
    ``verdicts.MIN_STRATUM_CONFIGURATIONS`` configurations, named ``strata_words``);
    ``doc``: one line, the formula."""

    name: str
    point: PointFn
    low: float | None
    high: float | None
    larger_is_better: bool
    bootstrap: Bootstrap = "none"
    draws: DrawsFn | None = None
    parts: tuple[Part, ...] = VALUE
    stem: str = ""
    compared: bool = False
    compared_when: Callable[[list[dict[str, Any]]], bool] | None = None
    fixed_n: bool = False
    blind: BlindFn | None = None
    strata: StrataFn | None = None
    strata_words: str = ""
    doc: str = ""

    def __post_init__(self) -> None:
        if not self.name or not self.name.isidentifier():
            raise ValueError(f"statistic name {self.name!r} must be an identifier")
        if self.bootstrap not in BOOTSTRAPS:
            raise ValueError(f"statistic {self.name}: bootstrap {self.bootstrap!r}")
        if (self.bootstrap == "none") != (self.draws is None):
            raise ValueError(f"statistic {self.name}: draws go with a bootstrap, and only then")
        if self.compared and (self.per_axis or self.bootstrap == "none"):
            raise ValueError(f"statistic {self.name}: a compared statistic has draws, no axis")
        if (self.strata is None) != (not self.strata_words):
            raise ValueError(f"statistic {self.name}: strata and strata_words go together")

    @property
    def column_stem(self) -> str:
        return self.stem or self.name

    @property
    def per_axis(self) -> bool:
        return AXIS in self.column_stem

    def stems(self, axes: list[str] | tuple[str, ...]) -> list[str]:
        """The stems of its columns: one, or one per axis."""
        s = self.column_stem
        return [s.replace(AXIS, a) for a in axes] if self.per_axis else [s]

    def columns(self, axes: list[str] | tuple[str, ...]) -> list[str]:
        """Its columns of correlation.csv, in order."""
        return [stem + p.suffix for stem in self.stems(axes) for p in self.parts]

    def interval_stems(self, axes: list[str] | tuple[str, ...]) -> list[str]:
        """The stems whose value has an interval (``_low`` / ``_high`` parts)."""
        if self.bootstrap == "none" or Part("_low") not in self.parts:
            return []
        return self.stems(axes)

    def cells(self, axes: list[str] | tuple[str, ...]) -> list[Cell]:
        """Its columns as typed cells (the checked reader's schema)."""
        out = []
        for stem in self.stems(axes):
            for p in self.parts:
                if p.kind == "value":
                    out.append(Cell(stem + p.suffix, "real", self.low, self.high))
                else:
                    out.append(Cell(stem + p.suffix, "int", 0.0) if p.kind == "int" else
                               Cell(stem + p.suffix, "text"))  # fmt: skip
        return out


@dataclass(frozen=True)
class Contrast:
    """One primary contrast: the difference ``measure - versus`` (e.g. P1 spectrum_adaptive -
    norm_based), on its family's statistic."""

    id: str
    measure: str
    versus: str
    doc: str = ""


@dataclass(frozen=True)
class ZooFacts:
    """What chooses a zoo's primary family: the distinct training-set sizes ``n_sizes``, the
    cells of depth x width x n with enough configurations ``cells_ok``, whether the models have
    depth and width (``has_cells``) and the design a manifest or study declares (``declared``,
    e.g. "adaptivity"; None when none)."""

    n_sizes: int
    cells_ok: int
    has_cells: bool
    declared: str | None = None


@dataclass(frozen=True)
class Family:
    """A family of primary contrasts (SPEC 10): ``name`` (a value of ``primary``),
    ``contrasts`` (ids of :class:`Contrast` entries, in order), ``statistic(facts)`` (the
    statistic they are on), ``statistics`` (every statistic it can be on: the family a
    differences.csv's primary statistic implies), ``applies(facts)`` (``primary`` auto takes the
    first family by ``rank`` that applies), ``refuse(facts)`` (why it cannot be chosen by name,
    "" when it can), ``design``: the design a zoo must declare for it (``ZooFacts.declared``;
    None: any zoo). A family with a design is never implied by its statistic alone
    (:meth:`Registry.family_of`): its folders record its name (correlate.json
    ``primary_family``)."""

    name: str
    contrasts: tuple[str, ...]
    statistic: Callable[[ZooFacts], str]
    statistics: tuple[str, ...]
    applies: Callable[[ZooFacts], bool]
    refuse: Callable[[ZooFacts], str] = lambda facts: ""
    rank: int = 100
    doc: str = ""
    design: str | None = None


@dataclass
class Registry:
    """The statistics, contrasts and families of the protocol, in registration order."""

    statistics: dict[str, Statistic] = field(default_factory=dict)
    contrasts: dict[str, Contrast] = field(default_factory=dict)
    families: dict[str, Family] = field(default_factory=dict)

    def add(self, entry: Statistic | Contrast | Family) -> None:
        """Add ``entry``; a name (or a statistic's columns) already taken is refused
        (ValueError)."""
        if isinstance(entry, Statistic):
            _vacant(self.statistics, entry.name, "statistic")
            stems = {s.column_stem for s in self.statistics.values()}
            if entry.column_stem in stems:
                raise ValueError(f"columns {entry.column_stem!r} are taken")
            self.statistics[entry.name] = entry
        elif isinstance(entry, Contrast):
            _vacant(self.contrasts, entry.id, "contrast")
            self.contrasts[entry.id] = entry
        elif isinstance(entry, Family):
            _vacant(self.families, entry.name, "family")
            gone = [c for c in entry.contrasts if c not in self.contrasts]
            if gone:
                raise ValueError(f"family {entry.name}: no contrast {gone[0]!r}")
            self.families[entry.name] = entry
        else:
            raise TypeError(f"not a protocol entry: {entry!r}")

    def remove(self, entry: Statistic | Contrast | Family) -> None:
        """Remove ``entry`` (as added)."""
        if isinstance(entry, Statistic):
            del self.statistics[entry.name]
        elif isinstance(entry, Contrast):
            del self.contrasts[entry.id]
        else:
            del self.families[entry.name]

    def statistic(self, name: str) -> Statistic | None:
        """The statistic ``name`` (None when none is registered)."""
        return self.statistics.get(name)

    def compared(self) -> list[Statistic]:
        """The statistics differences.csv compares, in order."""
        return [s for s in self.statistics.values() if s.compared]

    def ranked_families(self) -> list[Family]:
        """The families in the order ``primary`` auto tries them (by rank, then order)."""
        return sorted(self.families.values(), key=lambda f: f.rank)

    def primary_choices(self) -> tuple[str, ...]:
        """The values of ``primary``: auto, then every family's name."""
        return ("auto", *self.families)

    def family_of(self, statistic: str, name: str | None = None) -> Family | None:
        """The family ``name``, or (None) the first by rank that can be on ``statistic`` and
        needs no declared design."""
        if name is not None:
            return self.families.get(name)
        return next(
            (f for f in self.ranked_families() if statistic in f.statistics and f.design is None),
            None,
        )

    def contrasts_of(self, family: Family | None) -> tuple[tuple[str, str, str], ...]:
        """``(id, measure, versus)`` of each contrast of ``family`` (() for None)."""
        if family is None:
            return ()
        return tuple(
            (c, self.contrasts[c].measure, self.contrasts[c].versus) for c in family.contrasts
        )


def _vacant(table: Mapping[str, Any], key: str, what: str) -> None:
    if key in table:
        raise ValueError(f"{what} {key!r} is registered already")


#: The protocol's one registry.
REGISTRY = Registry()


def register(*entries: Statistic | Contrast | Family) -> None:
    """Add ``entries`` to ``REGISTRY`` for good (module doc)."""
    for e in entries:
        REGISTRY.add(e)


@contextmanager
def registered(*entries: Statistic | Contrast | Family) -> Iterator[None]:
    """Add ``entries`` to ``REGISTRY`` for the length of the ``with`` block, then remove them."""
    done: list[Statistic | Contrast | Family] = []
    try:
        for e in entries:
            REGISTRY.add(e)
            done.append(e)
        yield
    finally:
        for e in reversed(done):
            REGISTRY.remove(e)
