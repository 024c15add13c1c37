"""Engines: where the work runs. One registry (``ENGINES``), one protocol (``base.Engine``).

    eng = get_engine("local")                                  # default options
    eng = get_engine("ray", RayOptions(address="auto", threads=2))
    eng = get_engine(name, options_for(name, address=address))  # from CLI-style settings
    eng = resolve(engine, options)  # a study's ``engine=`` argument: a name or an Engine

``local`` (the default) runs in this process and imports nothing beyond specbound's own
dependencies; ``ray`` needs the ``ray`` extra (``pip install '.[ray]'`` from a clone) and imports
Ray only when it first connects. Model sweeps with resume: :mod:`specbound.analysis.sweep`.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from ..errors import Param, SpecboundError
from .base import Engine, EngineOptionError, JobError, JobsLostError, Resources
from .local import LocalOptions

#: engine name -> "module:EngineClass:OptionsClass" (imported lazily).
ENGINES: dict[str, str] = {
    "local": "specbound.engines.local:LocalEngine:LocalOptions",
    "ray": "specbound.engines.ray:RayEngine:RayOptions",
}

__all__ = [
    "ENGINES",
    "Engine",
    "EngineOptionError",
    "JobError",
    "JobsLostError",
    "LocalOptions",
    "RayOptions",
    "Resources",
    "engine_names",
    "get_engine",
    "options_class",
    "options_for",
    "resolve",
]


def engine_names() -> list[str]:
    """The registered engine names, ``local`` first."""
    return list(ENGINES)


def _parts(name: str) -> tuple[Any, Any]:
    if not isinstance(name, str) or name not in ENGINES:
        raise SpecboundError(f"unknown engine '{name}'; available: {', '.join(ENGINES)}")
    module, cls, opts = ENGINES[name].split(":")
    mod = importlib.import_module(module)
    return getattr(mod, cls), getattr(mod, opts)


def options_class(name: str) -> type:
    """The options dataclass of engine ``name`` (``LocalOptions``, ``RayOptions``)."""
    return _parts(name)[1]


def options_for(name: str, **settings: Any) -> Any:
    """The options of engine ``name`` from ``settings``, ignoring those that are None.

    A setting the engine does not have (``address`` for ``local``) is an
    :class:`EngineOptionError` naming the engine and the option: an option the user gave must
    not be ignored silently.
    """
    cls = options_class(name)
    fields = {f.name for f in dataclasses.fields(cls)}
    given = {k: v for k, v in settings.items() if v is not None}
    for key in given:
        if key not in fields:
            has = sorted(n for n in ENGINES if n != name and _has_option(n, key))
            hint = f" (it is an option of {', '.join(has)})" if has else ""
            raise EngineOptionError(
                "option ",
                Param(key),
                f" is unused with engine '{name}'{hint}; drop it or choose an engine that uses it",
                engine=name,
                option=key,
            )
    return cls(**given)


def _has_option(name: str, key: str) -> bool:
    try:
        return key in {f.name for f in dataclasses.fields(options_class(name))}
    except Exception:
        return False


def get_engine(name: str, options: Any = None) -> Engine:
    """Engine ``name`` with ``options`` (its options dataclass; None: the defaults).

    SpecboundError for an unknown name; :class:`EngineOptionError` for options of another
    engine. Constructing an engine checks its options (the Ray engine probes a given
    ``address`` at once, so a dead cluster fails even when no task would run).
    """
    cls, opts_cls = _parts(name)
    if options is None:
        options = opts_cls()
    elif not isinstance(options, opts_cls):
        raise EngineOptionError(
            f"engine '{name}' takes {opts_cls.__name__}, not {type(options).__name__}",
            engine=name,
            option="options",
        )
    return cls(options)


def resolve(
    engine: str | Engine | None, options: Any = None, *, default: str | None = "local"
) -> Engine:
    """The engine a study runs on, from its ``engine`` and ``engine_options`` arguments.

    A name: ``get_engine(engine, options)``. An ``Engine`` object: itself, and ``options`` must
    be None (SpecboundError: options go with a name). None: the engine named ``default``
    (``"local"``); with ``default=None``, None is refused (SpecboundError).
    """
    if engine is None:
        if default is None:
            raise SpecboundError(
                f"engine must be an engine name ({', '.join(ENGINES)}) or an Engine, got None"
            )
        engine = default
    if isinstance(engine, str):
        return get_engine(engine, options)
    if options is not None:
        raise SpecboundError("engine_options is for an engine given by name; drop it")
    return engine


def __getattr__(attr: str) -> Any:  # RayOptions without importing the Ray engine up front
    if attr == "RayOptions":
        from .ray import RayOptions

        return RayOptions
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
