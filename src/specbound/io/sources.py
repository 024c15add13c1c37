"""Tensor sources: read-only, lazy access to named tensors (the protocol every reader
implements), the finiteness check every tensor passes, shards behind one name map, and
in-memory state dicts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .. import extras
from ..errors import CheckpointError
from .files import file_stamp


class TensorSource(Protocol):
    """Read-only, lazy access to named tensors."""

    def names(self) -> list[str]: ...

    def shape(self, name: str) -> tuple[int, ...]: ...

    def dtype(self, name: str) -> str: ...

    def get(self, name: str) -> np.ndarray:
        """The tensor as a float64 array (a fresh copy), checked finite."""
        ...

    def fingerprint(self) -> str | None:
        """A string that changes whenever the underlying data may have changed (None: no cache)."""
        ...


@dataclass(frozen=True)
class ConfigOrigin:
    """Where a checkpoint's config and tensor names come from, as messages must name them.

    ``what``: the config's origin ("config.json", "the GGUF metadata"); ``keys``: a config key ->
    the key the user finds in that origin (absent: the same); ``tensors``: a tensor name -> the
    name stored in the file (None: the same); ``advice``: what to do about a config that
    disagrees with the weights (None: each message's own config.json advice). The default is a
    Hugging Face config.json, for which every message reads as it always has.
    """

    what: str = "config.json"
    keys: Mapping[str, str] = field(default_factory=dict)
    tensors: Callable[[str], str] | None = None
    advice: str | None = None

    def key(self, key: str) -> str:
        return self.keys.get(key, key)

    def tensor(self, name: str) -> str:
        return name if self.tensors is None else self.tensors(name)


def check_finite(arr: np.ndarray, name: str, where: str) -> np.ndarray:
    """``arr`` itself when every value is finite, else a CheckpointError naming the tensor."""
    if not np.isfinite(arr).all():
        bad = "NaN" if np.isnan(arr).any() else "Inf"
        raise CheckpointError(
            f"tensor '{name}' in {where} contains {bad} values; specbound needs finite weights "
            "(re-export the checkpoint or fix the training run)"
        )
    return arr


class ShardedSource:
    """Several files, each a TensorSource, behind one name -> file map.

    Every shard is opened (headers only, for safetensors) and every indexed tensor checked to be
    in its shard when the source is made, so a stale index fails before any spectral work.
    """

    def __init__(
        self, weight_map: Mapping[str, Path], opener: Any, index: Path | None = None
    ) -> None:
        self._weight_map = dict(weight_map)
        self._opener = opener
        self._open: dict[Path, Any] = {}
        where = index.name if index is not None else "the shard index"
        for name, path in self._weight_map.items():
            if name not in self._names_in(path):
                raise CheckpointError(
                    f"{where} lists tensor '{name}' in shard {path.name}, which does not hold it "
                    "(stale index?); re-download the index and every shard"
                )

    def _names_in(self, path: Path) -> set[str]:
        if path not in self._open:
            f = self._opener(path)
            self._open[path] = (f, set(f.names()))
        return self._open[path][1]

    def _file(self, name: str) -> Any:
        path = self._weight_map[name]
        self._names_in(path)
        return self._open[path][0]

    def names(self) -> list[str]:
        return list(self._weight_map)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._file(name).shape(name)

    def dtype(self, name: str) -> str:
        return self._file(name).dtype(name)

    def get(self, name: str) -> np.ndarray:
        return self._file(name).get(name)

    def fingerprint(self) -> str:
        return "|".join(file_stamp(p) for p in sorted(set(self._weight_map.values())))


def untied_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """A module's state dict without the second name of tied tensors (same storage, offset,
    shape and strides), as ``save_pretrained`` stores them: ``num_parameters`` of a live model
    then equals that of its saved checkpoint."""
    seen: set[tuple[Any, ...]] = set()
    out: dict[str, Any] = {}
    for k, v in state.items():
        if hasattr(v, "untyped_storage"):
            key = (
                v.untyped_storage().data_ptr(),
                v.storage_offset(),
                tuple(v.shape),
                tuple(v.stride()),
            )
            if key in seen:
                continue
            seen.add(key)
        out[k] = v
    return out


class DictSource:
    """An in-memory state dict (numpy arrays or torch tensors)."""

    def __init__(self, state: Mapping[str, Any], where: str = "state dict") -> None:
        self._state = dict(state)
        self._where = where

    def names(self) -> list[str]:
        return list(self._state)

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self._state[name].shape)

    def dtype(self, name: str) -> str:
        return str(self._state[name].dtype)

    def _refuse(self, name: str, what: str) -> CheckpointError:
        return CheckpointError(
            f"tensor '{name}' in {self._where} is {what}; specbound reads weight matrices only as "
            "dense real floating-point tensors (dequantize or convert the checkpoint)"
        )

    def get(self, name: str) -> np.ndarray:
        t = self._state[name]
        if hasattr(t, "detach"):  # torch tensor; bf16 has no numpy twin
            torch = extras.torch()

            if t.is_meta:
                raise self._refuse(name, "a meta tensor (no data)")
            if t.layout != torch.strided:
                raise self._refuse(name, f"sparse ({t.layout})")
            if t.is_quantized:
                raise self._refuse(name, f"quantized ({t.dtype})")
            if t.dtype not in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
                raise self._refuse(name, str(t.dtype))
            t = t.detach().to("cpu", torch.float64).numpy()
        else:
            dt = getattr(t, "dtype", None)
            if dt is None or np.dtype(dt).kind != "f":
                raise self._refuse(name, str(dt))
        arr = np.array(t, dtype=np.float64, copy=True)
        return check_finite(arr, name, self._where)

    def fingerprint(self) -> str | None:
        return None
