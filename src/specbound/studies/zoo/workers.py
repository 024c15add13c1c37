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
torch and transformers) on a small machine. The spawned workers ignore SIGINT (inherited while
they start, then their initializer): on Ctrl-C (or the CLI's SIGTERM) the parent alone acts,
terminating its workers (SIGTERM, SIGKILL to those still alive after ``STOP_GRACE_S``) and
removing their unfinished temp dirs before it exits 130 (143); a model directory is either
complete or absent. A job that fails (its error, or a worker that died) is reported at the end
by ``run_on_engine`` after the other jobs' models are written; a re-run trains the rest.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ...validation import check_int
from .plan import max_threads

#: Seconds the parent waits for its workers to end after SIGTERM before it SIGKILLs them.
STOP_GRACE_S = 1.0


def usable_cpus() -> int:
    """CPUs this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` elsewhere)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_workers(device: str = "cpu", threads: int = 1) -> int:
    """``--workers`` when not given: usable CPUs // ``threads`` on the CPU (>= 1), 1 on CUDA."""
    if str(device).startswith("cuda"):
        return 1
    return max(1, usable_cpus() // max(1, threads))


def check_workers(workers: Any) -> int:
    """``workers`` as an int in 1..``max_threads()`` (4 x the CPUs), else a one-line error."""
    return check_int(workers, "--workers", min=1, max=max_threads())


def _ignore_sigint() -> None:
    """Worker initializer: Ctrl-C is the parent's to handle (it stops the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while workers are started, so that they inherit SIG_IGN from their first
    instruction (a Ctrl-C while one imports would print its traceback). Main thread only."""
    try:
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: no signal handling here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def remove_temps(models: Path) -> None:
    """Remove the temp dirs of unfinished models (``.NAME.*.tmp``); the caller holds the lock
    and its workers have ended."""
    from .zoodir import remove_stale_temps

    remove_stale_temps(models)


def _stop(pool: Any) -> None:
    """End every worker process now: SIGTERM, then SIGKILL after ``STOP_GRACE_S``."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        with contextlib.suppress(Exception):
            p.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for p in procs:
        with contextlib.suppress(Exception):
            p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        with contextlib.suppress(Exception):
            if p.is_alive():
                p.kill()
    for p in procs:
        with contextlib.suppress(Exception):
            p.join(STOP_GRACE_S)
    pool.shutdown(wait=True, cancel_futures=True)


class ProcessPool:
    """An engine-like ``map`` over ``workers`` spawned processes, as ``run_on_engine`` needs:
    ``(job, fn(job) or JobError)`` as jobs finish; closing it early stops the workers."""

    name = "processes"
    options = None
    distributed = True

    def __init__(self, workers: int) -> None:
        self.workers = check_workers(workers)

    def spectra_fn(self, **_: Any) -> None:
        return None

    def map(
        self,
        fn: Callable[[Any], Any],
        jobs: Sequence[Any],
        *,
        progress: Callable[[int, int], None] | None = None,
        resources: Any = None,
    ) -> Iterator[tuple[Any, Any]]:
        """This process is one of the ``workers``: it trains jobs itself between collecting
        the results of ``workers`` - 1 spawned processes (it has paid for its imports
        already; a spawned worker costs seconds of CPU to start), each of which keeps one job
        queued behind its current one so that it never waits for this process."""
        import multiprocessing
        from collections import deque
        from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

        from ...engines.base import JobError, one_line
        from ...errors import SpecboundError

        def outcome(call: Callable[[], Any]) -> Any:
            try:
                return call()
            except SpecboundError as exc:
                return JobError(one_line(exc), input_error=True)
            except MemoryError:
                raise
            except Exception as exc:  # a bug in the job, or a worker that died
                return JobError(one_line(exc), input_error=False)

        queue = deque(jobs)
        total = len(queue)
        spawned = min(self.workers, total) - 1
        pool = None
        if spawned > 0:
            pool = ProcessPoolExecutor(
                max_workers=spawned,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_ignore_sigint,
            )
        running: dict[Future[Any], Any] = {}
        done = 0
        clean = False
        try:
            while queue or running:
                if pool is not None:
                    with _sigint_ignored():  # workers start on their first submit
                        while queue and len(running) < 2 * spawned:
                            job = queue.popleft()
                            running[pool.submit(fn, job)] = job
                finished = [f for f in running if f.done()]
                if not finished and not queue:
                    finished = list(wait(running, return_when=FIRST_COMPLETED)[0])
                for fut in finished:
                    job = running.pop(fut)
                    done += 1
                    yield job, outcome(fut.result)
                    if progress:
                        progress(done, total)
                if queue and not finished:
                    job = queue.popleft()
                    out = outcome(functools.partial(fn, job))  # in this process
                    done += 1
                    yield job, out
                    if progress:
                        progress(done, total)
            clean = True
        finally:
            if pool is not None:
                if clean:
                    pool.shutdown(wait=True)
                else:
                    _stop(pool)
