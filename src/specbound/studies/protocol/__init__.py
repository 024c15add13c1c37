"""The correlation protocol (SPEC 10) as data and pure math: no files.

- :mod:`.registry`: the one registry of statistics, contrasts and primary families
  (:class:`Statistic`, :class:`Contrast`, :class:`Family`, ``REGISTRY``, :func:`register`,
  :func:`registered`);
- :mod:`.statistics`: the statistics' entries (Kendall's tau, Psi, the fixed-n forms, tau_arch,
  CMI, the sign-errors); :mod:`.families`: the contrasts P1-P3, A1-A3 and the rules
  choosing a zoo's primary family;
- :mod:`.adaptivity`: protocol v5's contrast D0, the ``adaptivity`` family and the
  pre-registered answer of a replicate pair of adaptivity zoos;
- :mod:`.tables`: the columns of correlation.csv, differences.csv, primary.csv and
  exploratory.csv, derived from the registry;
- the math: :mod:`.stats` (Kendall tau-b, Jiang's tau, Psi, the fixed-n statistics,
  sign-errors, the configuration bootstrap), :mod:`.arch` (tau_arch), :mod:`.mutual_info`
  (CMI), :mod:`.verdicts` (bootstrap p, Holm, BH, verdict words), :mod:`.sample` (what a
  statistic's functions get).

Adding a statistic or a contrast is one entry (docs/guide/add-a-statistic.md).
"""

from . import adaptivity, families, statistics, tables, verdicts
from .families import choose_family, primary_contrasts
from .registry import (
    BOOTSTRAPS,
    INTERVAL,
    REGISTRY,
    VALUE,
    Cell,
    Contrast,
    Family,
    Part,
    Registry,
    Statistic,
    ZooFacts,
    register,
    registered,
)
from .sample import Sample

#: The values of ``primary``: auto, then every family's name (``REGISTRY.primary_choices()``).
PRIMARY_CHOICES = REGISTRY.primary_choices()

__all__ = [
    "BOOTSTRAPS",
    "INTERVAL",
    "PRIMARY_CHOICES",
    "REGISTRY",
    "VALUE",
    "Cell",
    "Contrast",
    "Family",
    "Part",
    "Registry",
    "Sample",
    "Statistic",
    "ZooFacts",
    "adaptivity",
    "choose_family",
    "families",
    "primary_contrasts",
    "register",
    "registered",
    "statistics",
    "tables",
    "verdicts",
]
