"""How the spectra of one block use the cores: an explicit, scoped parallel setting.

Two modes, chosen by measurement (benchmarks/README.md):

- ``"pool"`` (the default): a block's jobs (QK, OV, M_in, M_out and the raw-weight SVDs) run on
  a pool of worker threads with BLAS held at one thread (threadpoolctl), so the LAPACK calls of
  ``linalg.lapack`` (which release the GIL) use every core at once;
- ``"blas"``: the jobs run one after the other and BLAS uses its own threads.

The setting is a context variable, set for a scope with :func:`parallelism`::

    from specbound.linalg.pool import parallelism

    with parallelism("blas"):          # e.g. inside a Ray task that owns one core
        analyze(...)
    with parallelism(workers=2):       # the pool, at most two threads
        ...

Precedence: the innermost :func:`parallelism` scope, else ``$SPECBOUND_PARALLEL`` (read through
``specbound.config`` at call time), else ``"pool"``. specbound never writes ``os.environ``.
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .. import config
from ..config import usable_cpus
from ..validation import check_choice, check_int

#: The modes; the default is the first.
MODES = ("pool", "blas")
DEFAULT_PARALLEL = "pool"
#: The pool never uses more threads than this (measured: no gain past 4 on a block's jobs).
MAX_WORKERS = 4


@dataclass(frozen=True)
class Parallelism:
    """An explicit parallel setting: ``mode`` ("pool" or "blas"), ``workers`` (None: the cores
    this process may use, at most MAX_WORKERS)."""

    mode: str = DEFAULT_PARALLEL
    workers: int | None = None


_SETTING: contextvars.ContextVar[Parallelism | None] = contextvars.ContextVar(
    "specbound_parallelism", default=None
)


@contextmanager
def parallelism(mode: str | None = None, *, workers: int | None = None) -> Iterator[Parallelism]:
    """Run the enclosed spectral work with ``mode`` ("pool" or "blas"; None: keep the current
    mode) and at most ``workers`` pool threads (None: keep the current limit). Scoped to this
    thread/context; restored on exit."""
    current = current_parallelism()
    new = Parallelism(
        current.mode if mode is None else check_choice(mode, "mode", MODES),
        current.workers if workers is None else check_int(workers, "workers", min=1),
    )
    token = _SETTING.set(new)
    try:
        yield new
    finally:
        _SETTING.reset(token)


def current_parallelism() -> Parallelism:
    """The setting in force: the innermost ``parallelism`` scope, else ``$SPECBOUND_PARALLEL``
    (an unknown value falls back to the default), else the default."""
    scoped = _SETTING.get()
    if scoped is not None:
        return scoped

    mode = config.parallel_mode(DEFAULT_PARALLEL)
    return Parallelism(mode if mode in MODES else DEFAULT_PARALLEL, None)


def _workers() -> int:
    """Pool threads: min(MAX_WORKERS, cores available, the setting's ``workers``), >= 1."""
    limit = current_parallelism().workers
    n = min(MAX_WORKERS, usable_cpus())
    return max(1, n if limit is None else min(n, limit))


@dataclass
class _PoolState:
    """The process's worker pool and its BLAS limiter (recreated after a fork)."""

    executor: Any = None
    controller: Any = None
    pid: int = -1
    workers: int = 0
    #: whether the controller was made after scipy's own OpenBLAS was loaded (None: not made)
    saw_scipy: bool | None = None


_STATE = _PoolState()
_LOCK = threading.Lock()


def run_jobs(jobs: Sequence[Callable[[], Any]]) -> list[Any]:
    """Results of the zero-argument callables ``jobs``, in order, per the current setting.

    BLAS products (numpy) and the LAPACK calls of ``lapack`` release the GIL, so worker threads run
    matrices truly in parallel (numpy.linalg's own LAPACK wrappers hold it: the small per-head QRs
    and core SVDs take turns); BLAS is held at one thread meanwhile (threadpoolctl; process-wide
    while the jobs run), else the threads oversubscribe the cores. Concurrent callers are
    serialized.
    """
    workers = _workers()
    if current_parallelism().mode == "blas" or workers == 1 or len(jobs) == 1:
        return [j() for j in jobs]
    with _LOCK:
        return _run_pooled(jobs, workers)


def _run_pooled(jobs: Sequence[Callable[[], Any]], workers: int) -> list[Any]:
    # scipy bundles its own OpenBLAS. The controller only limits libraries loaded when it was
    # made, so it is remade once scipy is loaded (else scipy's LAPACK runs multi-threaded
    # inside every worker thread: oversubscribed, spinning, 4-10x slower on a loaded machine);
    # importing scipy up front instead would cost every run ~0.5 s.
    st = _STATE
    scipy_loaded = "scipy.linalg" in sys.modules
    if st.executor is None or st.pid != os.getpid() or st.workers != workers:
        # a forked child must not reuse dead threads; a new limit gets a pool of its size
        from concurrent.futures import ThreadPoolExecutor

        if st.executor is not None and st.pid == os.getpid():
            st.executor.shutdown(wait=False)
        st.executor, st.pid, st.workers = (
            ThreadPoolExecutor(max_workers=workers),
            os.getpid(),
            workers,
        )
        st.controller, st.saw_scipy = None, None
    if st.saw_scipy is None or (scipy_loaded and not st.saw_scipy):
        try:
            from threadpoolctl import ThreadpoolController

            st.controller = ThreadpoolController()
        except ImportError:  # pragma: no cover - threadpoolctl is a dependency
            st.controller = None
        st.saw_scipy = scipy_loaded
    pool, ctl = st.executor, st.controller
    if ctl is None:
        return [f.result() for f in [pool.submit(j) for j in jobs]]
    with ctl.limit(limits=1, user_api="blas"):
        return [f.result() for f in [pool.submit(j) for j in jobs]]
