"""Joining or starting a Ray runtime, and what a task does around its job (Ray imported lazily).

Connecting: ``address``, else ``$RAY_ADDRESS`` (``config.ray_address``), joins an existing
cluster; without either a local Ray runtime is started (``num_cpus`` of this machine, or the
number given). ``ray.init`` replaces the process's SIGTERM handler with one that exits 15 and
lets Ray's core worker dump a C++ backtrace; specbound puts the previous handler back, so the
CLI's SIGTERM (exit 143, one line, records kept) works as SIGINT (130) does. Ctrl-C and SIGTERM
during ``ray.init`` and :func:`shutdown` are deferred until Ray is done (:class:`DeferredSignals`),
then acted on as anywhere else.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ... import extras
from ...config import ray_address
from ...errors import Param, SpecboundError, one_line_reason
from ...linalg import pool
from ..base import JobError, call_job


def require_ray() -> Any:
    """The ``ray`` module, or a one-line SpecboundError saying how to install it."""
    return extras.ray(
        "the ray engine needs Ray (or use the local engine); install it with "
        f"{extras.install_hint('ray')}"
    )


class DeferredSignals:
    """While Ray runs C++ code (``ray.init``, ``ray.wait``, ``ray.shutdown``), the signals
    given are only noted: an exception raised by a handler there is turned by Ray's signal
    check into a plain KeyboardInterrupt (exit 130, not 143), or, during start-up and shutdown,
    leaves a half-built runtime whose teardown prints a traceback or crashes (exit 139).
    ``check()``, outside the ``with`` block, then runs the handler that was installed before
    (the CLI's raise ``KeyboardInterrupt`` / its ``Terminated``) in plain Python. The handlers
    in place before the block are put back on the way out, also where Ray replaced them
    (``ray.init`` installs its own SIGTERM handler). Main thread only; elsewhere nothing
    changes."""

    def __init__(self, *signums: int) -> None:
        self.signums = signums or (signal.SIGTERM,)
        self.noted: dict[int, Any] = {}  # signal -> frame, in the order they came
        self.previous: dict[int, Any] = {}
        self.active = threading.current_thread() is threading.main_thread()

    def __enter__(self) -> DeferredSignals:
        if self.active:
            for sig in self.signums:
                self.previous[sig] = signal.getsignal(sig)
                signal.signal(sig, self.note)
        return self

    def note(self, signum: int, frame: Any = None) -> None:
        """Remember ``signum`` (the handler while the block runs)."""
        self.noted.setdefault(signum, frame)

    def __exit__(self, *exc: object) -> None:
        for sig, old in self.previous.items():
            if old is not None:
                signal.signal(sig, old)

    def check(self) -> None:
        """Act on the first noted signal as its previous handler would (call it outside the
        block); a second one noted meanwhile is the same request and is dropped."""
        if not self.noted:
            return
        sig, frame = next(iter(self.noted.items()))
        self.noted.clear()
        old = self.previous.get(sig, signal.SIG_DFL)
        if callable(old):
            old(sig, frame)
        elif old != signal.SIG_IGN:  # the default action: terminate by the signal
            import os

            os.kill(os.getpid(), sig)


def connect(address: str | None = None, num_cpus: int | None = None) -> Any:
    """Join the cluster at ``address`` (else ``$RAY_ADDRESS``), or start a local Ray runtime.

    Reuses the connection when Ray is already initialized in this process.
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    address = address or ray_address() or None
    if address:
        probe(address)
    opts: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    signals = DeferredSignals(signal.SIGINT, signal.SIGTERM)
    try:
        with signals:
            try:
                if address:
                    ray.init(address=address, **opts)
                else:
                    ray.init(num_cpus=num_cpus, include_dashboard=False, **opts)
            except SystemExit as exc:  # ray.init's own SIGTERM handler: sys.exit(SIGTERM)
                if exc.code != signal.SIGTERM:
                    raise
                signals.note(signal.SIGTERM)
    except Exception as exc:  # ConnectionError, RuntimeError, ValueError ... from ray.init
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        where = f"the Ray cluster at {address}" if address else "a local Ray runtime"
        raise SpecboundError(
            f"cannot connect to {where} ({first}); check the Ray address (",
            Param("address"),
            " / RAY_ADDRESS), or give none to start a local runtime",
        ) from None
    if signals.noted:  # Ctrl-C or SIGTERM while Ray started (or cut its start short: ray.init's
        _stop(ray)  # own handler exits): stop what started, then act on the signal
    signals.check()
    return ray


def shutdown() -> None:
    """Stop this process's Ray connection (and the local runtime it started), when Ray is
    imported and initialized, with Ctrl-C and SIGTERM deferred until it is done
    (:class:`DeferredSignals`), then acted on: the CLI calls this once a command ends, so
    that the teardown does not run in ``atexit``, where a signal prints a traceback."""
    import sys

    ray = sys.modules.get("ray")
    if ray is None:  # never imported (or hidden: None)
        return
    if ray.is_initialized():
        _stop(ray)


def _stop(ray: Any) -> None:
    """``ray.shutdown()`` (which also ends a runtime whose start was cut short) with Ctrl-C and
    SIGTERM deferred, then acted on."""
    signals = DeferredSignals(signal.SIGINT, signal.SIGTERM)
    with signals:
        ray.shutdown()
    signals.check()


def probe(address: str, timeout: float = 5.0) -> None:
    """Fail fast (one line) when a ``host:port`` address does not answer: ``ray.init`` would
    retry for minutes. Other forms (``auto``, ``ray://...``) are left to Ray."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "/" in host or not host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise SpecboundError(
            f"no Ray cluster answers at {address} ({exc.strerror or type(exc).__name__}); check "
            "the Ray address (",
            Param("address"),
            " / RAY_ADDRESS: the head's GCS address, e.g. 10.0.0.5:6379), or give none to start "
            "a local runtime",
        ) from None


@contextlib.contextmanager
def cpu_budget(threads: int) -> Iterator[None]:
    """Hold a task to the CPUs it declared: BLAS at ``threads`` threads, and with one CPU the
    block's matrices one after the other instead of on a thread pool."""
    from threadpoolctl import threadpool_limits

    mode = "blas" if threads == 1 else None
    with pool.parallelism(mode, workers=threads), threadpool_limits(limits=threads):
        yield


def run_task(fn: Callable[[Any], Any], job: Any, threads: int) -> Any:
    """What every Ray task runs: ``fn(job)`` within its CPU budget; a SpecboundError comes
    back as a JobError (bad input), any other exception as Ray's task error."""
    with cpu_budget(threads):
        return call_job(fn, job)


def reason(exc: BaseException, ray: Any, retries: int) -> JobError:
    """A failed task as a JobError: the worker's own error, or how the worker died."""
    if isinstance(exc, ray.exceptions.RayTaskError):
        cause = getattr(exc, "cause", None)
        if cause is not None and not isinstance(cause, ray.exceptions.RayError):
            return JobError(one_line_reason(cause), input_error=isinstance(cause, SpecboundError))
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return JobError(
        f"the worker failed {retries + 1} times ({type(exc).__name__}: {first}); "
        "out of memory or killed? see the Ray logs",
        input_error=False,
    )


def memory_cap(ray: Any) -> Callable[[int], int]:
    """Clamp a memory request to the cluster's total (a larger one could never be scheduled)."""
    total = int(ray.cluster_resources().get("memory", 0))
    return lambda memory: max(1, min(memory, total) if total > 0 else memory)
