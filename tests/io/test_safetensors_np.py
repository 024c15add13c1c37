"""tests/support/safetensors_np.py (the tests' own safetensors writer and reader, used where the
safetensors library is not installed) against the library, both directions, byte for byte."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.safetensors_np import load_file, save_file

st = pytest.importorskip("safetensors.numpy")


def _tensors() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "b.weight": rng.standard_normal((3, 5)).astype(np.float32),
        "a.weight": rng.standard_normal((4, 2)),
        "half": rng.standard_normal(7).astype(np.float16),
        "ids": np.arange(5, dtype=np.int64),
        "mask": np.array([True, False, True]),
        "scalar": np.array(2.5, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.parametrize("metadata", [None, {"format": "pt"}])
def test_same_bytes_as_the_library(tmp_path: Path, metadata: dict | None) -> None:
    ours, theirs = tmp_path / "ours.safetensors", tmp_path / "theirs.safetensors"
    save_file(_tensors(), ours, metadata=metadata)
    st.save_file(_tensors(), str(theirs), metadata=metadata)
    assert ours.read_bytes() == theirs.read_bytes()


def test_each_reads_the_others_file(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours.safetensors", tmp_path / "theirs.safetensors"
    save_file(_tensors(), ours)
    st.save_file(_tensors(), str(theirs))
    _same(st.load_file(str(ours)), _tensors())
    _same(load_file(theirs), _tensors())


def test_reads_the_real_minilm(minilm_dir: Path) -> None:
    f = minilm_dir / "model.safetensors"
    _same(load_file(f), st.load_file(str(f)))
