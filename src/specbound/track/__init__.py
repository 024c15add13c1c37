"""Measures during training (SPEC 11): ``Tracker`` for plain loops, callbacks for frameworks.

* :mod:`.tracker` -- :class:`Tracker`: ``tracker.step(step, train_loss=..., test_acc=...)``
  evaluates when ``step % every == 0`` (or, with ``every="auto"``, when the time budget allows);
  ``tracker.evaluate(step, **metrics)`` evaluates now. ``data=`` adds SPEC 12's data measures.
* :mod:`.config` -- :class:`TrackerConfig`: every setting of a tracker, as one value
  (``Tracker(model, TrackerConfig(out=..., every=...))``; the keywords still work).
* :mod:`.trackfile` -- ``track.csv``: the one writer (whole rows) and reader (:func:`read_track`).
* :mod:`.sinks` -- TensorBoard (``DIR/tensorboard``), the active W&B run, an active trackio run.
* :mod:`.callbacks` -- ``SpecboundCallback`` (a ``transformers.TrainerCallback``) and
  ``SpecboundLightningCallback`` (``lightning`` / ``pytorch_lightning``).
* :mod:`.live` -- a live module's weights in place, and :func:`data_measures`.
"""

from __future__ import annotations

from typing import Any

from . import callbacks
from .callbacks import lightning_callback as make
from .config import TrackerConfig
from .live import data_measures, find_model, live_state, model_device
from .tracker import (
    Tracker,
    all_data_measure_names,
    all_measure_names,
    computed_columns,
    half_change_step,
    next_auto_step,
    scalar_metrics,
    type_stats,
)
from .trackfile import (
    ANALYSIS_COLUMNS,
    BASE_COLUMNS,
    FORM_COLUMNS,
    NOTE_COLUMN,
    NOTE_COLUMNS,
    TRACK_CSV,
    TRACK_FORMAT,
    TRACK_JSON,
    TYPE_COLUMNS,
    TYPE_STATS,
    TrackFile,
    read_track,
)

__all__ = [
    "ANALYSIS_COLUMNS",
    "BASE_COLUMNS",
    "FORM_COLUMNS",
    "NOTE_COLUMN",
    "NOTE_COLUMNS",
    "TRACK_CSV",
    "TRACK_FORMAT",
    "TRACK_JSON",
    "TYPE_COLUMNS",
    "TYPE_STATS",
    "SpecboundCallback",
    "SpecboundLightningCallback",
    "TrackFile",
    "Tracker",
    "TrackerConfig",
    "all_data_measure_names",
    "all_measure_names",
    "computed_columns",
    "data_measures",
    "find_model",
    "half_change_step",
    "lightning_callback",
    "live_state",
    "model_device",
    "next_auto_step",
    "read_track",
    "scalar_metrics",
    "type_stats",
]


def lightning_callback(package: str | None = None) -> type:
    """The Lightning callback class for ``package`` (see :mod:`.callbacks`)."""
    return make(package)


def __getattr__(name: str) -> Any:
    if name in ("SpecboundCallback", "SpecboundLightningCallback"):
        return getattr(callbacks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
