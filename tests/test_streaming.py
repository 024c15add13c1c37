"""Streaming: one block's tensors at a time, sharded safetensors, bf16, bounded memory.

The 1.2B-parameter measurement itself lives in benchmarks/ (peak RSS with /usr/bin/time -v);
here the same properties are checked at small scale.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
import weakref
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from specbound.adapters import get_adapter
from specbound.analysis import analyze, compute_spectra
from specbound.checkpoint import SafetensorsFile, ShardedSource, load_checkpoint
from specbound.spectra import Spectra

TENSORS_PER_BLOCK = 6


def bert_tensors(L: int, N: int, F: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = {"embeddings.word_embeddings.weight": rng.standard_normal((50, N))}
    for l in range(L):
        p = f"encoder.layer.{l}."
        for r in ("query", "key", "value"):
            t[p + f"attention.self.{r}.weight"] = rng.standard_normal((N, N)) * 0.1
        t[p + "attention.output.dense.weight"] = rng.standard_normal((N, N)) * 0.1
        t[p + "intermediate.dense.weight"] = rng.standard_normal((F, N)) * 0.1
        t[p + "output.dense.weight"] = rng.standard_normal((N, F)) * 0.1
    return t


def write_config(d: Path, L: int, N: int, H: int, F: int) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps({
        "model_type": "bert", "num_hidden_layers": L, "hidden_size": N,
        "num_attention_heads": H, "intermediate_size": F}))


def write_single(d: Path, t: dict, L: int, N: int, H: int, F: int) -> Path:
    write_config(d, L, N, H, F)
    save_file({k: v.astype(np.float32) for k, v in t.items()}, str(d / "model.safetensors"))
    return d


def write_sharded(d: Path, t: dict, L: int, N: int, H: int, F: int, shards: int) -> Path:
    write_config(d, L, N, H, F)
    names = list(t)
    weight_map = {}
    for i, part in enumerate(np.array_split(np.arange(len(names)), shards)):
        fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        save_file({names[j]: t[names[j]].astype(np.float32) for j in part}, str(d / fname))
        weight_map.update({names[j]: fname for j in part})
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return d


def test_sharded_equals_single_file(tmp_path: Path) -> None:
    L, N, H, F = 3, 32, 4, 64
    t = bert_tensors(L, N, F)
    one = analyze(write_single(tmp_path / "one", t, L, N, H, F), cache=False)
    ck = write_sharded(tmp_path / "sharded", t, L, N, H, F, shards=4)
    assert isinstance(load_checkpoint(ck).source, ShardedSource)
    many = analyze(ck, cache=False)
    for f in Spectra._FIELDS:
        np.testing.assert_array_equal(getattr(many.spectra, f), getattr(one.spectra, f))
    assert many.bounds == one.bounds


class Recorder:
    """Wraps a TensorSource: logs reads and counts weight arrays still alive at each read."""

    def __init__(self, source) -> None:  # noqa: ANN001
        self.source = source
        self.reads: list[str] = []
        self.live: list[weakref.ref] = []
        self.max_live = 0

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self.source, name)

    def get(self, name: str) -> np.ndarray:
        self.live = [r for r in self.live if r() is not None]
        self.max_live = max(self.max_live, len(self.live))
        a = self.source.get(name)
        self.reads.append(name)
        self.live.append(weakref.ref(a))
        return a


def test_reads_block_by_block_and_frees_each_block(tmp_path: Path) -> None:
    L, N, H, F = 4, 32, 4, 64
    ck = load_checkpoint(write_sharded(tmp_path / "m", bert_tensors(L, N, F), L, N, H, F, 3))
    rec = Recorder(ck.source)
    ck.source = rec
    adapter = get_adapter(ck)
    adapter.source = rec
    gc.collect()
    compute_spectra(adapter)
    layers = [int(n.split("encoder.layer.")[1].split(".")[0]) for n in rec.reads]
    assert layers == sorted(layers)  # block l is read completely before block l+1
    assert len(rec.reads) == L * TENSORS_PER_BLOCK  # each tensor read once, embeddings never
    # when a tensor is read, at most the current block's other tensors are still alive
    assert rec.max_live <= TENSORS_PER_BLOCK - 1


def test_peak_memory_is_about_one_block(tmp_path: Path) -> None:
    """tracemalloc (numpy reports its buffers to it) peak during the spectra of a 6-block
    model stays near one block's float64 tensors, far below the whole model's."""
    L, N, H, F = 6, 128, 4, 512
    ck = write_single(tmp_path / "m", bert_tensors(L, N, F), L, N, H, F)
    adapter = get_adapter(load_checkpoint(ck))
    block = (4 * N * N + 2 * N * F) * 8
    gc.collect()
    tracemalloc.start()
    try:
        compute_spectra(adapter)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2.5 * block, (peak, block)
    assert peak < 0.5 * L * block


def test_bf16_and_fp16_read_exactly(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file as save_torch

    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((17, 9)).astype(np.float32))
    save_torch({"a": x.to(torch.bfloat16), "b": x.to(torch.float16)}, str(tmp_path / "w.st"))
    f = SafetensorsFile(tmp_path / "w.st")
    np.testing.assert_array_equal(f.get("a"), x.to(torch.bfloat16).to(torch.float64).numpy())
    np.testing.assert_array_equal(f.get("b"), x.to(torch.float16).to(torch.float64).numpy())
    assert f.get("a").dtype == np.float64
    f.close()


def test_mapped_pages_released_after_each_tensor(tmp_path: Path, monkeypatch) -> None:
    """Every tensor read hands its mapped pages back (madvise), so RSS does not accumulate."""
    L, N, H, F = 2, 32, 4, 64
    ck = write_single(tmp_path / "m", bert_tensors(L, N, F), L, N, H, F)
    released: list[str] = []
    orig = SafetensorsFile._release
    monkeypatch.setattr(SafetensorsFile, "_release",
                        lambda self, name: (released.append(name), orig(self, name))[1])
    analyze(ck, cache=False)
    assert len(released) == L * TENSORS_PER_BLOCK
