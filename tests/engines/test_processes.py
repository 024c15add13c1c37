"""``engines.processes.run_in_processes``: every job's outcome, a dead worker costs only its
job (retried once in a fresh process, then failed naming the signal), errors are one line, and
closing early leaves no process behind."""

from __future__ import annotations

import os
import signal
import time

import pytest

from specbound.engines.processes import death_reason, run_in_processes
from tests.support.procjobs import (
    MARKS,
    die_on_three,
    die_once,
    fail_on_three,
    pid_of_worker,
    square,
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return True


def _wait_gone(pids, seconds=10.0):
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids):
        assert time.monotonic() < deadline, [p for p in pids if _alive(p)]
        time.sleep(0.05)


def test_every_job_once_with_its_value():
    got = list(run_in_processes(square, [(k, k) for k in range(7)], 2))
    assert sorted(d.key for d in got) == list(range(7))
    assert all(d.ok and d.value == d.key**2 and d.took >= 0 for d in got)


def test_an_error_fails_its_job_alone_in_one_line():
    got = {d.key: d for d in run_in_processes(fail_on_three, [(k, k) for k in range(5)], 2)}
    assert [k for k, d in got.items() if not d.ok] == [3]
    assert got[3].reason == "ValueError: three is not allowed"
    assert all(got[k].value == k for k in (0, 1, 2, 4))


def test_a_killed_worker_is_retried_once_in_a_fresh_process(tmp_path, monkeypatch):
    monkeypatch.setenv(MARKS, str(tmp_path))
    got = {d.key: d for d in run_in_processes(die_once, [(k, k) for k in range(4)], 2)}
    assert all(d.ok and d.value == k for k, d in got.items()) and len(got) == 4
    assert len(list(tmp_path.glob("died-*"))) == 4  # each died once, each was retried


def test_a_job_that_kills_its_worker_twice_fails_naming_the_signal():
    got = {d.key: d for d in run_in_processes(die_on_three, [(k, k) for k in range(6)], 2)}
    assert [k for k, d in got.items() if not d.ok] == [3]
    assert got[3].reason == (
        "worker process killed by SIGKILL twice (retried once in a fresh worker)"
    )
    assert all(got[k].value == k for k in (0, 1, 2, 4, 5))


def test_without_retries_the_first_death_fails_the_job():
    got = {d.key: d for d in run_in_processes(die_on_three, [(3, 3)], 1, retries=0)}
    assert got[3].reason == "worker process killed by SIGKILL"


def test_closing_early_stops_every_worker_at_once():
    """What Ctrl-C does: the exception ends the generator, whose cleanup ends the workers."""
    it = run_in_processes(pid_of_worker, [(k, k) for k in range(50)], 2)
    pids = {next(it).value, next(it).value}
    t0 = time.monotonic()
    it.close()
    assert time.monotonic() - t0 < 2.0 + 1.0  # STOP_GRACE_S at most, plus joins
    _wait_gone(pids)


def test_death_reason_in_words():
    assert death_reason(-signal.SIGKILL) == "killed by SIGKILL"
    assert death_reason(-signal.SIGSEGV) == "killed by SIGSEGV"
    assert death_reason(1) == "exited with code 1"
    assert death_reason(-200) == "killed by signal 200"


@pytest.mark.parametrize("workers", [1, 3])
def test_any_worker_count_gives_every_job(workers):
    got = list(run_in_processes(square, [(k, k) for k in range(4)], workers))
    assert sorted(d.value for d in got) == [0, 1, 4, 9]
