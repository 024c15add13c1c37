"""The :class:`TrackerConfig` of a :class:`~specbound.track.tracker.Tracker` (SPEC 11): every
setting besides the model, its config and the data batches, checked when it is made."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from ..errors import Param, SpecboundTypeError
from ..linalg.model import DEVICE
from ..measures import measure_names
from ..measures.bounds import GRID_M, L_PHI
from ..measures.data import data_measure_names
from ..validation import (
    Boolean,
    Constraints,
    Interval,
    Names,
    Options,
    PathLike,
    Satisfies,
    validate_fields,
)

__all__ = ["TrackerConfig", "tracker_config"]


@dataclass(frozen=True)
class TrackerConfig:
    """What a :class:`Tracker` is told besides the model, its config and the data batches.

    ``out``: the track directory (track.csv, track.json, sinks). ``every``: evaluate when
    ``step % every == 0``, or ``"auto"``: keep cumulative analysis time <= ``budget`` (a share
    of wall time in (0, 1), default 5%) of the wall time since the tracker started.
    ``measures``: names (default: every SPEC 9 measure). ``device``: the analyze device,
    ``"auto"`` = the model's own. ``l_phi``, ``grid_m``: as in :func:`specbound.analyze`.
    ``tensorboard``/``wandb``/``trackio``: None = use when available. ``data_measures`` (names,
    default all) and ``data_options`` (``max_examples``, ``seed``, ``perturb``, ``logits_fn``,
    ``n``): SPEC 12's data measures, as in :func:`specbound.data_measures` (they need the
    tracker's ``data=``). ``resume``: continue an existing track file (steps already there are
    skipped); ``overwrite``: replace it; neither: an existing file with rows is refused.
    ``strict``: an evaluation that fails raises instead of one warning and an empty row.

    Every field is checked when the config is made (``SpecboundError`` naming the field):
    ``TrackerConfig(l_phi=-1)``, ``grid_m=0``, ``device="tpu"`` or ``out=""`` are refused
    here, not found empty in every row. ``measures`` / ``data_measures`` may be one name as a
    string (``"htsr_alpha"``, or comma-separated names); they are kept as lists.
    """

    out: str | os.PathLike[str]
    every: int | str = 100
    measures: Iterable[str] | None = None
    budget: float = 0.05
    device: str | None = "auto"
    l_phi: float | None = None
    grid_m: int | None = None
    tensorboard: bool | None = None
    wandb: bool | None = None
    trackio: bool | None = None
    data_measures: Iterable[str] | str | None = None
    data_options: Mapping[str, Any] | None = None
    resume: bool = False
    overwrite: bool = False
    strict: bool = False

    def __post_init__(self) -> None:
        validate_fields(self, _constraints())


def _constraints() -> Constraints:
    """Each field's constraints (:mod:`specbound.validation`), checked when a config is made."""
    flag = (None, Boolean())
    return {
        "out": (PathLike(),),
        "every": (Options("auto"), Interval(int, 1)),
        "measures": (None, Names(measure_names, what="measure")),
        "budget": (Interval(float, 0.0, 1.0, closed="neither"),),
        "device": (Options("auto"), *DEVICE),
        "l_phi": (None, *L_PHI),
        "grid_m": GRID_M,
        "tensorboard": flag,
        "wandb": flag,
        "trackio": flag,
        "data_measures": (None, Names(data_measure_names, what="data measure")),
        "data_options": (None, Satisfies(_mapping, "a dict of options")),
        "resume": (Boolean(),),
        "overwrite": (Boolean(),),
        "strict": (Boolean(),),
    }


def _mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecboundTypeError(
            Param("data_options"), f" must be a dict, got {value!r} ({type(value).__name__})"
        )
    return value


_SETTINGS = frozenset(f.name for f in fields(TrackerConfig))


def tracker_config(settings: TrackerConfig | None, options: Mapping[str, Any]) -> TrackerConfig:
    """``settings`` with the keywords ``options`` (TrackerConfig fields) put over it; without
    ``settings`` the keywords alone, ``out`` required. A keyword that is no field is a
    ``TypeError``, as for any function."""
    unknown = [k for k in options if k not in _SETTINGS]
    if unknown:
        raise TypeError(f"Tracker.__init__() got an unexpected keyword argument '{unknown[0]}'")
    if settings is None:
        if "out" not in options:
            raise TypeError("Tracker.__init__() missing 1 required keyword-only argument: 'out'")
        return TrackerConfig(**options)
    if not isinstance(settings, TrackerConfig):
        raise SpecboundTypeError(
            f"settings must be a TrackerConfig, got {settings!r} ({type(settings).__name__})"
        )
    return replace(settings, **options) if options else settings
