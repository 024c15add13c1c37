"""How much memory a model's job needs, from its files (no weights read): what engines that
schedule declare per task.

    task_memory(model) = BASE_MEMORY + BLOCK_FACTOR * weight_bytes / num_layers

as only one block is in memory at a time; UNKNOWN_MEMORY when the checkpoint is not here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..io.checkpoint import looks_like_hub_id
from ..io.hub import split_revision

#: Memory a task needs besides the block in flight (interpreter, numpy, specbound).
BASE_MEMORY = 512 * 2**20
#: A block's tensors as read (bf16/fp16 -> float64 is 4x) plus the SVD workspaces.
BLOCK_FACTOR = 12
#: Declared for a hub id that is not in the local cache (its size is unknown here).
UNKNOWN_MEMORY = 2 * 2**30
_WEIGHT_SUFFIXES = (".safetensors", ".bin")


def local_dir(model: Any) -> Path | None:
    """The checkpoint directory of ``model`` on this machine: the path itself, or the cached
    snapshot of a hub id (no network); None when it is not here."""
    if not isinstance(model, (str, os.PathLike)):
        return None
    path = Path(os.fspath(model)).expanduser()
    if path.is_dir():
        return path

    text = os.fspath(model)
    if path.exists() or not looks_like_hub_id(text):
        return None
    try:
        import huggingface_hub as hf

        repo, rev = split_revision(text)
        snap = Path(hf.snapshot_download(repo, revision=rev, local_files_only=True))
    except Exception:  # not in the local cache, or no huggingface_hub: size unknown here
        return None
    return snap if (snap / "config.json").is_file() else None


def num_layers(directory: Path) -> int:
    """The number of blocks config.json declares (1 when it says nothing usable)."""
    try:
        cfg = json.loads((directory / "config.json").read_text())
    except (OSError, ValueError):
        return 1
    if not isinstance(cfg, dict):
        return 1
    for k in ("num_hidden_layers", "n_layer", "num_layers", "n_layers"):
        v = cfg.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return 1


def weight_bytes(directory: Path) -> int:
    """Bytes of the weight files (``*.safetensors``, ``*.bin``) in ``directory``."""
    total = 0
    for p in directory.iterdir():
        if p.suffix in _WEIGHT_SUFFIXES and p.is_file():
            total += p.stat().st_size
    return total


def block_memory(directory: Path, layers: int | None = None) -> int:
    """Bytes one block's task needs: BASE_MEMORY + BLOCK_FACTOR x weight bytes / blocks."""
    n = layers if layers is not None else num_layers(directory)
    return BASE_MEMORY + BLOCK_FACTOR * weight_bytes(directory) // max(n, 1)


def task_memory(model: Any) -> int:
    """Bytes a task analyzing ``model`` declares (module doc)."""
    d = local_dir(model)
    return UNKNOWN_MEMORY if d is None else block_memory(d)
