"""model_type -> adapter class. Each architecture module registers itself with ``@register``."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, Param

if TYPE_CHECKING:
    from ..io.checkpoint import Checkpoint
    from .base import Adapter

#: Adapter modules, imported on first use. A new architecture is one module added here.
MODULES = ("bert", "distilbert", "albert", "gpt2", "gpt_neox", "opt", "llama", "vit", "t5")

_REGISTRY: dict[str, type[Adapter]] = {}
_loaded = False


def register(cls: type[Adapter]) -> type[Adapter]:
    for t in cls.model_types:
        _REGISTRY[t] = cls
    return cls


def _load() -> None:
    global _loaded
    if not _loaded:
        for m in MODULES:
            importlib.import_module(f"{__package__}.{m}")
        _loaded = True


def supported_model_types() -> list[str]:
    _load()
    return sorted(_REGISTRY)


def get_adapter(checkpoint: Checkpoint, prefix: str | None = None) -> Adapter:
    """The adapter for ``checkpoint.config['model_type']``, its block count checked.

    ``prefix``: the tensor-name prefix of the model to analyze (``bert.``), for checkpoints that
    hold several; None detects it (and refuses to guess between several).
    """
    _load()
    mt = checkpoint.config.get("model_type")
    if mt is not None and not isinstance(mt, str):
        raise ConfigError(
            f"'model_type' in config.json of {checkpoint.name} must be a string, got {mt!r}"
        )
    if mt is None:
        raise ConfigError(
            f"config.json of {checkpoint.name} has no 'model_type'; add it (one of: "
            f"{', '.join(supported_model_types())}) or describe the model with a mapping file (",
            Param("mapping"),
            ")",
        )
    cls = _REGISTRY.get(str(mt))
    if cls is None:
        raise ConfigError(
            f"model_type '{mt}' of {checkpoint.name} is not supported; supported: "
            f"{', '.join(supported_model_types())}; for other architectures write a mapping "
            "file (",
            Param("mapping"),
            ", see README)",
        )
    adapter = cls(checkpoint, prefix=prefix)
    adapter.verify_blocks()  # before any spectral work: a wrong or huge layer count fails here
    return adapter


def adapter_for(checkpoint: Checkpoint, mapping: Any = None, prefix: str | None = None) -> Adapter:
    """The user mapping's adapter when ``mapping`` is given, else the registered one."""
    if mapping is not None:
        from .mapping import MappingAdapter

        return MappingAdapter.from_spec(checkpoint, mapping, prefix=prefix)
    return get_adapter(checkpoint, prefix=prefix)
