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
from ...validation import check_int
from .plan import max_threads


def default_workers(device: str = "cpu", threads: int = 1) -> int:
    """``--workers`` when not given: usable CPUs // ``threads`` on the CPU (>= 1), 1 on CUDA."""
    if str(device).startswith("cuda"):
        return 1
    return max(1, usable_cpus() // max(1, threads))


def check_workers(workers: Any) -> int:
    """``workers`` as an int in 1..``max_threads()`` (4 x the CPUs), else a one-line error."""
    return check_int(workers, "workers", min=1, max=max_threads())


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
        pool = None
        if spawned > 0:
            pool = ProcessPoolExecutor(
                max_workers=spawned,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=ignore_sigint,
            )
        running: dict[Future[Any], Any] = {}
        done = 0
        clean = False
        try:
            while queue or running:
                if pool is not None:
                    with sigint_ignored():  # workers start on their first submit
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
