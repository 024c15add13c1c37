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

        total = len(jobs)
        n = self._spawned(total)
        started, self._started = self._started, []
        spare = started[n:]
        if spare:  # started, but there is less work than workers
            stop_processes(w.proc for w in spare)
        run = _MapRun(multiprocessing.get_context("spawn"), fn, jobs, started[:n])
        retries = self.options.retries
        feeders = [threading.Thread(target=_Feeder(run, retries), daemon=True) for _ in range(n)]
        for t in feeders:
            t.start()
        live, done, clean = n, 0, False
        try:
            while live or run.todo:
                item = run.next_item(here=self.options.here or not live)
                if item is None:
                    continue
                if item is _END:
                    live -= 1
                    continue
                done += 1
                if progress is not None:
                    progress(done, total)
                yield item
            clean = True
        finally:
            run.shutdown(clean, feeders)


#: A feeder's last word on ``_MapRun.results``; also ``_MapRun.take``'s "no job left for you".
_END = object()


class _MapRun:
    """The state one ``ProcessEngine.map`` shares between its feeder threads and the caller:
    the jobs not yet taken, the started workers not yet taken (``ready``), every worker it
    used, the results queue, and the ``stop`` event, all under one lock."""

    def __init__(
        self, ctx: Any, fn: Callable[[Any], Any], jobs: Sequence[Any], ready: list[_Worker]
    ) -> None:
        self.ctx = ctx
        self.fn = fn
        self.todo: deque[Any] = deque(jobs)
        self.ready = deque(ready)
        self.everyone: list[_Worker] = list(ready)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.results: queues.SimpleQueue[Any] = queues.SimpleQueue()

    def take(self) -> Any:
        """The next job, or ``_END`` when none is left or the map stops."""
        with self.lock:
            return self.todo.popleft() if self.todo and not self.stop.is_set() else _END

    def give_back(self, job: Any) -> None:
        """``job`` goes back to the front, for another worker or this process."""
        with self.lock:
            self.todo.appendleft(job)

    def fresh(self) -> _Worker | None:
        """A worker for a feeder: a started one, else a new one; None once the map stops."""
        with self.lock:
            if self.stop.is_set():
                return None
            w = self.ready.popleft() if self.ready else _Worker(self.ctx)
            if w not in self.everyone:
                self.everyone.append(w)
            return w

    def next_item(self, here: bool) -> Any:
        """A finished ``(job, outcome)`` or a feeder's ``_END``; with ``here`` and nothing
        waiting, the next job run in this process; None when nothing came within ``POLL_S``."""
        try:
            return self.results.get_nowait()
        except queues.Empty:
            pass
        job = self.take() if here else _END
        if job is not _END:
            return (job, _call(self.fn, job))  # in this process
        return _next(self.results)

    def shutdown(self, clean: bool, feeders: list[threading.Thread]) -> None:
        """End every worker (asked to when ``clean``, else at once) and join the feeders."""
        self.stop.set()
        with self.lock:
            workers = list(self.everyone)
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


#: ``_Feeder.run_job``'s word for "this feeder stops" (no worker, or the map stops).
_QUIT = object()


class _Feeder:
    """One feeder thread of a ``_MapRun``: it hands its worker the next job the moment the last
    one returns, retrying a job ``retries`` times in a fresh worker when its worker dies."""

    def __init__(self, run: _MapRun, retries: int) -> None:
        self.run = run
        self.retries = retries
        self.worker: _Worker | None = None

    def __call__(self) -> None:
        run = self.run
        try:
            while (job := run.take()) is not _END:
                out = self.run_job(job)
                if out is _QUIT:
                    return
                run.results.put((job, out))
        finally:
            if self.worker is not None:
                self.worker.end()
            run.results.put(_END)

    def _hire(self, job: Any) -> _Worker | None:
        """This feeder's new worker (a started or new one), None once the map stops; when no
        process can start, None and ``job`` goes back."""
        try:
            self.worker = self.run.fresh()
        except Exception:  # no process can start: the job goes back,
            self.run.give_back(job)  # for another worker or this process (map)
            return None
        return self.worker

    def _drop(self) -> None:
        """Close this feeder's worker's pipe; its next job gets a fresh worker."""
        if self.worker is not None:
            self.worker.close()
        self.worker = None

    def run_job(self, job: Any) -> Any:
        """The outcome of ``job`` in this feeder's worker, or ``_QUIT``."""
        tries = 0
        while True:
            w = self.worker if self.worker is not None else self._hire(job)
            if w is None:
                return _QUIT
            try:
                out, _ = w.run(self.run.fn, job)
            except _Died as died:
                self._drop()
                if self.run.stop.is_set():
                    return _QUIT
                if tries < self.retries:
                    tries += 1
                    continue
                return _lost(str(died), tries)
            except Exception as exc:  # a reply that does not unpickle here
                stop_processes([w.proc])
                self._drop()
                return JobError(f"worker reply: {one_line_reason(exc)}", False)
            return out


def _next(results: Any) -> Any:
    """The next item of ``results`` within ``POLL_S``, else None (so that a signal is handled
    between waits)."""
    try:
        return results.get(timeout=POLL_S)
    except queues.Empty:
        return None
