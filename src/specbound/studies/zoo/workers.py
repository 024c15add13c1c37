"""``zoo train --workers N``: zoo jobs (one model, or one ensemble) in N worker processes.

Each job is ``distributed.run_job``, the code ``--engine ray`` runs: a worker trains its
members with ``--threads`` torch threads (1 by default) and writes each model directory
itself, atomically (temp dir + rename); the parent holds the zoo's lock, writes zoo.csv and
reports each model as its job finishes. With one torch thread a model's arithmetic does not
depend on the process it runs in, so the files are identical bit for bit to one at a time
(``wall_s`` aside). The default on the CPU is one worker per usable CPU
(``os.sched_getaffinity``) divided by ``--threads``; on CUDA it is 1.

This process is one of the N: it trains jobs itself between collecting the results of N - 1
``concurrent.futures.ProcessPoolExecutor`` processes of the ``spawn`` context (torch is not
fork-safe once its thread pools exist), which saves one worker's start (seconds of CPU for
torch and transformers) on a small machine. ``zoo train`` starts those processes before it
imports torch itself (``ProcessPool.start`` with ``distributed.warm``), so their imports overlap
its own; in ``map`` one thread per process submits that process's next job as soon as its last
one returns (one job in flight each: at the end no job waits behind a busy process while
another is idle). The spawned workers ignore SIGINT (inherited while they start, then their
initializer): on Ctrl-C (or the CLI's SIGTERM) the parent alone acts,
terminating its workers (SIGTERM, SIGKILL to those still alive after ``STOP_GRACE_S``) and
removing their unfinished temp dirs before it exits 130 (143); a model directory is either
complete or absent. A job that fails (its error, or a worker that died) is reported at the end
by ``run_on_engine`` after the other jobs' models are written; a re-run trains the rest. Once a
worker has died the pool is broken: the jobs not yet submitted are trained by this process.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ...engines.processes import (
    ignore_sigint,
    sigint_ignored,
    stop_processes,
    usable_cpus,
)
from ...validation import WORKERS, check_param


def default_workers(device: str = "cpu", threads: int = 1) -> int:
    """``--workers`` when not given: usable CPUs // ``threads`` on the CPU (>= 1), 1 on CUDA."""
    if str(device).startswith("cuda"):
        return 1
    return max(1, usable_cpus() // max(1, threads))


def remove_temps(models: Path) -> None:
    """Remove the temp dirs of unfinished models (``.NAME.*.tmp``); the caller holds the lock
    and its workers have ended."""
    from .zoodir import remove_stale_temps

    remove_stale_temps(models)


def _stop(pool: Any) -> None:
    """End every worker process of ``pool`` now (``engines.processes.stop_processes``)."""
    stop_processes((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=True, cancel_futures=True)


class ProcessPool:
    """An engine-like ``map`` over ``workers`` spawned processes, as ``run_on_engine`` needs:
    ``(job, fn(job) or JobError)`` as jobs finish; closing it early stops the workers.

    ``start(warm)`` spawns the ``workers`` - 1 processes before the first job is known, each
    running ``warm()`` (its imports and data), so that their start overlaps this process's own;
    ``map`` then uses them. Without ``start`` the processes are spawned by ``map``."""

    name = "processes"
    options = None
    distributed = True

    def __init__(self, workers: int) -> None:
        self.workers = check_param(workers, "workers", WORKERS)
        self._pool: Any = None

    def spectra_fn(self, **_: Any) -> None:
        return None

    def start(self, warm: Callable[[], Any] | None = None) -> None:
        """Spawn the ``workers`` - 1 processes now, each running ``warm()`` first (a picklable
        callable; its result and errors are ignored: a job that needs what failed says so).
        Main thread; ``close`` (or ``map``) ends them."""
        if self._pool is None and self.workers > 1:
            self._pool = _spawn(self.workers - 1, warm)

    def close(self) -> None:
        """End processes that ``start`` spawned and no ``map`` took over (now, not after their
        warm-up)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            _stop(pool)

    def map(
        self,
        fn: Callable[[Any], Any],
        jobs: Sequence[Any],
        *,
        progress: Callable[[int, int], None] | None = None,
        resources: Any = None,
    ) -> Iterator[tuple[Any, Any]]:
        """This process is one of the ``workers``: it trains jobs itself between collecting
        the results of the spawned processes (it has paid for its imports already; a spawned
        worker costs seconds of CPU to start). Each spawned process is fed by a thread of this
        process that submits the next job the moment the last one returns, so no process waits
        for another, and at the end no job sits queued behind a busy one while another process
        is idle. A job whose submit fails (a broken pool) goes back to this process."""
        import queue as queues
        import threading
        from collections import deque

        from ...engines.base import JobError
        from ...errors import SpecboundError, one_line_reason

        def outcome(call: Callable[[], Any]) -> Any:
            try:
                return call()
            except SpecboundError as exc:
                return JobError(one_line_reason(exc), input_error=True)
            except MemoryError:
                raise
            except Exception as exc:  # a bug in the job, or a worker that died
                return JobError(one_line_reason(exc), input_error=False)

        queue = deque(jobs)
        total = len(queue)
        spawned = min(self.workers, total) - 1
        pool, self._pool = self._pool, None
        if pool is not None and spawned < 1:  # started, but this process alone has work
            _stop(pool)
            pool = None
        elif pool is None and spawned > 0:
            pool = _spawn(spawned)
        results: queues.SimpleQueue[Any] = queues.SimpleQueue()
        stop = threading.Event()
        end = object()  # a feeder's last word

        def feed() -> None:
            try:
                while not stop.is_set():
                    try:
                        job = queue.popleft()
                    except IndexError:
                        return
                    try:
                        fut = pool.submit(fn, job)
                    except Exception:  # broken or shut down: this process trains it
                        queue.appendleft(job)
                        return
                    results.put((job, outcome(fut.result)))
            finally:
                results.put(end)

        feeders = [threading.Thread(target=feed, daemon=True) for _ in range(max(0, spawned))]
        for t in feeders:
            t.start()
        live, done, clean = len(feeders), 0, False
        try:
            while True:
                item = _next(results, block=False)
                if item is None:
                    try:
                        job = queue.popleft()
                    except IndexError:
                        if not live:
                            break
                        item = _next(results, block=True)
                    else:
                        item = (job, outcome(functools.partial(fn, job)))  # in this process
                if item is end:
                    live -= 1
                    continue
                done += 1
                yield item
                if progress:
                    progress(done, total)
            clean = True
        finally:
            stop.set()
            if pool is not None:
                if clean:
                    pool.shutdown(wait=True)
                else:
                    _stop(pool)
            for t in feeders:
                t.join(timeout=STOP_JOIN_S)


#: Seconds to wait for a feeder thread once its pool has been stopped.
STOP_JOIN_S = 5.0


def _spawn(n: int, warm: Callable[[], Any] | None = None) -> Any:
    """A ``ProcessPoolExecutor`` of ``n`` processes of the ``spawn`` context (torch is not
    fork-safe once its thread pools exist), all started now, from this (main) thread with
    SIGINT ignored so that they inherit SIG_IGN from their first instruction (a Ctrl-C while
    one imports would print its traceback); each runs ``warm()`` (default: nothing) first."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(
        max_workers=n, mp_context=multiprocessing.get_context("spawn"), initializer=ignore_sigint
    )
    with sigint_ignored():  # a submit finding no idle process starts one
        for _ in range(n):
            pool.submit(warm or int)
    return pool


def _next(results: Any, block: bool) -> Any:
    """The next item of ``results``, or None when there is none (``block``: wait for one, in
    short waits so that a signal is handled at once)."""
    import queue as queues

    while True:
        try:
            return results.get(timeout=0.2) if block else results.get_nowait()
        except queues.Empty:
            if not block:
                return None
