"""Loading checkpoints: a config dict plus a lazy, per-tensor source of weights.

Safetensors files (fp64/fp32/fp16/bf16, single or sharded) are memory-mapped and read one tensor
at a time without torch. ``pytorch_model.bin`` is read without torch too, by a restricted
unpickler as strict as ``torch.load(weights_only=True)``; anything that needs arbitrary
unpickling is refused. Every tensor handed out is float64 and
checked to be finite. The readers live beside this module: ``safetensors.py``,
``torch_files.py``, ``gguf.py`` (llama.cpp files), ``sources.py`` (state dicts, shards),
``hub.py`` (hub ids), ``files.py`` (file and JSON guards); this module resolves what the user
passed to one of them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..demo import is_demo_alias, resolve_alias
from ..errors import CheckpointError, ConfigError
from .files import MAX_JSON_BYTES, check_regular_file, parse_json, read_small_file
from .gguf import find_gguf, gguf_checkpoint_parts
from .hub import is_hub_id, resolve_hub_id
from .safetensors import MAX_HEADER_BYTES, SafetensorsFile
from .sources import (
    ConfigOrigin,
    DictSource,
    ShardedSource,
    TensorSource,
    check_finite,
    untied_state,
)
from .torch_files import TorchBinFile

__all__ = [  # the names of the former specbound.io.checkpoint, wherever they live now
    "MAX_HEADER_BYTES",
    "MAX_JSON_BYTES",
    "WEIGHT_FILES",
    "Checkpoint",
    "ConfigOrigin",
    "DictSource",
    "SafetensorsFile",
    "ShardedSource",
    "TensorSource",
    "TorchBinFile",
    "check_finite",
    "check_regular_file",
    "load_checkpoint",
    "load_directory",
    "load_gguf",
    "looks_like_hub_id",
    "open_weights",
    "parse_json",
    "read_small_file",
    "untied_state",
]

WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


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


@dataclass
class Checkpoint:
    """What an adapter needs: the model's name, its config and its tensors."""

    name: str
    config: dict[str, Any]
    source: TensorSource
    path: Path | None = None
    notes: list[str] = field(default_factory=list)
    #: Where the config and tensor names come from, for messages (default: config.json).
    origin: ConfigOrigin = field(default_factory=ConfigOrigin)

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


def load_gguf(path: Path, name: str | None = None) -> Checkpoint:
    """A llama.cpp .gguf file: config from its metadata, tensors under Hugging Face names
    (:mod:`specbound.io.gguf`)."""
    config, source, notes, origin = gguf_checkpoint_parts(path)
    return Checkpoint(name or str(path), config, source, path=path, notes=notes, origin=origin)


def load_directory(directory: str | os.PathLike[str], name: str | None = None) -> Checkpoint:
    """A local directory with config.json and weights, a ``.gguf`` file, or a directory without
    config.json holding exactly one ``.gguf`` file."""
    directory = Path(directory)
    if not directory.exists():
        raise CheckpointError(f"{directory} does not exist; pass a checkpoint directory or hub id")
    if directory.is_file() and directory.suffix.lower() == ".gguf":
        return load_gguf(directory, name)
    if not directory.is_dir():
        raise CheckpointError(
            f"{directory} is a file, not a directory; pass the directory that holds config.json "
            "and the weights, or a .gguf file"
        )
    if not (directory / "config.json").exists():
        found = find_gguf(directory)
        if found is not None:
            return load_gguf(found, name or str(directory))
    config = _read_config(directory)
    return Checkpoint(name or str(directory), config, open_weights(directory), path=directory)


def looks_like_hub_id(text: str) -> bool:
    """A hub id as the hub accepts it: ``name`` or ``org/name``, optionally ``@revision`` (a
    branch, tag or commit); ``.`` / ``~`` paths and ``a/b/c`` never are."""
    return not text.startswith((".", "~")) and is_hub_id(text)


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

    ``model`` may be a Checkpoint, a local directory, ``"demo:minilm"`` (the bundled MiniLM,
    :mod:`specbound.demo`), a hub id (``org/name`` or ``name``), a torch ``nn.Module`` (its
    ``.config`` is used unless ``config`` is given) or a state dict (then ``config`` is
    required). A local path always wins over a demo alias or a hub id of the same spelling.
    """
    if isinstance(model, Checkpoint):
        return model
    if isinstance(model, (str, os.PathLike)):
        ckpt = _load_path(os.fspath(model), name)
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


def _load_path(text: str, name: str | None) -> Checkpoint:
    """The checkpoint a path, a demo alias or a hub id names (``load_checkpoint``: a local path
    wins over an alias or a hub id of the same spelling)."""
    if isinstance(text, str) and is_demo_alias(text):
        text = resolve_alias(text)
    path = Path(text).expanduser()
    if path.exists() or not looks_like_hub_id(text):
        return load_directory(path, name=name or text)
    if Path(text.split("/")[0]).is_dir():
        raise CheckpointError(
            f"{text} does not exist (the local directory {text.split('/')[0]} does, so it is "
            "taken as a path, not a hub id); check the path"
        )
    try:
        local = resolve_hub_id(text)
    except CheckpointError as exc:
        if "/" in text:
            raise
        # a bare name may be a mistyped local path as well: say it is neither
        raise CheckpointError(f"{text} is not a local path, and {exc}") from None
    return load_directory(local, name=name or text)
