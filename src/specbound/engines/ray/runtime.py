"""Joining or starting a Ray runtime, and what a task does around its job (Ray imported lazily).

Connecting: ``address``, else ``$RAY_ADDRESS`` (``config.ray_address``), joins an existing
cluster; without either a local Ray runtime is started (``num_cpus`` of this machine, or the
number given). ``ray.init`` replaces the process's SIGTERM handler with one that exits 15 and
lets Ray's core worker dump a C++ backtrace; specbound puts the previous handler back, so the
CLI's SIGTERM (exit 143, one line, records kept) works as SIGINT (130) does.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ...errors import Param, SpecboundError, one_line_reason
from ..base import JobError, call_job


def require_ray() -> Any:
    """The ``ray`` module, or a one-line SpecboundError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise SpecboundError(
            "the ray engine needs Ray; install it with pip install 'specbound[ray]' or use "
            "the local engine"
        ) from None
    return ray


@contextlib.contextmanager
def _keep_sigterm_handler() -> Iterator[None]:
    """Restore the SIGTERM handler that ``ray.init`` overwrites (main thread only)."""
    main = threading.current_thread() is threading.main_thread()
    old = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if main and old is not None:
            signal.signal(signal.SIGTERM, old)


class DeferredSigterm:
    """While waiting on Ray, a SIGTERM is only noted (Ray's C++ signal check would turn any
    exception a handler raises into a plain KeyboardInterrupt: exit 130, not 143); ``check()``,
    outside the ``with`` block, then runs the handler that was installed before (the CLI's
    raises its ``Terminated``) in plain Python. Main thread only; elsewhere nothing changes."""

    def __init__(self) -> None:
        self.frame: Any = None
        self.fired = False
        self.previous: Any = None
        self.active = threading.current_thread() is threading.main_thread()

    def __enter__(self) -> DeferredSigterm:
        if self.active:
            self.previous = signal.getsignal(signal.SIGTERM)
            signal.signal(signal.SIGTERM, self._note)
        return self

    def _note(self, signum: int, frame: Any) -> None:
        self.fired, self.frame = True, frame

    def __exit__(self, *exc: object) -> None:
        if self.active and self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)

    def check(self) -> None:
        """Act on a noted SIGTERM as the previous handler would (call it outside the block)."""
        if not self.fired:
            return
        self.fired = False
        old = self.previous
        if callable(old):
            old(signal.SIGTERM, self.frame)
        elif old != signal.SIG_IGN:  # the default action: terminate by the signal
            import os

            os.kill(os.getpid(), signal.SIGTERM)


def connect(address: str | None = None, num_cpus: int | None = None) -> Any:
    """Join the cluster at ``address`` (else ``$RAY_ADDRESS``), or start a local Ray runtime.

    Reuses the connection when Ray is already initialized in this process.
    """
    from ...config import ray_address

    ray = require_ray()
    if ray.is_initialized():
        return ray
    address = address or ray_address() or None
    if address:
        probe(address)
    opts: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    try:
        with _keep_sigterm_handler():
            if address:
                ray.init(address=address, **opts)
            else:
                ray.init(num_cpus=num_cpus, include_dashboard=False, **opts)
    except Exception as exc:  # ConnectionError, RuntimeError, ValueError ... from ray.init
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        where = f"the Ray cluster at {address}" if address else "a local Ray runtime"
        raise SpecboundError(
            f"cannot connect to {where} ({first}); check the Ray address (",
            Param("address"),
            " / RAY_ADDRESS), or give none to start a local runtime",
        ) from None
    return ray


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

    from ...linalg import pool

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
