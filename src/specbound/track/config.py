"""The :class:`TrackerConfig` of a :class:`~specbound.track.tracker.Tracker` (SPEC 11): every
setting besides the model, its config and the data batches, checked when it is made."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from ..errors import SpecboundError, SpecboundTypeError
from ..validation import check_bool, check_int

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

    ``every``, ``budget`` and the three flags are checked here (``SpecboundError``); the
    measure names when the tracker is made.
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
        every = self.every
        if every != "auto":
            try:
                check_int(every, "every", min=1)
            except SpecboundError as exc:
                raise type(exc)(
                    f"every must be a positive integer or 'auto', got {every!r}"
                ) from None
        budget = self.budget
        if not (isinstance(budget, (int, float)) and 0 < budget < 1):
            raise SpecboundError(f"budget must be a share of wall time in (0, 1), got {budget!r}")
        for flag in ("resume", "overwrite", "strict"):
            check_bool(getattr(self, flag), flag)


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
