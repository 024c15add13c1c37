"""``engines.processes.ProcessEngine``: the Engine protocol over spawned worker processes.

Every job's outcome once; a dead worker costs only its job (retried once in a fresh process,
then a JobError naming the signal, ``input_error=False``); a job's error is one line and an
OSError keeps its cause and path; workers ignore SIGINT from their first instruction; closing
early, or ``close()`` after ``start()``, leaves no process behind.
"""

from __future__ import annotations

import functools
import os
import signal
import time
from pathlib import Path

import pytest

from specbound.engines.base import Engine, JobError, closing_map
from specbound.engines.processes import ProcessEngine, ProcessOptions, death_reason
from specbound.errors import SpecboundError
from tests.support.procjobs import (
    MARKS,
    bad_input_on_three,
    die_on_three,
    die_once,
    disk_full,
    fail_on_three,
    pid_of_worker,
    sigint_handling,
    square,
)


def _engine(workers: int = 2, **kw: object) -> ProcessEngine:
    return ProcessEngine(ProcessOptions(workers=workers, **kw))  # type: ignore[arg-type]


def _run(fn, jobs, workers=2, **kw):
    with closing_map(_engine(workers, **kw).map(fn, jobs)) as outcomes:
        return list(outcomes)


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


def test_it_is_an_engine():
    e = _engine()
    assert isinstance(e, Engine) and e.distributed and not e.splits_by_block
    assert e.jobs_end_with_map


@pytest.mark.parametrize(("workers", "here"), [(1, False), (3, False), (1, True), (3, True)])
def test_every_job_once_with_its_value(workers, here):
    jobs = list(range(7))
    seen: list[tuple[int, int]] = []
    with closing_map(
        _engine(workers, here=here).map(square, jobs, progress=lambda d, n: seen.append((d, n)))
    ) as outcomes:
        got = list(outcomes)
    assert sorted(got) == [(k, k * k) for k in jobs]
    assert seen == [(d, 7) for d in range(1, 8)]


def test_an_error_fails_its_job_alone_in_one_line():
    got = dict(_run(fail_on_three, list(range(5))))
    assert got[3] == JobError("ValueError: three is not allowed", input_error=False)
    assert {k: v for k, v in got.items() if k != 3} == {0: 0, 1: 1, 2: 2, 4: 4}
    got = dict(_run(bad_input_on_three, list(range(5))))
    assert got[3] == JobError("three is bad input", input_error=True)


def test_a_full_disk_keeps_its_cause_and_path():
    got = dict(_run(disk_full, list(range(5))))
    reason = got[3].reason
    assert "No space left on device" in reason and "/full/disk/3" in reason, reason
    assert "\n" not in reason and not got[3].input_error


def test_a_killed_worker_is_retried_once_in_a_fresh_process(tmp_path, monkeypatch):
    monkeypatch.setenv(MARKS, str(tmp_path))
    got = dict(_run(die_once, list(range(4))))
    assert got == {k: k for k in range(4)}
    assert len(list(tmp_path.glob("died-*"))) == 4  # each died once, each was retried


def test_a_job_that_kills_its_worker_twice_fails_naming_the_signal():
    got = dict(_run(die_on_three, list(range(6))))
    assert got[3] == JobError(
        "worker process killed by SIGKILL twice (retried once in a fresh worker)",
        input_error=False,
    )
    assert {k: v for k, v in got.items() if k != 3} == {k: k for k in (0, 1, 2, 4, 5)}


def test_without_retries_the_first_death_fails_the_job():
    got = dict(_run(die_on_three, [3], workers=1, retries=0))
    assert got[3] == JobError("worker process killed by SIGKILL", input_error=False)


def test_here_runs_a_lone_job_in_this_process_and_spawns_nothing():
    assert _run(pid_of_worker, [0], here=True) == [(0, os.getpid())]
    pids = {pid for _, pid in _run(pid_of_worker, list(range(6)), workers=1)}
    assert os.getpid() not in pids and len(pids) == 1  # one worker, kept for every job


def test_workers_ignore_sigint_from_the_start():
    got = _run(sigint_handling, [0, 1], workers=2)
    assert [out for _, out in got] == [(True, False), (True, False)]


def test_closing_early_stops_every_worker_at_once():
    """What Ctrl-C does: the exception ends the generator, whose cleanup ends the workers."""
    it = _engine().map(pid_of_worker, list(range(50)))
    pids = {next(it)[1], next(it)[1]}
    t0 = time.monotonic()
    it.close()
    assert time.monotonic() - t0 < 2.0 + 1.0  # STOP_GRACE_S at most, plus joins
    _wait_gone(pids)


