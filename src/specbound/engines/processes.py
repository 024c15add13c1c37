"""Worker processes on this machine that outlive a dead worker and stop at once on Ctrl-C.

:func:`run_in_processes` runs ``fn(job)`` for each job in at most ``workers`` processes of the
``spawn`` context (torch is not fork-safe once its thread pools exist), one job at a time per
worker, each talking to the parent over its own pipe. Unlike a
``concurrent.futures.ProcessPoolExecutor``, whose pool breaks for every job when one worker
dies, a worker that dies (SIGKILL, the out-of-memory killer, a crash in native code) costs only
the job it was running: that job is retried once in a fresh worker process, and a second death
is reported as that job's failure, naming the signal. The workers ignore SIGINT from their
first instruction: on Ctrl-C (or any exception, or the caller closing the iterator) the parent
terminates them (SIGTERM, then SIGKILL after ``STOP_GRACE_S``) before the exception goes on.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

#: Seconds the parent waits for its workers to end after SIGTERM before it SIGKILLs them.
STOP_GRACE_S = 1.0


def usable_cpus() -> int:
    """CPUs this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` elsewhere)."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def ignore_sigint() -> None:
    """A worker's first act: Ctrl-C is the parent's to handle (it stops the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
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


def death_reason(exitcode: int | None) -> str:
    """How a worker process ended, in words: ``killed by SIGKILL`` or ``exited with code 1``."""
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


@dataclass(frozen=True)
class Done:
    """One job's outcome: ``value`` when ``ok``, else ``reason`` (one line); ``took`` is the
    seconds the job ran in its worker (0 when the worker died)."""

    key: Hashable
    ok: bool
    value: Any = None
    reason: str = ""
    took: float = 0.0


def _serve(conn: Any, fn: Callable[[Any], Any]) -> None:
    """A worker's loop: receive ``(key, job)``, send ``(key, ok, value or reason, seconds)``,
    until ``None`` or the pipe closes."""
    ignore_sigint()
    from ..errors import one_line_reason

    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        key, job = msg
        t0 = time.perf_counter()
        try:
            reply = (key, True, fn(job), time.perf_counter() - t0)
        except Exception as exc:
            reply = (key, False, one_line_reason(exc), time.perf_counter() - t0)
        conn.send(reply)


_TIMES = {1: "once", 2: "twice"}


class _Worker:
    def __init__(self, ctx: Any, fn: Callable[[Any], Any]) -> None:
        parent, child = ctx.Pipe()
        with sigint_ignored():
            self.proc = ctx.Process(target=_serve, args=(child, fn), daemon=True)
            self.proc.start()
        child.close()
        self.conn = parent
        self.job: tuple[Hashable, Any, int] | None = None

    def give(self, key: Hashable, job: Any, tries: int) -> None:
        self.job = (key, job, tries)
        self.conn.send((key, job))


def run_in_processes(
    fn: Callable[[Any], Any],
    jobs: Sequence[tuple[Hashable, Any]],
    workers: int,
    *,
    retries: int = 1,
) -> Iterator[Done]:
    """``fn(job)`` for each ``(key, job)`` in at most ``workers`` spawned processes, as they
    finish. ``fn`` and the jobs must be picklable (``fn`` a module-level function). An exception
    in ``fn`` is that job's failure (its one-line reason); a worker that dies has its job
    retried ``retries`` times in a fresh worker, then the job fails with the cause of death
    (module doc). A script calling this needs the ``if __name__ == "__main__":`` guard of
    ``multiprocessing``."""
    import multiprocessing
    from multiprocessing.connection import wait

    ctx = multiprocessing.get_context("spawn")
    queue: deque[tuple[Hashable, Any, int]] = deque((k, j, 0) for k, j in jobs)
    n = max(1, min(int(workers), len(queue)))
    idle: list[_Worker] = []
    busy: dict[Any, _Worker] = {}  # conn -> worker
    everyone: list[_Worker] = []
    clean = False
    try:
        while queue or busy:
            while queue and len(busy) < n:
                item = queue.popleft()
                w = idle.pop() if idle else None
                try:
                    if w is None:
                        raise BrokenPipeError
                    w.give(*item)
                except OSError:  # none idle, or the idle one died meanwhile
                    if w is not None:
                        everyone.remove(w)
                        stop_processes([w.proc])
                    w = _Worker(ctx, fn)
                    everyone.append(w)
                    w.give(*item)
                busy[w.conn] = w
            ready = wait([*busy, *(w.proc.sentinel for w in busy.values())])
            for conn, w in list(busy.items()):
                if conn not in ready and w.proc.sentinel not in ready:
                    continue
                assert w.job is not None
                key, job, tries = w.job
                reply = None
                with contextlib.suppress(EOFError, OSError):
                    if conn.poll():
                        reply = conn.recv()
                del busy[conn]
                w.job = None
                if reply is not None:
                    idle.append(w)
                    _, ok, value, took = reply
                    yield (
                        Done(key, True, value, took=took)
                        if ok
                        else Done(key, False, None, value, took)
                    )
                    continue
                w.proc.join(STOP_GRACE_S)
                cause = death_reason(w.proc.exitcode)
                everyone.remove(w)
                with contextlib.suppress(OSError):
                    conn.close()
                if tries < retries:
                    queue.appendleft((key, job, tries + 1))
                    continue
                again = (
                    f" {_TIMES.get(tries + 1, f'{tries + 1} times')} (retried "
                    f"{_TIMES.get(tries, f'{tries} times')} in a fresh worker)"
                    if tries
                    else ""
                )
                yield Done(key, False, None, f"worker process {cause}{again}")
        clean = True
    finally:
        if clean:
            for w in everyone:
                with contextlib.suppress(OSError, ValueError):
                    w.conn.send(None)
            for w in everyone:
                w.proc.join(STOP_GRACE_S)
        stop_processes([w.proc for w in everyone if w.proc.is_alive()])
        for w in everyone:
            with contextlib.suppress(OSError):
                w.conn.close()
