"""One job per block (``analysis.blocks``) and the memory each job declares (``analysis.sizes``):
the spectra are those of the local block loop, and a job's memory is BASE_MEMORY + BLOCK_FACTOR
x weight bytes / blocks, from the files alone."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specbound.analysis import analyze
from specbound.analysis.blocks import BlockJob, split_by_block
from specbound.analysis.sizes import (
    BASE_MEMORY,
    BLOCK_FACTOR,
    UNKNOWN_MEMORY,
    num_layers,
    task_memory,
    weight_bytes,
)
from specbound.engines.base import Resources, call_job
from specbound.errors import SpecboundError


class RecordingEngine:
    """Runs each job in turn, in reverse order (as a pool may finish them), and keeps what it
    was asked for."""

    name = "recording"
    options = None
    distributed = False
    splits_by_block = True
    jobs_end_with_map = True

    def __init__(self) -> None:
        self.jobs: list[Any] = []
        self.resources: list[Resources] = []

    def map(
        self,
        fn: Callable[[Any], Any],
        jobs: Sequence[Any],
        *,
        progress: Callable[[int, int], None] | None = None,
        resources: Callable[[Any], Resources] | None = None,
    ) -> Iterator[tuple[Any, Any]]:
        self.jobs = list(jobs)
        self.resources = [resources(j) for j in self.jobs] if resources else []
        for job in reversed(self.jobs):
            yield job, call_job(fn, job)

    def start(self, warm: Callable[[], Any] | None = None) -> None:
        pass

    def close(self) -> None:
        pass


def test_one_job_per_block_gives_the_local_spectra(tiny_bert) -> None:
    model = tiny_bert(layers=3, hidden=8, heads=2, ffn=16, seed=4)
    engine = RecordingEngine()
    split = analyze(model, cache=False, spectra_fn=split_by_block(engine))
    local = analyze(model, cache=False)
    assert [j.layer for j in engine.jobs] == [0, 1, 2]
    assert all(isinstance(j, BlockJob) and j.label.endswith(f"block{j.layer}") for j in engine.jobs)
    want = BASE_MEMORY + BLOCK_FACTOR * weight_bytes(model) // 3
    assert [r.memory for r in engine.resources] == [want] * 3
    for field in ("layer", "head", "matrix_type", "sv_offsets", "sv_values", "frobenius_norm"):
        np.testing.assert_array_equal(getattr(split.spectra, field), getattr(local.spectra, field))
    assert split.bounds.spectrum_adaptive.ln == local.bounds.spectrum_adaptive.ln


def test_a_failed_block_names_the_block(tiny_bert, monkeypatch) -> None:
    import specbound.analysis.blocks as blocks

    real = blocks.compute_block

    def refuse(adapter: Any, layer: int, *a: Any) -> Any:
        if layer == 1:
            raise SpecboundError("tensor unreadable")
        return real(adapter, layer, *a)

    monkeypatch.setattr(blocks, "compute_block", refuse)
    with pytest.raises(SpecboundError, match=r"^block 1 of .*/m: tensor unreadable$"):
        analyze(tiny_bert(layers=3), cache=False, spectra_fn=split_by_block(RecordingEngine()))


def test_task_memory_from_the_files_alone(tmp_path: Path) -> None:
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"n_layer": 4}))
    (d / "a.safetensors").write_bytes(b"x" * 1000)
    (d / "pytorch_model.bin").write_bytes(b"x" * 200)
    (d / "notes.txt").write_bytes(b"x" * 5000)  # not a weight file
    assert weight_bytes(d) == 1200 and num_layers(d) == 4
    assert task_memory(d) == BASE_MEMORY + BLOCK_FACTOR * 1200 // 4
    assert task_memory(str(d)) == task_memory(d)
    for cfg in ("[]", "{", json.dumps({"num_hidden_layers": True}), json.dumps({"n_layers": 0})):
        (d / "config.json").write_text(cfg)
        assert num_layers(d) == 1, cfg  # nothing usable: one block
    assert task_memory(tmp_path / "absent") == UNKNOWN_MEMORY
    assert task_memory(object()) == UNKNOWN_MEMORY  # an in-memory model: size unknown here
