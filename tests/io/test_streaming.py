"""Streaming: one block's tensors at a time, sharded safetensors, bf16, bounded memory.

The 1.2B-parameter measurement itself lives in benchmarks/ (peak RSS with /usr/bin/time -v);
here the same properties are checked at small scale.
"""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from pathlib import Path

import numpy as np
import pytest

from specbound.adapters import get_adapter
from specbound.analysis import analyze
from specbound.io.checkpoint import SafetensorsFile, ShardedSource, load_checkpoint
from specbound.linalg.model import compute_spectra
from tests.support.checkpoints import write_tiny_bert
from tests.support.spectral_checks import assert_sv_match

TENSORS_PER_BLOCK = 6


def write_bert(d: Path, L: int, N: int, H: int, F: int, shards: int = 1) -> Path:
    """Random BERT (weights N(0, 0.01), word embeddings) in one file or ``shards`` files."""
    return write_tiny_bert(d, L, N, H, F, scale=0.1, vocab=50, shards=shards)


def test_sharded_equals_single_file(tmp_path: Path) -> None:
    L, N, H, F = 3, 32, 4, 64
    single = write_bert(tmp_path / "one", L, N, H, F)
    ck = write_bert(tmp_path / "sharded", L, N, H, F, shards=4)
    src_one, src_many = load_checkpoint(single).source, load_checkpoint(ck).source
    assert isinstance(src_many, ShardedSource)
    assert sorted(src_many.names()) == sorted(src_one.names())
    for name in src_one.names():  # the same tensors, bit for bit
        np.testing.assert_array_equal(src_many.get(name), src_one.get(name), err_msg=name)
    one, many = analyze(single, cache=False), analyze(ck, cache=False)
    a, b = one.spectra, many.spectra
    for f in ("layer", "head", "matrix_type", "rows", "cols", "sv_offsets", "rank"):
        np.testing.assert_array_equal(getattr(b, f), getattr(a, f))
    for f in ("frobenius_norm", "nuclear_norm", "norm_21", "norm_11"):
        np.testing.assert_allclose(getattr(b, f), getattr(a, f), rtol=1e-12)
    for i in range(len(a)):
        assert_sv_match(b.singular_values(i), a.singular_values(i), int(min(a.rows[i], a.cols[i])))
    for k in ("spectrum_adaptive", "norm_based"):
        assert getattr(many.bounds, k).ln == pytest.approx(getattr(one.bounds, k).ln, rel=1e-12)


class Recorder:
    """Wraps a TensorSource: logs reads and counts weight arrays still alive at each read."""

    def __init__(self, source) -> None:
        self.source = source
        self.reads: list[str] = []
        self.live: list[weakref.ref] = []
        self.max_live = 0

    def __getattr__(self, name: str):
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
    ck = load_checkpoint(write_bert(tmp_path / "m", L, N, H, F, shards=3))
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
    ck = write_bert(tmp_path / "m", L, N, H, F)
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
    ck = write_bert(tmp_path / "m", L, N, H, F)
    released: list[str] = []
    orig = SafetensorsFile._release
    monkeypatch.setattr(
        SafetensorsFile, "_release", lambda self, name: (released.append(name), orig(self, name))[1]
    )
    analyze(ck, cache=False)
    assert len(released) == L * TENSORS_PER_BLOCK
