"""One vocabulary for the generalization gap (SPEC 10), used by correlate and the trajectory report.

The gap g of a model is

- ``accuracy``: train accuracy - test accuracy (``train_acc - test_acc``), or
- ``loss``: test loss - train loss (``test_loss - train_loss``);

``auto`` takes the accuracy gap when both accuracies are there, else the loss gap. The short
spellings ``acc`` (and ``accuracy``) are the same kind. Metric column pairs are tried in the order
of ``ACCURACY_PAIRS`` / ``LOSS_PAIRS`` (a zoo manifest uses the first pair; a training loop may
report ``val_*`` or ``eval_*`` metrics).

Pure functions on a mapping of columns (a DataFrame, or a dict of arrays): no files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import Param, SpecboundError, SpecboundTypeError, SpecboundValueError
from ..validation import Satisfies

#: The kinds a user may choose (``auto`` picks one of the other two).
GAP_KINDS = ("accuracy", "loss")
GAP_CHOICES = ("auto", "accuracy", "acc", "loss")
_ALIASES = {"acc": "accuracy", "accuracy": "accuracy", "loss": "loss", "auto": "auto"}

#: (train column, test column) pairs, first match wins.
ACCURACY_PAIRS: tuple[tuple[str, str], ...] = (
    ("train_acc", "test_acc"),
    ("train_accuracy", "test_accuracy"),
    ("train_acc", "val_acc"),
    ("train_accuracy", "val_accuracy"),
    ("train_acc", "eval_acc"),
    ("train_accuracy", "eval_accuracy"),
)
LOSS_PAIRS: tuple[tuple[str, str], ...] = (
    ("train_loss", "test_loss"),
    ("train_loss", "val_loss"),
    ("train_loss", "eval_loss"),
)


@dataclass(frozen=True)
class Gap:
    """A resolved gap: its kind, the two columns and the label drawn on figures.

    ``values = sign * (columns[train] - columns[test])`` with sign +1 for accuracy, -1 for loss.
    """

    kind: str
    train: str
    test: str

    @property
    def label(self) -> str:
        """``gap = train_acc - test_acc`` or ``gap = test_loss - train_loss``."""
        if self.kind == "accuracy":
            return f"gap = {self.train} - {self.test}"
        return f"gap = {self.test} - {self.train}"

    def values(self, columns: Mapping[str, Any]) -> np.ndarray:
        """The gap of every row (NaN where a metric is missing or not a number, or where the
        difference of two finite metrics overflows float64)."""
        tr = _numbers(columns[self.train])
        te = _numbers(columns[self.test])
        with np.errstate(over="ignore", invalid="ignore"):
            g = tr - te if self.kind == "accuracy" else te - tr
        g[np.isfinite(tr) & np.isfinite(te) & ~np.isfinite(g)] = np.nan
        return g


def _numbers(col: Any) -> np.ndarray:
    try:
        import pandas as pd

        return pd.to_numeric(pd.Series(col), errors="coerce").to_numpy(float)
    except ImportError:  # pragma: no cover - pandas is a dependency
        return np.asarray(col, dtype=float)


def normalize_kind(kind: str | None, name: str = "gap") -> str:
    """``auto``, ``accuracy`` or ``loss`` from a user's spelling (None: ``auto``); a non-string
    is a ``SpecboundTypeError``, an unknown kind a ``SpecboundValueError`` naming ``name``."""
    if kind is None:
        return "auto"
    if not isinstance(kind, str):
        raise SpecboundTypeError(
            Param(name),
            f" must be one of auto, accuracy (acc) or loss, got {kind!r} ({type(kind).__name__})",
        )
    k = _ALIASES.get(kind.strip().lower())
    if k is None:
        raise SpecboundValueError(
            Param(name), f" must be one of auto, accuracy (acc) or loss, got {kind!r}"
        )
    return k


#: A gap kind's constraints (:mod:`specbound.validation`): None (auto) or a spelling of
#: ``GAP_CHOICES`` (any case), normalised to ``auto``, ``accuracy`` or ``loss``.
GAP = (Satisfies(normalize_kind, "auto, accuracy (acc) or loss", named=True),)


def resolve_gap(columns: Any, kind: str | None = "auto", *, strict: bool = True) -> Gap | None:
    """The gap of ``kind`` from the names in ``columns`` (an iterable of column names).

    ``strict``: a kind whose metrics are absent is a SpecboundError naming the missing
    columns; otherwise None is returned (the trajectory report draws no gap then).
    """
    k = normalize_kind(kind)
    names = set(columns)
    tries: list[tuple[str, str, str]] = []
    if k in ("auto", "accuracy"):
        tries += [("accuracy", a, b) for a, b in ACCURACY_PAIRS]
    if k in ("auto", "loss"):
        tries += [("loss", a, b) for a, b in LOSS_PAIRS]
    for kk, a, b in tries:
        if a in names and b in names:
            return Gap(kk, a, b)
    if not strict:
        return None
    if k == "auto":
        raise SpecboundError(
            "no gap: the table has neither train_acc and test_acc nor train_loss and test_loss"
        )
    a, b = ("train_acc", "test_acc") if k == "accuracy" else ("test_loss", "train_loss")
    missing = sorted(c for c in (a, b) if c not in names)
    raise SpecboundError(
        Param("gap", k), f" needs columns {a} and {b}; the table lacks {', '.join(missing)}"
    )


def gap_values(table: Any, kind: str = "accuracy") -> np.ndarray:
    """g = train_acc - test_acc (``accuracy``) or test_loss - train_loss (``loss``)."""
    k = normalize_kind(kind, "gap")
    if k == "auto":
        raise SpecboundError(Param("gap"), " must be one of accuracy, loss, got 'auto'")
    a, b = ("train_acc", "test_acc") if k == "accuracy" else ("test_loss", "train_loss")
    missing = [c for c in (a, b) if c not in table.columns]
    if missing:
        raise SpecboundError(
            Param("gap", k), f" needs columns {a} and {b}; the manifest lacks {', '.join(missing)}"
        )
    pair = ("train_acc", "test_acc") if k == "accuracy" else ("train_loss", "test_loss")
    return Gap(k, *pair).values(table)


def default_kind(columns: Any) -> str:
    """``accuracy`` when both accuracies are columns, else ``loss`` when both losses are, else
    ``accuracy`` (whose absence is then reported by :func:`gap_values`)."""
    names = set(columns)
    if {"train_acc", "test_acc"} <= names:
        return "accuracy"
    if {"train_loss", "test_loss"} <= names:
        return "loss"
    return "accuracy"
