"""The process engine: jobs in worker processes on this machine (``zoo train --workers N``,
``correlate(data_workers=N)``): the one process pool of specbound.

:class:`ProcessEngine` is an :class:`specbound.engines.base.Engine`. Its workers are processes
of the ``spawn`` context (torch is not fork-safe once its thread pools exist), each fed by a
thread of this process that hands it its next job the moment the last one returns (one job in
flight per worker: at the end no job waits behind a busy worker while another is idle), over
the worker's own pipe. With ``ProcessOptions(here=True)`` this process is one of the
``workers``: it runs jobs itself between collecting the others' results, which saves one
worker's start (seconds of CPU for torch) on a small machine. :meth:`ProcessEngine.start`
spawns the workers before the first job is known, each running a warm-up (its imports), so
that their start overlaps this process's own.

Unlike a ``concurrent.futures.ProcessPoolExecutor``, whose pool breaks for every job when one
worker dies, a worker that dies (SIGKILL, the out-of-memory killer, a crash in native code)
costs only the job it was running: that job is retried ``retries`` times (1) in a fresh worker
process, then comes back as ``JobError("worker process killed by SIGKILL twice ...",
input_error=False)``. A job's exception comes back as a ``JobError`` with its one-line reason
(``input_error`` True for a ``SpecboundError``), an ``OSError`` with its cause and path.

Workers are spawned with SIGINT blocked (``pthread_sigmask``, from any thread) and ignore it
from their first instruction: Ctrl-C (SIGINT to the whole process group, as a terminal sends
it) and the CLI's SIGTERM are this process's to act on. On either, on any exception, or when
the caller closes the iterator, this process terminates its workers (SIGTERM, then SIGKILL
after ``STOP_GRACE_S``) before the exception goes on. A script that uses this engine needs the
``if __name__ == "__main__":`` guard of ``multiprocessing``'s spawn.
"""

from __future__ import annotations

import contextlib
import queue as queues
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..config import usable_cpus
from ..errors import SpecboundError, one_line_reason
from ..validation import check_int
from .base import JobError, Progress, Resources

J = TypeVar("J")
R = TypeVar("R")

#: Seconds the parent waits for its workers to end after SIGTERM before it SIGKILLs them.
STOP_GRACE_S = 1.0
#: Seconds a wait of this process lasts at most before it looks again (signals are handled
#: between waits).
POLL_S = 0.2


@dataclass(frozen=True)
class ProcessOptions:
    """``workers``: processes running jobs side by side (None: ``config.usable_cpus()``);
    ``here``: this process is one of them (it runs jobs itself between collecting results);
    ``retries``: fresh workers a job gets after its worker died."""

    workers: int | None = None
    here: bool = False
    retries: int = 1

    def __post_init__(self) -> None:
        if self.workers is not None:
            check_int(self.workers, "workers", min=1)
        check_int(self.retries, "retries", min=0)


def death_reason(exitcode: int | None) -> str:
    """How a worker process ended, in words: ``killed by SIGKILL`` or ``exited with code 1``."""
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


def stop_processes(procs: Iterable[Any]) -> None:
    """End ``procs`` (``multiprocessing.Process``) now: SIGTERM, then SIGKILL to those still
    alive after ``STOP_GRACE_S``; joins them all."""
    procs = list(procs)
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


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread while a worker is spawned: the child inherits the mask, so
    a Ctrl-C before its first instruction cannot print its traceback; a Ctrl-C meanwhile is
    delivered to this process when the mask is restored."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _failure(exc: BaseException) -> JobError:
    """A job's exception as a JobError: a ``SpecboundError`` is bad input; an ``OSError``
    keeps its cause and path (``OSError: [Errno 28] No space left on device: '/z/m'``)."""
    return JobError(one_line_reason(exc), input_error=isinstance(exc, SpecboundError))


def _call(fn: Callable[[Any], Any], job: Any) -> Any:
    """``fn(job)``, or its exception as a JobError (MemoryError and interrupts go on)."""
    try:
        return fn(job)
    except MemoryError:
        raise
    except Exception as exc:
        return _failure(exc)


