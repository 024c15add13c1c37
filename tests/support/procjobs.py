"""Job functions that spawned worker processes import by name (``engines.processes`` tests):
each misbehaves as its name says, steered by environment variables that the workers inherit."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

#: A model directory name whose data-measure job kills its worker (``killing_data_job``).
KILL = "SPECBOUND_TEST_KILL"
#: "once": only the first attempt dies (a marker file in ``MARKS`` remembers it); "always".
KILL_MODE = "SPECBOUND_TEST_KILL_MODE"
#: A folder for marker files.
MARKS = "SPECBOUND_TEST_MARKS"


def square(x: int) -> int:
    return x * x


def fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("three is\nnot allowed")
    return x


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)  # never reached


def die_once(x: int) -> int:
    """Kill this worker the first time job ``x`` runs (per ``MARKS`` folder), then ``x``."""
    mark = Path(os.environ[MARKS]) / f"died-{x}"
    if not mark.exists():
        mark.write_text(str(os.getpid()))
        _die()
    return x


def die_on_three(x: int) -> int:
    if x == 3:
        _die()
    return x


def pid_of_worker(_: int) -> int:
    return os.getpid()


def killing_data_job(job):  # the signature of studies.correlate.data._worker_job
    """``_worker_job``, except that the model named by ``KILL`` kills its worker (the first
    time with ``KILL_MODE`` "once", every time with "always")."""
    from specbound.studies.correlate import data

    d = Path(job[0])
    if d.name == os.environ.get(KILL):
        mark = Path(os.environ[MARKS]) / f"died-{d.name}"
        if os.environ.get(KILL_MODE) == "always" or not mark.exists():
            mark.write_text(str(os.getpid()))
            _die()
    return data._worker_job(job)


def sleeping_data_job(job):
    """Mark that this worker started a job (a file named by its pid in ``MARKS``), then sleep:
    a data-measure job that is surely running when the test interrupts it."""
    (Path(os.environ[MARKS]) / f"busy-{os.getpid()}").write_text(str(job[0]))
    time.sleep(600)


def disk_full(x: int) -> int:
    """Job 3 fails as a write to a full disk does (errno ENOSPC, with the path)."""
    import errno

    if x == 3:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), f"/full/disk/{x}")
    return x


def bad_input_on_three(x: int) -> int:
    from specbound.errors import SpecboundError

    if x == 3:
        raise SpecboundError("three is bad input")
    return x


def sigint_handling(_: int) -> tuple[bool, bool]:
    """(SIGINT ignored, SIGINT blocked) in the process running the job."""
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set())
    return ignored, blocked


_RUN_JOB = None  # studies.zoo.distributed.run_job, as it was before kill_zoo_workers()


def kill_zoo_workers() -> None:
    """Make ``studies.zoo.distributed.run_job`` kill every spawned worker that runs it (this
    process, the CLI's own, trains its jobs as usual): call it in the parent, before the run."""
    global _RUN_JOB
    from specbound.studies.zoo import distributed

    _RUN_JOB = distributed.run_job
    distributed.run_job = killing_zoo_job


def killing_zoo_job(job):  # the signature of studies.zoo.distributed.run_job
    """``run_job``, except that in a spawned worker process it kills its worker, every time."""
    import multiprocessing

    if multiprocessing.parent_process() is not None:
        _die()
    assert _RUN_JOB is not None
    return _RUN_JOB(job)


def fresh_sigint() -> None:
    """``preexec_fn`` for a CLI child that a test interrupts: SIGINT unblocked and at its default,
    as an interactive shell starts a command. pytest itself may run with SIGINT ignored: a
    non-interactive shell starts a background job (``.ci/run > log &``) with SIGINT and SIGQUIT
    ignored (POSIX), and an ignored signal stays ignored across exec, so every child would
    inherit it (the three Ctrl-C tests failed so in CI runs, and passed in the foreground).
    Every test leaves SIGINT as it found it (``conftest._sigint_left_as_found``)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
