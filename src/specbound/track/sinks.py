"""Where a tracker's rows go besides track.csv: TensorBoard, an active W&B run, an active trackio
run. A sink that fails is disabled with a warning; it never stops training."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import extras
from ..errors import SpecboundError


class TensorBoardSink:
    """Scalars ``specbound/<column>`` in ``log_dir`` (needs the ``tensorboard`` package)."""

    def __init__(self, log_dir: Path) -> None:
        if log_dir.exists() and not log_dir.is_dir():
            raise SpecboundError(
                f"{log_dir} exists and is not a directory; move it away, choose another out "
                "directory, or pass tensorboard=False"
            )
        SummaryWriter = extras.load(  # torch's class
            "torch.utils.tensorboard",
            "the TensorBoard sink needs torch and tensorboard (or pass tensorboard=False); "
            f"install them with {extras.install_hint('torch,tensorboard')}",
        ).SummaryWriter

        try:
            self.writer = SummaryWriter(log_dir=str(log_dir))
        except OSError as exc:
            raise SpecboundError(
                f"cannot write TensorBoard events to {log_dir}: {exc.strerror or exc}; choose "
                "another out directory or pass tensorboard=False"
            ) from None

    def write(self, step: int, values: Mapping[str, float]) -> None:
        for k, v in values.items():
            self.writer.add_scalar(f"specbound/{k}", v, global_step=step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class LogSink:
    """A Weights & Biases run or the trackio module: both take ``.log({name: value})``."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def write(self, step: int, values: Mapping[str, float]) -> None:
        data = {f"specbound/{k}": v for k, v in values.items()}
        data["specbound/step"] = step
        self.target.log(data)

    def close(self) -> None:
        pass


def tensorboard_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("tensorboard") is not None


def active_wandb_run() -> Any:
    wandb = sys.modules.get("wandb")
    return getattr(wandb, "run", None) if wandb is not None else None


def active_trackio() -> Any:
    trackio = sys.modules.get("trackio")
    if trackio is None:
        return None
    try:
        run = trackio.context_vars.current_run.get()
    except Exception:
        return None
    return trackio if run is not None else None


def make_sinks(
    out: Path, tensorboard: bool | None, wandb: bool | None, trackio: bool | None
) -> list[Any]:
    """The sinks asked for (None: each one when available)."""
    sinks: list[Any] = []
    if tensorboard or (tensorboard is None and tensorboard_available()):
        try:
            sinks.append(TensorBoardSink(out / "tensorboard"))
        except ImportError:
            if tensorboard:
                raise SpecboundError(
                    "tensorboard=True needs the tensorboard package: "
                    f"{extras.install_hint('tensorboard')}"
                ) from None
    run = active_wandb_run() if wandb is not False else None
    if run is not None:
        sinks.append(LogSink(run))
    tio = active_trackio() if trackio is not False else None
    if tio is not None:
        sinks.append(LogSink(tio))
    return sinks