def test_started_workers_end_at_once_when_unused():
    """start() spawns the workers with a warm-up; close() (no map) or a map with one job
    (nothing for them to do) ends them without waiting for the warm-up."""
    eng = _engine(3, here=True)
    eng.start(functools.partial(time.sleep, 60))
    pids = [w.proc.pid for w in eng._started]
    assert len(pids) == 2
    t0 = time.monotonic()
    eng.close()
    assert time.monotonic() - t0 < 30
    _wait_gone(pids)
    eng.start(functools.partial(time.sleep, 60))
    pids = [w.proc.pid for w in eng._started]
    t0 = time.monotonic()
    assert list(eng.map(square, [4])) == [(4, 16)]
    assert time.monotonic() - t0 < 30
    _wait_gone(pids)


def test_started_workers_take_the_jobs():
    eng = _engine(2)
    eng.start()
    pids = {w.proc.pid for w in eng._started}
    got = {pid for _, pid in eng.map(pid_of_worker, list(range(6)))}
    assert got == pids


def test_death_reason_in_words():
    assert death_reason(-signal.SIGKILL) == "killed by SIGKILL"
    assert death_reason(-signal.SIGSEGV) == "killed by SIGSEGV"
    assert death_reason(1) == "exited with code 1"
    assert death_reason(-200) == "killed by signal 200"


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_options_are_one_line(bad):
    with pytest.raises(SpecboundError, match=r"^workers"):
        ProcessOptions(workers=bad)
    with pytest.raises(SpecboundError, match=r"^retries"):
        ProcessOptions(retries=bad if bad != 0 else -1)


def test_no_process_pool_outside_engines():
    """Issue 44: every parallel job runs through engines/; no other module makes processes."""
    from pathlib import Path

    import specbound

    root = Path(specbound.__file__).parent
    words = (
        "ProcessPoolExecutor(",
        "import multiprocessing",
        "from multiprocessing",
        "get_context(",
        ".Pool(",
        ".Process(",
    )
    found = [
        f"{p.relative_to(root)}: {w}"
        for p in root.rglob("*.py")
        if p.parent.name != "engines" and "engines" not in p.relative_to(root).parts
        for w in words
        if w in p.read_text()
    ]
    assert found == []


def test_one_cpu_count():
    """Issue 44: the usable CPUs are counted by config.usable_cpus alone."""
    from pathlib import Path

    import specbound
    from specbound import config

    root = Path(specbound.__file__).parent
    found = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if p.name != "config.py"
        and any(w in p.read_text() for w in ("sched_getaffinity", "cpu_count("))
    ]
    assert found == []
    assert config.usable_cpus() == len(os.sched_getaffinity(0))


def test_a_worker_that_cannot_start_gives_its_job_back(monkeypatch):
    """A process that cannot be spawned (EAGAIN: the process limit) costs no job: the job goes
    back to the queue and this process runs it (on main, the feeder dropped it silently)."""
    import errno

    from specbound.engines import processes

    def cannot_start(*args, **kwargs):
        raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))

    monkeypatch.setattr(processes, "_Worker", cannot_start)
    for here in (False, True):
        got = _run(pid_of_worker, list(range(5)), workers=3, here=here)
        assert sorted(job for job, _ in got) == list(range(5))
        assert {pid for _, pid in got} == {os.getpid()}


_SPAWN_MASKS = """
import json, signal, sys
import multiprocessing.util as util
seen = []
spawn = util.spawnv_passfds
def recording(path, args, passfds):
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    seen.append(["--multiprocessing-fork" in args, signal.SIGINT in mask])
    return spawn(path, args, passfds)
util.spawnv_passfds = recording
from specbound.engines.processes import ProcessEngine, ProcessOptions
from tests.support.procjobs import square
before = signal.pthread_sigmask(signal.SIG_BLOCK, []), signal.getsignal(signal.SIGINT)
if __name__ == "__main__":
    out = list(ProcessEngine(ProcessOptions(workers=2)).map(square, [1, 2, 3]))
    after = signal.pthread_sigmask(signal.SIG_BLOCK, []), signal.getsignal(signal.SIGINT)
    print(json.dumps({"seen": seen, "same": before == after, "n": len(out)}))
"""


def test_every_worker_is_spawned_with_sigint_blocked_the_first_included(tmp_path):
    """In a fresh interpreter (no resource tracker running yet): the first spawn starts
    multiprocessing's resource tracker, which unblocks SIGINT after starting it; the worker
    spawned next must still get SIGINT blocked (a Ctrl-C during its imports would print its
    traceback), and the map leaves this process's SIGINT mask and handler as it found them."""
    import json
    import subprocess
    import sys

    script = tmp_path / "masks.py"
    script.write_text(_SPAWN_MASKS)
    root = str(Path(__file__).resolve().parents[2])  # the script imports tests.support
    path = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    r = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300,
        cwd=root, env={**os.environ, "PYTHONPATH": path},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    workers = [blocked for is_worker, blocked in got["seen"] if is_worker]
    assert workers == [True, True] and got["n"] == 3
    assert got["same"]
