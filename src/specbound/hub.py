"""Hub ids (``org/name``) -> a local snapshot directory in huggingface_hub's standard cache.

Only config.json and one set of weight files are fetched (safetensors preferred). Offline
(``HF_HUB_OFFLINE=1``, or no network) the snapshot is read from the cache; a model that is not
there gives a one-line error.
"""

from __future__ import annotations

from pathlib import Path

from .errors import CheckpointError

#: Weight layouts in order of preference: (files that identify it, allow_patterns to fetch).
WEIGHT_PATTERNS = (
    ("model.safetensors", ["model.safetensors"]),
    ("model.safetensors.index.json", ["model.safetensors.index.json", "model-*.safetensors"]),
    ("pytorch_model.bin", ["pytorch_model.bin"]),
    ("pytorch_model.bin.index.json", ["pytorch_model.bin.index.json", "pytorch_model-*.bin"]),
)


def _has_weights(path: Path) -> bool:
    return any((path / marker).is_file() for marker, _ in WEIGHT_PATTERNS)


def resolve_hub_id(repo_id: str, revision: str | None = None) -> Path:
    """Local directory holding config.json and weights for ``repo_id``."""
    try:
        import huggingface_hub as hf
    except ImportError:
        raise CheckpointError(
            f"'{repo_id}' is not a local path and huggingface_hub is not installed; install "
            "the hub extra (pip install 'specbound[hub]') or pass a local directory"
        ) from None
    from huggingface_hub.errors import LocalEntryNotFoundError

    patterns = ["config.json"] + [p for _, ps in WEIGHT_PATTERNS for p in ps]
    try:  # cache first: no network at all when the snapshot is complete
        local = Path(hf.snapshot_download(repo_id, revision=revision, allow_patterns=patterns,
                                          local_files_only=True))
        if (local / "config.json").is_file() and _has_weights(local):
            return local
    except (LocalEntryNotFoundError, OSError, ValueError):
        pass
    if hf.constants.HF_HUB_OFFLINE:
        raise CheckpointError(
            f"hub id '{repo_id}' is not in the local Hugging Face cache and the hub is offline "
            "(HF_HUB_OFFLINE=1); download it while online or pass a local directory"
        )
    try:
        files = set(hf.list_repo_files(repo_id, revision=revision))
        chosen = next((ps for marker, ps in WEIGHT_PATTERNS if marker in files), None)
        if chosen is None:
            raise CheckpointError(
                f"hub repo '{repo_id}' has no safetensors or pytorch_model.bin weights"
            )
        local = Path(hf.snapshot_download(repo_id, revision=revision,
                                          allow_patterns=["config.json", *chosen]))
    except CheckpointError:
        raise
    except Exception as exc:  # network errors, missing repos, gated repos ...
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CheckpointError(
            f"could not fetch hub id '{repo_id}' ({first}); check the id and the network, or "
            "pass a local directory"
        ) from None
    return local
