"""Loading checkpoints: a config dict plus a lazy, per-tensor source of weights.

Safetensors files (fp64/fp32/fp16/bf16, single or sharded) are memory-mapped and read one tensor
at a time without torch. ``pytorch_model.bin`` goes through ``torch.load(weights_only=True)``;
anything that needs arbitrary unpickling is refused. Every tensor handed out is float64 and
checked to be finite.
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .errors import CheckpointError, ConfigError

WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)

_ST_DTYPES: dict[str, np.dtype] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),  # converted by hand: numpy has no bfloat16
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_FLOAT_DTYPES = {"F64", "F32", "F16", "BF16"}


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


def _check_finite(arr: np.ndarray, name: str, where: str) -> np.ndarray:
    if not np.isfinite(arr).all():
        bad = "NaN" if np.isnan(arr).any() else "Inf"
        raise CheckpointError(
            f"tensor '{name}' in {where} contains {bad} values; specbound needs finite weights "
            "(re-export the checkpoint or fix the training run)"
        )
    return arr


def _file_stamp(path: Path) -> str:
    st = path.stat()
    return f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


class SafetensorsFile:
    """One .safetensors file, memory-mapped; header validated against the file size."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            size = self.path.stat().st_size
            with open(self.path, "rb") as fh:
                head = fh.read(8)
                if len(head) < 8:
                    raise self._corrupt("file is shorter than the 8-byte header length")
                n = int.from_bytes(head, "little")
                if n <= 0 or 8 + n > size:
                    raise self._corrupt(f"header length {n} does not fit in a file of {size} bytes")
                raw = fh.read(n)
        except OSError as exc:
            raise CheckpointError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        try:
            header = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise self._corrupt("header is not valid JSON") from None
        if not isinstance(header, dict):
            raise self._corrupt("header is not a JSON object")
        self.metadata = header.pop("__metadata__", None) or {}
        self._data_start = 8 + n
        data_len = size - self._data_start
        self._entries: dict[str, tuple[str, tuple[int, ...], int, int]] = {}
        for name, info in header.items():
            try:
                dtype = info["dtype"]
                shape = tuple(int(d) for d in info["shape"])
                begin, end = (int(x) for x in info["data_offsets"])
            except (KeyError, TypeError, ValueError):
                raise self._corrupt(f"entry for tensor '{name}' is malformed") from None
            if dtype not in _ST_DTYPES:
                raise self._corrupt(f"tensor '{name}' has unsupported dtype {dtype}")
            nbytes = int(np.prod(shape, dtype=np.int64)) * _ST_DTYPES[dtype].itemsize
            if end - begin != nbytes or begin < 0:
                raise self._corrupt(
                    f"tensor '{name}' has data offsets that disagree with its shape"
                )
            if end > data_len:
                raise self._corrupt(
                    f"tensor '{name}' ends at byte {end} but the file holds {data_len} data bytes "
                    "(truncated download?)"
                )
            self._entries[name] = (dtype, shape, begin, end)
        self._mm: mmap.mmap | None = None

    def _corrupt(self, why: str) -> CheckpointError:
        return CheckpointError(
            f"{self.path} is not a valid safetensors file: {why}; re-download or re-save it"
        )

    def _map(self) -> mmap.mmap:
        if self._mm is None:
            with open(self.path, "rb") as fh:
                self._mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        return self._mm

    def names(self) -> list[str]:
        return list(self._entries)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._entries[name][1]

    def dtype(self, name: str) -> str:
        return self._entries[name][0]

    def raw(self, name: str) -> np.ndarray:
        """Zero-copy view of the stored bytes in the stored dtype (bf16 as uint16)."""
        dtype, shape, begin, _ = self._entries[name]
        count = int(np.prod(shape, dtype=np.int64))
        if count == 0:
            return np.empty(shape, dtype=_ST_DTYPES[dtype])
        buf = np.frombuffer(
            self._map(), dtype=_ST_DTYPES[dtype], count=count, offset=self._data_start + begin
        )
        return buf.reshape(shape)

    def get(self, name: str) -> np.ndarray:
        dtype = self.dtype(name)
        if dtype not in _FLOAT_DTYPES:
            raise CheckpointError(f"tensor '{name}' in {self.path} is {dtype}, not a float tensor")
        raw = self.raw(name)
        if dtype == "BF16":
            out = (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            out = raw.astype(np.float64)
        del raw
        self._release(name)
        return _check_finite(out, name, str(self.path))

    def _release(self, name: str) -> None:
        """Drop the tensor's mapped pages from this process's resident set (streaming)."""
        if self._mm is None or not hasattr(mmap, "MADV_DONTNEED"):
            return
        _, _, begin, end = self._entries[name]
        start = (self._data_start + begin) // mmap.PAGESIZE * mmap.PAGESIZE
        length = self._data_start + end - start
        try:
            self._mm.madvise(mmap.MADV_DONTNEED, start, length)
        except (OSError, ValueError):
            pass

    def fingerprint(self) -> str:
        return _file_stamp(self.path)

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None


class ShardedSource:
    """Several files, each a TensorSource, behind one name -> file map."""

    def __init__(self, weight_map: Mapping[str, Path], opener: Any) -> None:
        self._weight_map = dict(weight_map)
        self._opener = opener
        self._open: dict[Path, Any] = {}

    def _file(self, name: str) -> Any:
        path = self._weight_map[name]
        if path not in self._open:
            self._open[path] = self._opener(path)
        return self._open[path]

    def names(self) -> list[str]:
        return list(self._weight_map)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._file(name).shape(name)

    def dtype(self, name: str) -> str:
        return self._file(name).dtype(name)

    def get(self, name: str) -> np.ndarray:
        return self._file(name).get(name)

    def fingerprint(self) -> str:
        return "|".join(_file_stamp(p) for p in sorted(set(self._weight_map.values())))


def _read_index(index_path: Path) -> dict[str, Path]:
    try:
        index = json.loads(index_path.read_text())
        weight_map = index["weight_map"]
    except (OSError, ValueError, KeyError, TypeError):
        raise CheckpointError(
            f"{index_path} is not a valid shard index (needs a 'weight_map' object); re-download it"
        ) from None
    out: dict[str, Path] = {}
    for name, fname in weight_map.items():
        path = index_path.parent / fname
        if not path.exists():
            raise CheckpointError(
                f"shard '{fname}' listed in {index_path.name} for tensor '{name}' is missing "
                f"from {index_path.parent}; download every shard"
            )
        out[name] = path
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

    def get(self, name: str) -> np.ndarray:
        t = self._state[name]
        if hasattr(t, "detach"):  # torch tensor; bf16 has no numpy twin
            import torch

            t = t.detach().to("cpu", torch.float64).numpy()
        arr = np.array(t, dtype=np.float64, copy=True)
        return _check_finite(arr, name, self._where)

    def fingerprint(self) -> None:
        return None


class TorchBinFile(DictSource):
    """A pickle checkpoint loaded with ``torch.load(weights_only=True)`` (memory-mapped)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            import torch
        except ImportError:
            raise CheckpointError(
                f"{self.path} is a PyTorch pickle; install the torch extra "
                "(pip install 'specbound[torch]') or convert it to safetensors"
            ) from None
        import pickle
        import warnings
        import zipfile

        try:
            with warnings.catch_warnings():  # torch warns about pickle protocols on stderr
                warnings.simplefilter("ignore")
                state = self._load(torch)
        except pickle.UnpicklingError:
            raise CheckpointError(
                f"{self.path} needs arbitrary code execution to unpickle, which specbound refuses; "
                "convert it to safetensors from a trusted environment"
            ) from None
        except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CheckpointError(
                f"{self.path} could not be read as a PyTorch checkpoint ({first}); re-download it"
            ) from None
        if isinstance(state, Mapping) and "state_dict" in state and len(state) <= 4:
            state = state["state_dict"]
        if not isinstance(state, Mapping):
            raise CheckpointError(f"{self.path} does not hold a state dict of tensors")
        state = {k: v for k, v in state.items() if hasattr(v, "shape")}
        super().__init__(state, where=str(self.path))

    def _load(self, torch: Any) -> Any:
        try:
            return torch.load(self.path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:
            if "mmap" not in str(exc):
                raise
            return torch.load(self.path, map_location="cpu", weights_only=True)

    def fingerprint(self) -> str:
        return _file_stamp(self.path)


@dataclass
class Checkpoint:
    """What an adapter needs: the model's name, its config and its tensors."""

    name: str
    config: dict[str, Any]
    source: TensorSource
    path: Path | None = None
    notes: list[str] = field(default_factory=list)

    def fingerprint(self) -> str | None:
        fp = self.source.fingerprint()
        if fp is None:
            return None
        return json.dumps(self.config, sort_keys=True, default=str) + "|" + fp


def _read_config(directory: Path) -> dict[str, Any]:
    cfg_path = directory / "config.json"
    if not cfg_path.is_file():
        raise ConfigError(
            f"{directory} has no config.json; specbound needs the Hugging Face config next to the "
            "weights (save the model with save_pretrained, or pass config= from Python)"
        )
    try:
        config = json.loads(cfg_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{cfg_path} is not valid JSON ({exc}); fix or re-download it") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{cfg_path} must hold a JSON object")
    return config


def open_weights(directory: Path) -> TensorSource:
    """The weights in a Hugging Face-style directory, preferring safetensors."""
    if (directory / "model.safetensors").is_file():
        return SafetensorsFile(directory / "model.safetensors")
    if (directory / "model.safetensors.index.json").is_file():
        index = _read_index(directory / "model.safetensors.index.json")
        return ShardedSource(index, SafetensorsFile)
    singles = sorted(directory.glob("*.safetensors"))
    if len(singles) == 1:
        return SafetensorsFile(singles[0])
    if (directory / "pytorch_model.bin").is_file():
        return TorchBinFile(directory / "pytorch_model.bin")
    if (directory / "pytorch_model.bin.index.json").is_file():
        return ShardedSource(_read_index(directory / "pytorch_model.bin.index.json"), TorchBinFile)
    raise CheckpointError(
        f"{directory} has no weights: expected one of {', '.join(WEIGHT_FILES)}"
    )


def load_directory(directory: str | os.PathLike[str], name: str | None = None) -> Checkpoint:
    """A local directory with config.json and weights."""
    directory = Path(directory)
    if not directory.exists():
        raise CheckpointError(f"{directory} does not exist; pass a checkpoint directory or hub id")
    if directory.is_file():
        raise CheckpointError(
            f"{directory} is a file; pass the directory that holds config.json and the weights"
        )
    config = _read_config(directory)
    return Checkpoint(name or str(directory), config, open_weights(directory), path=directory)


def looks_like_hub_id(text: str) -> bool:
    parts = text.split("/")
    return (
        len(parts) == 2
        and all(parts)
        and not text.startswith((".", "~"))
        and all(p.replace("-", "").replace("_", "").replace(".", "").isalnum() for p in parts)
    )


def _config_of(obj: Any) -> dict[str, Any]:
    if obj is None:
        return {}
    if isinstance(obj, Mapping):
        return dict(obj)
    if hasattr(obj, "to_dict"):
        return dict(obj.to_dict())
    raise ConfigError("config must be a dict or a transformers PretrainedConfig")


def load_checkpoint(
    model: Any, config: Mapping[str, Any] | Any = None, *, name: str | None = None
) -> Checkpoint:
    """Resolve ``model`` to a Checkpoint.

    ``model`` may be a Checkpoint, a local directory, a hub id (``org/name``), a torch
    ``nn.Module`` (its ``.config`` is used unless ``config`` is given) or a state dict (then
    ``config`` is required).
    """
    if isinstance(model, Checkpoint):
        return model
    if isinstance(model, (str, os.PathLike)):
        text = os.fspath(model)
        path = Path(text).expanduser()
        if path.exists() or not looks_like_hub_id(text):
            ckpt = load_directory(path, name=name or text)
        else:
            from .hub import resolve_hub_id

            ckpt = load_directory(resolve_hub_id(text), name=name or text)
        if config is not None:
            ckpt.config = {**ckpt.config, **_config_of(config)}
        return ckpt
    if hasattr(model, "state_dict") and callable(model.state_dict):
        cfg = _config_of(config if config is not None else getattr(model, "config", None))
        if not cfg:
            raise ConfigError(
                f"{type(model).__name__} has no .config; pass config= with model_type and sizes"
            )
        return Checkpoint(name or type(model).__name__, cfg, DictSource(model.state_dict()))
    if isinstance(model, Mapping):
        cfg = _config_of(config)
        if not cfg:
            raise ConfigError("a state dict needs config= (a dict like config.json)")
        return Checkpoint(name or "state dict", cfg, DictSource(model))
    raise CheckpointError(
        f"cannot analyze a {type(model).__name__}: pass a directory, a hub id, an nn.Module or "
        "a state dict with config="
    )


def strip_prefix(names: Iterable[str], anchor: str) -> str:
    """The prefix (e.g. ``bert.``) in front of the first name ending with ``anchor``."""
    for n in names:
        if n.endswith(anchor):
            return n[: len(n) - len(anchor)]
    return ""
