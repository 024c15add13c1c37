"""Loading checkpoints: a config dict plus a lazy, per-tensor source of weights.

Safetensors files (fp64/fp32/fp16/bf16, single or sharded) are memory-mapped and read one tensor
at a time without torch. ``pytorch_model.bin`` goes through ``torch.load(weights_only=True)``;
anything that needs arbitrary unpickling is refused. Every tensor handed out is float64 and
checked to be finite.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .errors import CheckpointError, ConfigError, SpecboundError

WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)

#: Bits per element of every dtype the safetensors format defines (library 0.8): a header is
#: validated against all of them, though specbound reads only ``_ST_READ`` (when a tensor is read).
_ST_BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}
#: The dtypes specbound reads, as numpy dtypes (bf16 as uint16, converted by hand).
_ST_READ: dict[str, np.dtype] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
}
#: The safetensors library refuses larger headers.
MAX_HEADER_BYTES = 100_000_000
#: Largest config.json / shard index read (real ones are kilobytes to a few megabytes): a
#: multi-gigabyte "config" is refused before it is read into memory.
MAX_JSON_BYTES = 64 * 2**20


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def parse_json(text: str | bytes, what: str, error: type[SpecboundError] = CheckpointError) -> Any:
    """``text`` parsed as JSON, duplicate object keys refused; failures as one-line ``error``.

    ``what`` names the file in the message. Deep nesting (RecursionError) counts as invalid.
    """
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise error(f"{what} has the key '{exc.key}' twice; fix or re-download it") from None
    except UnicodeDecodeError:
        raise error(f"{what} is not UTF-8 text; fix or re-download it") from None
    except RecursionError:
        raise error(
            f"{what} is nested too deeply to be valid JSON; fix or re-download it"
        ) from None
    except ValueError as exc:
        first = (str(exc).strip().splitlines() or ["invalid JSON"])[0]
        raise error(f"{what} is not valid JSON ({first}); fix or re-download it") from None


def check_regular_file(
    path: Path, what: str = "file", advice: str = "pass a checkpoint directory of ordinary files"
) -> None:
    """Refuse FIFOs, devices, sockets and directories before opening (a FIFO blocks forever).

    The message names ``path``, what it is, and ends with ``advice`` (what to do instead).
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise CheckpointError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        kind = (
            "a directory"
            if stat.S_ISDIR(mode)
            else "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "a device or special file"
        )
        raise CheckpointError(f"{path} is {kind}, not a regular {what}; {advice}")