def _serve(conn: Any, warm: Callable[[], Any] | None) -> None:
    """A worker's life: ignore SIGINT; ``warm()`` (errors ignored: a job that needs what failed
    says so); then receive ``(fn, job)``, send ``(outcome, seconds)`` until ``None`` or EOF."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if warm is not None:
        with contextlib.suppress(Exception):
            warm()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        fn, job = msg
        t0 = time.perf_counter()
        try:
            out = _call(fn, job)
        except MemoryError as exc:
            out = _failure(exc)
        took = time.perf_counter() - t0
        try:
            conn.send((out, took))
        except (EOFError, OSError):
            return
        except Exception as exc:  # the result does not pickle
            conn.send((_failure(exc), took))


class _Died(Exception):
    """The worker process ended while it ran a job (``str``: how, in words)."""


class _Worker:
    """One spawned process and the parent's end of its pipe."""

    def __init__(self, ctx: Any, warm: Callable[[], Any] | None = None) -> None:
        from multiprocessing import resource_tracker

        # the first spawn starts multiprocessing's resource tracker, which unblocks SIGINT once
        # it started it (SIG_UNBLOCK, not the mask it found): started first, outside the block,
        # it cannot unblock SIGINT for the worker spawned inside
        resource_tracker.ensure_running()
        parent, child = ctx.Pipe()
        with _sigint_blocked():
            self.proc = ctx.Process(target=_serve, args=(child, warm), daemon=True)
            self.proc.start()
        child.close()
        self.conn = parent

    def run(self, fn: Callable[[Any], Any], job: Any) -> tuple[Any, float]:
        """``(outcome, seconds)`` of ``fn(job)`` in this worker; ``_Died`` when it died."""
        from multiprocessing.connection import wait

        try:
            self.conn.send((fn, job))
        except (EOFError, OSError):
            raise _Died(self._death()) from None
        while True:
            ready = wait([self.conn, self.proc.sentinel], timeout=POLL_S)
            if self.conn in ready:
                try:
                    return self.conn.recv()  # type: ignore[no-any-return]
                except (EOFError, OSError):
                    raise _Died(self._death()) from None
            if ready:  # the process ended without a reply
                raise _Died(self._death())

    def _death(self) -> str:
        self.proc.join(STOP_GRACE_S)
        return death_reason(self.proc.exitcode)

    def end(self) -> None:
        """Ask the worker to end after its job (it does so when the pipe closes too)."""
        with contextlib.suppress(Exception):
            self.conn.send(None)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()


_TIMES = {1: "once", 2: "twice"}


def _lost(cause: str, tries: int) -> JobError:
    """A job whose worker died ``tries`` + 1 times: ``worker process killed by SIGKILL twice
    (retried once in a fresh worker)``."""
    again = (
        f" {_TIMES.get(tries + 1, f'{tries + 1} times')} (retried "
        f"{_TIMES.get(tries, f'{tries} times')} in a fresh worker)"
        if tries
        else ""
    )
    return JobError(f"worker process {cause}{again}", input_error=False)


