"""Engines: how ``analyze`` is mapped over many models (sweeps) or over one model's blocks.

Registry: ``ENGINES`` maps an engine name to the module that implements it. Each module
provides

- ``analyze_models(models, *, names, analyze_kwargs, on_model, on_skip, **options)``
  -> ``(analyses, skipped)``: one ``Analysis`` per model that could be analyzed (in input
  order) and ``(name, reason)`` for each model that could not;
- ``analyze(model, **analyze_kwargs, **options)`` -> ``Analysis`` (one model).

``local`` (the default) runs in this process and imports nothing beyond specbound's own
dependencies; ``ray`` needs the ``ray`` extra (``pip install 'specbound[ray]'``) and is imported
only when asked for.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import SpecboundError

#: engine name -> module implementing it (imported lazily).
ENGINES: dict[str, str] = {
    "local": "specbound.engines.local",
    "ray": "specbound.engines.ray",
}


def engine_names() -> list[str]:
    """The registered engine names, ``local`` first."""
    return list(ENGINES)


def get_engine(name: str) -> ModuleType:
    """The module of engine ``name``; SpecboundError for an unknown name or a missing extra."""
    if name not in ENGINES:
        raise SpecboundError(f"unknown engine '{name}'; available: {', '.join(ENGINES)}")
    return importlib.import_module(ENGINES[name])