def read_small_file(
    path: Path,
    what: str,
    error: type[SpecboundError] = CheckpointError,
    limit: int = MAX_JSON_BYTES,
) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (else one-line ``error``)."""
    check_regular_file(path, what)
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise error(
            f"{path} is larger than {limit // 2**20} MiB, too large for a {what}; "
            "fix or re-download it"
        )
    return data


def _is_count(x: Any) -> bool:
    """A JSON non-negative integer (not a bool, not a float)."""
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


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
    """One .safetensors file, memory-mapped; header validated as strictly as the safetensors
    library does, before any offset is trusted.

    Checks: header length within the file and at most ``MAX_HEADER_BYTES``; the header a JSON
    object without duplicate keys (stricter than the library, which keeps the last one);
    ``__metadata__`` a map of strings; each entry a known dtype, a shape of non-negative integers
    and two integer offsets whose span is exactly the shape's byte size; the tensors, sorted by
    offset, tile the data region from its first byte to the file's last (no gap, no overlap, no
    trailing bytes). Dtypes specbound does not read are accepted here and refused only when such
    a tensor is read.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        check_regular_file(self.path, "safetensors file")
        try:
            size = self.path.stat().st_size
            with open(self.path, "rb") as fh:
                head = fh.read(8)
                if len(head) < 8:
                    raise self._corrupt("file is shorter than the 8-byte header length")
                n = int.from_bytes(head, "little")
                if n > MAX_HEADER_BYTES:
                    raise self._corrupt(f"header length {n} exceeds {MAX_HEADER_BYTES} bytes")
                if n <= 0 or 8 + n > size:
                    raise self._corrupt(f"header length {n} does not fit in a file of {size} bytes")
                raw = fh.read(n)
        except OSError as exc:
            raise CheckpointError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        try:
            header = parse_json(raw, "header")
        except CheckpointError as exc:
            raise self._corrupt(str(exc).split(";")[0]) from None
        if not isinstance(header, dict):
            raise self._corrupt("header is not a JSON object")
        meta = header.pop("__metadata__", None)
        if meta is not None and not (
            isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())
        ):
            raise self._corrupt("__metadata__ is not a map of strings")
        self.metadata = meta or {}
        self._data_start = 8 + n
        data_len = size - self._data_start
        self._entries: dict[str, tuple[str, tuple[int, ...], int, int]] = {}
        for name, info in header.items():
            self._entries[name] = self._entry(name, info, data_len)
        self._check_layout(data_len)
        self._mm: mmap.mmap | None = None

    def _entry(self, name: str, info: Any, data_len: int) -> tuple[str, tuple[int, ...], int, int]:
        if not isinstance(info, dict):
            raise self._corrupt(f"entry for tensor '{name}' is not an object")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if not isinstance(dtype, str) or dtype not in _ST_BITS:
            raise self._corrupt(f"tensor '{name}' has unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
            raise self._corrupt(f"tensor '{name}' has shape {shape!r}, not a list of integers >= 0")
        if not (
            isinstance(offsets, list)
            and len(offsets) == 2
            and all(_is_count(x) for x in offsets)
            and offsets[0] <= offsets[1]
        ):
            raise self._corrupt(f"tensor '{name}' has data_offsets {offsets!r}, not [begin, end]")
        bits = math.prod(shape) * _ST_BITS[dtype]  # Python integers: no overflow
        if bits % 8:
            raise self._corrupt(f"tensor '{name}' of dtype {dtype} does not fill whole bytes")
        begin, end = offsets
        if end > data_len:
            raise self._corrupt(
                f"tensor '{name}' ends at byte {end} but the file holds {data_len} data bytes "
                "(truncated download?)"
            )
        if end - begin != bits // 8:
            raise self._corrupt(
                f"tensor '{name}' has data offsets that disagree with its shape "
                f"({end - begin} bytes for {bits // 8})"
            )
        return dtype, tuple(shape), begin, end

    def _check_layout(self, data_len: int) -> None:
        """The tensors, sorted by offset, cover bytes [0, data_len) exactly once."""
        order = sorted(self._entries.items(), key=lambda e: (e[1][2], e[1][3], e[0]))
        pos, prev = 0, None
        for name, (_, _, begin, end) in order:  # overlaps first: the more telling message
            if begin < pos:
                raise self._corrupt(f"tensor '{name}' overlaps tensor '{prev}'")
            if end > begin:
                pos, prev = end, name
        pos = 0
        for name, (_, _, begin, end) in order:
            if begin > pos:
                raise self._corrupt(
                    f"data bytes {pos}..{begin} belong to no tensor (before '{name}')"
                )
            pos = end
        if pos != data_len:
            raise self._corrupt(f"{data_len - pos} trailing bytes after the last tensor")

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
        self._check_readable(name)
        count = math.prod(shape)
        if count == 0:
            return np.empty(shape, dtype=_ST_READ[dtype])
        buf = np.frombuffer(
            self._map(), dtype=_ST_READ[dtype], count=count, offset=self._data_start + begin
        )
        return buf.reshape(shape)

    def _check_readable(self, name: str) -> None:
        dtype = self.dtype(name)
        if dtype not in _ST_READ:
            raise CheckpointError(
                f"tensor '{name}' in {self.path} is stored as {dtype}; specbound reads weight "
                f"matrices only as {', '.join(_ST_READ)} (dequantize or convert the checkpoint)"
            )

    def get(self, name: str) -> np.ndarray:
        dtype = self.dtype(name)
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
        return "|".join(_file_stamp(p) for p in sorted(set(self._weight_map.values())))


def _read_index(index_path: Path) -> dict[str, Path]:
    """``weight_map`` of a shard index: tensor name -> shard path inside the index's directory."""
    text = read_small_file(index_path, "shard index")
    try:
        index = parse_json(text, str(index_path))
    except CheckpointError as exc:
        if "twice" in str(exc):
            raise CheckpointError(
                f"{str(exc).split(';')[0]} (a tensor mapped to two shards?); re-download the index"
            ) from None
        raise
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        raise CheckpointError(
            f"{index_path} is not a valid shard index (needs a 'weight_map' object of tensor "
            "name -> shard file); re-download it"
        )
    out: dict[str, Path] = {}
    for name, fname in weight_map.items():
        if not isinstance(fname, str) or not fname:
            raise CheckpointError(
                f"{index_path} maps tensor '{name}' to {fname!r}, not a shard file name; "
                "re-download the index"
            )
        rel = Path(fname)
        if rel.is_absolute() or ".." in rel.parts or os.path.normpath(fname).startswith(".."):
            raise CheckpointError(
                f"{index_path} maps tensor '{name}' to '{fname}', outside {index_path.parent}; "
                "shards must sit next to the index (re-download it)"
            )
        path = index_path.parent / rel
        if not path.exists():
            raise CheckpointError(
                f"shard '{fname}' listed in {index_path.name} for tensor '{name}' is missing "
                f"from {index_path.parent}; download every shard"
            )
        out[name] = path
    return out


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
            import torch

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
        return _check_finite(arr, name, self._where)

    def fingerprint(self) -> None:
        return None


class TorchBinFile(DictSource):
    """A pickle checkpoint loaded with ``torch.load(weights_only=True)`` (memory-mapped)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        check_regular_file(self.path, "PyTorch checkpoint")
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
        except (
            RuntimeError,
            EOFError,
            zipfile.BadZipFile,
            OSError,
            ValueError,
            RecursionError,
            OverflowError,
            TypeError,
            KeyError,
        ) as exc:
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
    if cfg_path.exists() and not cfg_path.is_file():
        check_regular_file(cfg_path, "config.json")  # FIFO or directory: refuse, never open
    if not cfg_path.is_file():
        raise ConfigError(
            f"{directory} has no config.json; specbound needs the Hugging Face config next to the "
            "weights (save the model with save_pretrained, or pass config= from Python)"
        )
    text = read_small_file(cfg_path, "config.json", ConfigError)
    config = parse_json(text, str(cfg_path), ConfigError)
    if not isinstance(config, dict):
        raise ConfigError(f"{cfg_path} must hold a JSON object")
    return config


def open_weights(directory: Path) -> TensorSource:
    """The weights in a Hugging Face-style directory, preferring safetensors."""
    if (directory / "model.safetensors").exists():
        return SafetensorsFile(directory / "model.safetensors")
    if (directory / "model.safetensors.index.json").exists():
        index_path = directory / "model.safetensors.index.json"
        return ShardedSource(_read_index(index_path), SafetensorsFile, index_path)
    singles = sorted(directory.glob("*.safetensors"))
    if len(singles) == 1:
        return SafetensorsFile(singles[0])
    if (directory / "pytorch_model.bin").exists():
        return TorchBinFile(directory / "pytorch_model.bin")
    if (directory / "pytorch_model.bin.index.json").exists():
        index_path = directory / "pytorch_model.bin.index.json"
        return ShardedSource(_read_index(index_path), TorchBinFile, index_path)
    raise CheckpointError(f"{directory} has no weights: expected one of {', '.join(WEIGHT_FILES)}")


def load_directory(directory: str | os.PathLike[str], name: str | None = None) -> Checkpoint:
    """A local directory with config.json and weights."""
    directory = Path(directory)
    if not directory.exists():
        raise CheckpointError(f"{directory} does not exist; pass a checkpoint directory or hub id")
    if not directory.is_dir():
        raise CheckpointError(
            f"{directory} is a file, not a directory; pass the directory that holds config.json "
            "and the weights"
        )
    config = _read_config(directory)
    return Checkpoint(name or str(directory), config, open_weights(directory), path=directory)


def looks_like_hub_id(text: str) -> bool:
    """``org/name``, optionally ``org/name@revision`` (a branch, tag or commit)."""
    from .hub import split_revision

    text, _ = split_revision(text)
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
        elif Path(text.split("/")[0]).is_dir():
            raise CheckpointError(
                f"{text} does not exist (the local directory {text.split('/')[0]} does, so it is "
                "taken as a path, not a hub id); check the path"
            )
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
        return Checkpoint(
            name or type(model).__name__, cfg, DictSource(untied_state(model.state_dict()))
        )
    if isinstance(model, Mapping):
        cfg = _config_of(config)
        if not cfg:
            raise ConfigError("a state dict needs config= (a dict like config.json)")
        return Checkpoint(name or "state dict", cfg, DictSource(model))
    raise CheckpointError(
        f"cannot analyze a {type(model).__name__}: pass a directory, a hub id, an nn.Module or "
        "a state dict with config="
    )