class ProcessEngine:
    """:class:`specbound.engines.base.Engine` over worker processes on this machine (module
    doc). ``distributed``: jobs run outside this process, finish out of order, and workers can
    die; ``fn`` and the jobs must be picklable."""

    name = "processes"
    distributed = True
    splits_by_block = False  # ``analyze`` computes a model's blocks in the process of its job
    jobs_end_with_map = True  # map ends every worker it started before it returns

    def __init__(self, options: ProcessOptions | None = None) -> None:
        self.options = options if options is not None else ProcessOptions()
        if self.options.workers is None:
            self.workers = usable_cpus()
        else:
            self.workers = self.options.workers
        self._started: list[_Worker] = []

    def _spawned(self, jobs: int) -> int:
        """How many processes ``jobs`` jobs get (this process counts when ``here``)."""
        here = 1 if self.options.here else 0
        return max(0, min(self.workers, jobs) - here)

    def start(self, warm: Callable[[], Any] | None = None) -> None:
        """Spawn the workers now (``workers``, less this process when ``here``), each running
        ``warm()`` first (a picklable callable; its result and errors are ignored), so that
        their start overlaps this process's own; the next ``map`` uses them. ``close`` (or
        ``map``) ends them."""
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        while len(self._started) < self._spawned(self.workers):
            self._started.append(_Worker(ctx, warm))

    def close(self) -> None:
        """End the workers ``start`` spawned that no ``map`` took over, now (not after their
        warm-up)."""
        started, self._started = self._started, []
        stop_processes(w.proc for w in started)
        for w in started:
            w.close()

    def map(
        self,
        fn: Callable[[J], R],
        jobs: Sequence[J],
        *,
        progress: Progress | None = None,
        resources: Callable[[J], Resources] | None = None,
    ) -> Iterator[tuple[J, R | JobError]]:
        """``(job, fn(job) or JobError)`` for every job as it finishes (protocol doc); closing
        the iterator early ends every worker at once. ``resources`` is ignored (every worker
        is alike)."""
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        todo: deque[J] = deque(jobs)
        total = len(todo)
        n = self._spawned(total)
        started, self._started = self._started, []
        spare = started[n:]
        if spare:  # started, but there is less work than workers
            stop_processes(w.proc for w in spare)
        ready = deque(started[:n])
        everyone: list[_Worker] = list(ready)
        lock = threading.Lock()
        stop = threading.Event()
        results: queues.SimpleQueue[Any] = queues.SimpleQueue()
        end = object()  # a feeder's last word
        retries = self.options.retries

        def take() -> Any:
            with lock:
                return todo.popleft() if todo and not stop.is_set() else end

        def fresh() -> _Worker | None:
            with lock:
                if stop.is_set():
                    return None
                w = ready.popleft() if ready else _Worker(ctx)
                if w not in everyone:
                    everyone.append(w)
                return w

        def feed() -> None:
            w: _Worker | None = None
            try:
                while (job := take()) is not end:
                    tries = 0
                    while True:
                        if w is None:
                            try:
                                w = fresh()
                            except Exception:  # no process can start: the job goes back,
                                with lock:  # for another worker or this process (map)
                                    todo.appendleft(job)
                                return
                            if w is None:
                                return
                        try:
                            out, _ = w.run(fn, job)
                        except _Died as died:
                            w.close()
                            w = None
                            if stop.is_set():
                                return
                            if tries < retries:
                                tries += 1
                                continue
                            out = _lost(str(died), tries)
                        except Exception as exc:  # a reply that does not unpickle here
                            stop_processes([w.proc])
                            w.close()
                            w = None
                            out = JobError(f"worker reply: {one_line_reason(exc)}", False)
                        results.put((job, out))
                        break
            finally:
                if w is not None:
                    w.end()
                results.put(end)

        feeders = [threading.Thread(target=feed, daemon=True) for _ in range(n)]
        for t in feeders:
            t.start()
        live, done, clean = n, 0, False
        try:
            while live or todo:
                try:
                    item = results.get_nowait()
                except queues.Empty:
                    item = None
                if item is None:
                    job = take() if self.options.here or not live else end
                    if job is not end:
                        item = (job, _call(fn, job))  # in this process
                    else:
                        item = _next(results)
                        if item is None:
                            continue
                if item is end:
                    live -= 1
                    continue
                done += 1
                if progress is not None:
                    progress(done, total)
                yield item
            clean = True
        finally:
            stop.set()
            with lock:
                workers = list(everyone)
            if clean:
                for w in workers:
                    w.end()
                for w in workers:
                    w.proc.join(STOP_GRACE_S)
            stop_processes(w.proc for w in workers if w.proc.is_alive())
            for t in feeders:
                t.join(STOP_GRACE_S)
            for w in workers:
                w.close()


def _next(results: Any) -> Any:
    """The next item of ``results`` within ``POLL_S``, else None (so that a signal is handled
    between waits)."""
    try:
        return results.get(timeout=POLL_S)
    except queues.Empty:
        return None
