"""Framework callbacks (SPEC 11): ``SpecboundCallback`` for a ``transformers.Trainer`` and
``SpecboundLightningCallback`` for ``lightning`` / ``pytorch_lightning``. The classes are built
on first use: the frameworks are optional."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import extras
from ..errors import SpecboundError
from .tracker import Tracker, scalar_metrics

#: log_history keys of the Trainer that are bookkeeping, not metrics.
_TRAINER_SKIP = {"step", "total_flos"}


def _trainer_metrics(log_history: Sequence[Mapping[str, Any]], step: int) -> dict[str, float]:
    """The latest value of every metric logged at or before ``step`` (end-of-run summary
    entries, which carry ``train_runtime``, are left out)."""
    out: dict[str, float] = {}
    for entry in log_history:
        if "train_runtime" in entry or entry.get("step", step) > step:
            continue
        out.update(scalar_metrics({k: v for k, v in entry.items() if k not in _TRAINER_SKIP}))
    return out


def _make_trainer_callback() -> type:
    base: Any = extras.transformers(
        "SpecboundCallback needs transformers: pip install transformers"
    ).TrainerCallback

    class SpecboundCallback(base):
        """Track measures in a ``transformers.Trainer`` (SPEC 11).

        The init weights are taken at ``on_train_begin`` (and step 0 is recorded there);
        measures are computed at ``on_step_end`` every ``every`` steps (or ``"auto"``) and the
        row is written after that step's logging/evaluation, with the latest values in
        ``state.log_history``. Other keywords go to :class:`Tracker`.
        """

        def __init__(
            self,
            every: int | str = 100,
            out: str | os.PathLike[str] | None = None,
            measures: Iterable[str] | None = None,
            **kwargs: Any,
        ) -> None:
            self.every, self.out, self.measures, self.kwargs = every, out, measures, kwargs
            self.tracker: Tracker | None = None
            self._pending: dict[str, Any] | None = None

        def on_train_begin(
            self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any
        ) -> None:
            if not state.is_world_process_zero or model is None:
                return
            out = self.out if self.out is not None else Path(args.output_dir) / "specbound"
            self.tracker = Tracker(
                model, every=self.every, out=out, measures=self.measures, **self.kwargs
            )
            if self.tracker.due(state.global_step):
                self._pending = self.tracker.compute(state.global_step)
                self._flush(state)

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self.tracker is not None and self.tracker.due(state.global_step):
                self._flush(state)
                self._pending = self.tracker.compute(state.global_step)

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self._flush(state)

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self._flush(state)
            if self.tracker is not None:
                self.tracker.close()

        def _flush(self, state: Any) -> None:
            if self._pending is None or self.tracker is None:
                return
            row, self._pending = self._pending, None
            self.tracker.emit(row, _trainer_metrics(state.log_history, row["step"]))

    return SpecboundCallback


def _lightning(package: str | None = None) -> Any:
    """``lightning.pytorch`` or ``pytorch_lightning`` (``package``; None: whichever imports)."""
    import importlib

    if package not in (None, "lightning", "pytorch_lightning"):
        raise SpecboundError(f"package must be lightning or pytorch_lightning, got {package!r}")
    names = {
        "lightning": ["lightning.pytorch"],
        "pytorch_lightning": ["pytorch_lightning"],
        None: ["lightning.pytorch", "pytorch_lightning"],
    }[package]
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise SpecboundError(
        f"SpecboundLightningCallback needs lightning: {extras.install_hint('lightning')}"
    )


def lightning_callback(package: str | None = None) -> type:
    """The Lightning callback class for ``package`` ("lightning" or "pytorch_lightning"; a
    Trainer accepts only callbacks of its own package). ``SpecboundLightningCallback`` is the
    one for whichever imports first (lightning, then pytorch_lightning)."""
    key = f"SpecboundLightningCallback[{package}]"
    if key not in _BUILT:
        _BUILT[key] = _make_lightning_callback(package)
    return _BUILT[key]


def _make_lightning_callback(package: str | None = None) -> type:
    pl = _lightning(package)
    base: Any = pl.Callback

    class SpecboundLightningCallback(base):
        """Track measures in a Lightning ``Trainer`` (SPEC 11).

        The model is the LightningModule if it has a Hugging Face ``.config``, else its first
        submodule that has one. Init weights at ``on_train_start`` (step 0 recorded there);
        rows at ``on_train_batch_end`` when ``trainer.global_step`` is due, with the scalars
        of ``trainer.callback_metrics``. Other keywords go to :class:`Tracker`.
        """

        def __init__(
            self,
            every: int | str = 100,
            out: str | os.PathLike[str] | None = None,
            measures: Iterable[str] | None = None,
            **kwargs: Any,
        ) -> None:
            super().__init__()
            self.every, self.out, self.measures, self.kwargs = every, out, measures, kwargs
            self.tracker: Tracker | None = None

        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            if not trainer.is_global_zero:
                return
            out = self.out if self.out is not None else Path(trainer.default_root_dir) / "specbound"
            self.tracker = Tracker(
                pl_module, every=self.every, out=out, measures=self.measures, **self.kwargs
            )
            self.tracker.step(trainer.global_step)

        def on_train_batch_end(
            self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
        ) -> None:
            if self.tracker is not None:
                self.tracker.step(trainer.global_step, **dict(trainer.callback_metrics))

        def on_train_end(self, trainer: Any, pl_module: Any) -> None:
            if self.tracker is not None:
                self.tracker.close()

    return SpecboundLightningCallback


_LAZY = {
    "SpecboundCallback": _make_trainer_callback,
    "SpecboundLightningCallback": lambda: lightning_callback(None),
}
_BUILT: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        if name not in _BUILT:
            _BUILT[name] = _LAZY[name]()
        return _BUILT[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
