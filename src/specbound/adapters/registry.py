"""model_type -> adapter class. Each architecture module registers itself with ``@register``."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..checkpoint import Checkpoint
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


def get_adapter(checkpoint: Checkpoint) -> Adapter:
    """The adapter for ``checkpoint.config['model_type']``."""
    _load()
    mt = checkpoint.config.get("model_type")
    if mt is None:
        raise ConfigError(
            f"config.json of {checkpoint.name} has no 'model_type'; add it (one of: "
            f"{', '.join(supported_model_types())}) or describe the model with a mapping file "
            "(--mapping)"
        )
    cls = _REGISTRY.get(str(mt))
    if cls is None:
        raise ConfigError(
            f"model_type '{mt}' of {checkpoint.name} is not supported; supported: "
            f"{', '.join(supported_model_types())}; for other architectures write a mapping "
            "file (--mapping, see README)"
        )
    return cls(checkpoint)


def adapter_for(checkpoint: Checkpoint, mapping: Any = None) -> Adapter:
    """The user mapping's adapter when ``mapping`` is given, else the registered one."""
    if mapping is not None:
        from .mapping import MappingAdapter

        return MappingAdapter.from_spec(checkpoint, mapping)
    return get_adapter(checkpoint)
