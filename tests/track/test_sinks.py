"""Where a tracker's rows go besides track.csv (``track.sinks``): an active W&B run or trackio
run gets ``specbound/<column>`` and the step; TensorBoard only when asked for or available."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from specbound.errors import SpecboundError
from specbound.track.sinks import LogSink, TensorBoardSink, make_sinks


class Run:
    def __init__(self) -> None:
        self.logged: list[dict] = []

    def log(self, data: dict) -> None:
        self.logged.append(data)


def test_log_sink_prefixes_every_column_and_adds_the_step() -> None:
    run = Run()
    sink = LogSink(run)
    sink.write(7, {"spectrum_adaptive": 1.5, "train_acc": 0.25})
    sink.close()
    assert run.logged == [
        {"specbound/spectrum_adaptive": 1.5, "specbound/train_acc": 0.25, "specbound/step": 7}
    ]


def test_make_sinks_finds_the_active_runs(tmp_path: Path, monkeypatch) -> None:
    wandb_run, trackio_run = Run(), object()
    monkeypatch.setitem(sys.modules, "wandb", types.SimpleNamespace(run=wandb_run))
    current = types.SimpleNamespace(get=lambda: trackio_run)
    trackio = types.SimpleNamespace(
        context_vars=types.SimpleNamespace(current_run=current), log=lambda d: None
    )
    monkeypatch.setitem(sys.modules, "trackio", trackio)
    sinks = make_sinks(tmp_path, tensorboard=False, wandb=None, trackio=None)
    assert [type(s) for s in sinks] == [LogSink, LogSink]
    assert sinks[0].target is wandb_run and sinks[1].target is trackio
    assert make_sinks(tmp_path, tensorboard=False, wandb=False, trackio=False) == []
    current.get = lambda: None  # trackio imported but no run started: no sink
    monkeypatch.setitem(sys.modules, "wandb", types.SimpleNamespace(run=None))
    assert make_sinks(tmp_path, tensorboard=False, wandb=None, trackio=None) == []
    assert not (tmp_path / "tensorboard").exists()


def test_tensorboard_refuses_a_file_in_its_place(tmp_path: Path) -> None:
    (tmp_path / "tensorboard").write_text("mine")
    with pytest.raises(SpecboundError, match=r"is not a directory.*tensorboard=False"):
        TensorBoardSink(tmp_path / "tensorboard")
    with pytest.raises(SpecboundError, match="is not a directory"):
        make_sinks(tmp_path, tensorboard=True, wandb=False, trackio=False)
    assert (tmp_path / "tensorboard").read_text() == "mine"
