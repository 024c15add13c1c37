"""A stand-in for the ``ray`` module (no Ray started): ``init`` and ``shutdown`` send this
process a signal midway, as a Ctrl-C or SIGTERM arriving while Ray starts or stops would, and
record whether they ran to their end. ``install`` puts it in ``sys.modules`` and registers its
``shutdown`` in ``atexit``, as ``import ray`` does."""

from __future__ import annotations

import signal
import sys
import types
from typing import Any


def make(*, init_signal: int | None = None, shutdown_signal: int | None = None) -> Any:
    ray = types.ModuleType("ray")
    ray.log = []  # type: ignore[attr-defined]
    state = {"begun": False, "up": False}

    def is_initialized() -> bool:
        return state["up"]

    def init(**kwargs: Any) -> None:
        ray.log.append("init")
        state["begun"] = True
        # ray.init's first act (ray/_private/worker.py): its own SIGTERM handler
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))
        if init_signal is not None:
            signal.raise_signal(init_signal)  # to this thread: handled before init goes on
        state["up"] = True
        ray.log.append("init done")

    def shutdown(**kwargs: Any) -> None:
        if not state["begun"]:  # as Ray's: it also ends a runtime whose start was cut short
            return
        ray.log.append("shutdown")
        if shutdown_signal is not None:
            signal.raise_signal(shutdown_signal)  # to this thread, at once
        state["begun"] = state["up"] = False
        ray.log.append("shutdown done")

    ray.is_initialized = is_initialized  # type: ignore[attr-defined]
    ray.init = init  # type: ignore[attr-defined]
    ray.shutdown = shutdown  # type: ignore[attr-defined]
    return ray


def install(**kwargs: Any) -> Any:
    """``make(**kwargs)`` as ``sys.modules["ray"]``, its shutdown registered in ``atexit``."""
    import atexit

    ray = make(**kwargs)
    sys.modules["ray"] = ray
    atexit.register(ray.shutdown)
    return ray
