"""model_type -> adapter class. Each architecture module registers itself with ``@register``."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, Param, SpecboundError
from ..io.checkpoint import load_checkpoint
from .mapping import MappingAdapter

if TYPE_CHECKING:
    from ..core import ModelSpec
    from ..io.checkpoint import Checkpoint
    from .base import Adapter

#: Adapter modules, imported on first use. A new architecture is one module added here.
MODULES = (
    "bert",
    "distilbert",
    "albert",
    "gpt2",
    "gpt_neox",
    "opt",
    "llama",
    "vit",
    "t5",
    "mpnet",
)

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
        mt, note = resolve_model_type(checkpoint)
        checkpoint.config = {**checkpoint.config, "model_type": mt}
        if note not in checkpoint.notes:
            checkpoint.notes.append(note)
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


#: Class-name endings of transformers' model classes (``BertForMaskedLM``, ``GPT2LMHeadModel``).
_CLASS_TAIL = re.compile(r"(For[A-Z]\w*|LMHeadModel|PreTrainedModel|EncoderModel|Model)$")


def _type_of_class(name: str) -> str | None:
    """The registered model_type a transformers class name belongs to (``XLMRobertaModel`` ->
    ``xlm-roberta``): its stem before the class-kind ending, compared case-insensitively with
    every registered type with ``-``/``_`` dropped; None when no type matches."""
    _load()
    stem = _CLASS_TAIL.sub("", name).lower()
    found = [t for t in _REGISTRY if t.replace("-", "").replace("_", "") == stem]
    return found[0] if found else None


def _layout_matches(cls: type[Adapter], checkpoint: Checkpoint) -> bool:
    """Every tensor of block 0 that ``cls`` would read is in the checkpoint."""
    try:
        probe = cls(checkpoint)
        names = [t for ts in probe.layer_roles(0).roles.values() for t in ts]
    except SpecboundError:
        return False
    stored = set(checkpoint.source.names())
    return bool(names) and all(t in stored for t in names)


def resolve_model_type(checkpoint: Checkpoint) -> tuple[str, str]:
    """(model_type, note) for a config without ``model_type``.

    Rule 1: ``architectures`` (``["BertForMaskedLM"]`` -> bert) when its class names agree on one
    registered type. Rule 2: the tensor names, when the block-0 tensors of exactly one adapter's
    layout are all stored (the first of its model types is named: those it shares a layout with
    give the same proxies). Otherwise a one-line ConfigError saying how to name it.
    """
    _load()
    name = checkpoint.name
    archs = checkpoint.config.get("architectures")
    if isinstance(archs, list) and archs and all(isinstance(a, str) for a in archs):
        types = {_type_of_class(a) for a in archs}
        if len(types) == 1 and None not in types:
            mt = str(types.pop())
            return mt, (
                f"config.json has no model_type: '{mt}' taken from architectures {', '.join(archs)}"
            )
    candidates = {cls for cls in _REGISTRY.values() if _layout_matches(cls, checkpoint)}
    if len(candidates) == 1:
        cls = candidates.pop()
        mt = cls.model_types[0]
        same = (
            f" (same layout as {', '.join(cls.model_types[1:])})"
            if len(cls.model_types) > 1
            else ""
        )
        return mt, f"config.json has no model_type: '{mt}' inferred from the tensor names{same}"
    if candidates:
        why = "the tensor names fit " + " and ".join(sorted(c.model_types[0] for c in candidates))
    elif isinstance(archs, list) and archs:
        why = f"architectures {archs!r} names no supported type"
    else:
        why = "neither architectures nor the tensor names identify it"
    raise ConfigError(
        f'config.json of {name} has no \'model_type\' and {why}; add "model_type": "bert" '
        f"(or another of: {', '.join(supported_model_types())}) to config.json or pass ",
        Param("mapping"),
    )


def adapter_for(checkpoint: Checkpoint, mapping: Any = None, prefix: str | None = None) -> Adapter:
    """The user mapping's adapter when ``mapping`` is given, else the registered one."""
    if mapping is not None:
        return MappingAdapter.from_spec(checkpoint, mapping, prefix=prefix)
    return get_adapter(checkpoint, prefix=prefix)


def init_adapter_for(init: Any, ckpt: Any, spec: ModelSpec, mapping: Any, prefix: Any) -> Any:
    """The adapter of the initialization checkpoint ``init`` (a path, or a state dict read with
    ``ckpt``'s config), checked to have ``spec``'s architecture and shapes (distance_from_init
    compares the two matrix by matrix); a mismatch is one line naming ``init``."""
    is_path = isinstance(init, (str, Path))
    try:  # say which of the two checkpoints is wrong
        init_ckpt = load_checkpoint(
            init, None if is_path else ckpt.config, name=str(init) if is_path else "init state dict"
        )
        kw = {"prefix": prefix} if prefix is not None else {}
        init_adapter = adapter_for(init_ckpt, mapping, **kw)
        ispec = init_adapter.spec()
    except SpecboundError as exc:
        raise type(exc)(
            Param("init", str(init) if is_path else "state dict"), ": ", *exc.parts
        ) from None
    for f in (
        "architecture",
        "num_layers",
        "hidden_size",
        "num_heads",
        "head_dim",
        "intermediate_size",
        "num_kv_heads",
    ):
        if getattr(ispec, f) != getattr(spec, f):
            raise ConfigError(
                Param("init", init_ckpt.name),
                f" has {f} = {getattr(ispec, f)} but the model has "
                f"{getattr(spec, f)}; distance_from_init needs the same architecture and shapes",
            )
    return init_adapter
