"""`zoo train` defaults that use the machine (issue 36 item 4): `--ensemble auto` is one model
at a time on the CPU; `--workers N` trains models in parallel spawned processes (one torch
thread each) with the same files as one at a time, resumes, reports a failed model while the
others finish, and on Ctrl-C stops its workers and exits 130 leaving no half-written model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specbound.studies.zoo import train_zoo  # noqa: E402
from tests.support.cli_runner import run_cli_process  # noqa: E402

GRID = {
    "axes": {
        "depth": [1],
        "width": [8],
        "lr": [1e-2],
        "weight_decay": [0.0, 0.1],
        "train_fraction": [0.3],
        "seed": [0, 1],
    },
    "max_steps": 3,
}


def contents(root: Path) -> dict[str, object]:
    """Every file of a zoo, bytes for bytes, but wall_s (a time) out of metrics and zoo.csv."""
    out: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.name in (".specbound-manifest.json", ".specbound-zoo.lock"):
            continue
        rel = str(p.relative_to(root))
        if p.name == "metrics.json":
            m = json.loads(p.read_text())
            m.pop("wall_s")
            out[rel] = m
        elif p.name == "zoo.csv":
            out[rel] = pd.read_csv(p, dtype=str).drop(columns="wall_s").to_csv(index=False)
        else:
            out[rel] = p.read_bytes()
    return out


def test_auto_is_one_at_a_time_on_cpu_and_grouping_on_cuda(tmp_path):
    one = train_zoo("modular-addition", tmp_path / "one", preset="tiny", grid=GRID, ensemble=1)
    auto = train_zoo("modular-addition", tmp_path / "auto", preset="tiny", grid=GRID)
    assert len(auto) == len(one) == 4
    for name in auto["model"]:
        m = json.loads((tmp_path / "auto" / name / "metrics.json").read_text())
        assert m["ensemble"] == 1
    assert contents(tmp_path / "auto") == contents(tmp_path / "one")
    from specbound.studies.zoo.ensemble import auto_mode

    assert auto_mode("cpu") == 1 and auto_mode("cuda") == "auto" and auto_mode("cuda:1") == "auto"


def _grid_file(tmp_path: Path, grid: dict) -> Path:
    import yaml

    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(grid))
    return path


@pytest.mark.slow(
    reason="CLI subprocesses train one zoo with 1 and with 2 worker processes, then resume"
)
def test_workers_give_the_files_of_one_at_a_time_and_resume(tmp_path):
    """--workers 2 (two spawned processes) writes the files of --workers 1 bit for bit (wall_s
    aside); a re-run with a model removed trains that model only."""
    g = _grid_file(tmp_path, GRID)
    for n in ("1", "2"):
        args = ("zoo", "train", "modular-addition", "--preset", "tiny", "--grid", g)
        r = run_cli_process(*args, "--out", tmp_path / f"w{n}", "--workers", n)
        assert r.code == 0, r.err
        assert r.err.count("NOT converged") == 4  # one line per model, as they finish
    assert contents(tmp_path / "w2") == contents(tmp_path / "w1")
    gone = sorted((tmp_path / "w2" / "models").iterdir())[1]
    import shutil

    shutil.rmtree(gone)
    seen: list[tuple[str, bool]] = []
    train_zoo(
        "modular-addition",
        tmp_path / "w2",
        preset="tiny",
        grid=GRID,
        workers=2,
        on_model=lambda i, n, name, m: seen.append((name, m is None)),
    )
    names = sorted(p.name for p in (tmp_path / "w1" / "models").iterdir())
    assert sorted(seen) == [(name, name != gone.name) for name in names]
    assert contents(tmp_path / "w2") == contents(tmp_path / "w1")


def test_default_workers_and_bad_values():
    from specbound.errors import SpecboundError
    from specbound.studies.zoo.workers import default_workers

    cpus = len(os.sched_getaffinity(0))
    assert default_workers("cpu") == cpus and default_workers("cuda:0") == 1
    assert default_workers("cpu", threads=2) == max(1, cpus // 2)
    for bad in (0, -1, 1.5, True, "2", 10**6):
        with pytest.raises(SpecboundError, match=r"^workers must be an integer"):
            train_zoo("modular-addition", "/nonexistent/z", preset="tiny", grid=GRID, workers=bad)


def test_cli_bad_workers_is_one_line_and_writes_nothing(tmp_path):
    base = ("zoo", "train", "modular-addition", "--preset", "tiny", "--out", tmp_path / "z")
    r = run_cli_process(*base, "--workers", "0")
    assert r.code == 2 and "--workers" in r.one_error_line()
    pytest.importorskip("ray")
    r = run_cli_process(*base, "--workers", "2", "--engine", "ray")
    assert r.code == 2 and "--workers 2: for the local engine only" in r.one_error_line()
    assert not (tmp_path / "z").exists()


def _pool(workers: int):
    """The engine of ``zoo train --workers``: this process and ``workers`` - 1 spawned ones."""
    from specbound.engines.processes import ProcessEngine, ProcessOptions

    return ProcessEngine(ProcessOptions(workers=workers, here=True))


def _job(x: int) -> int:
    """A job for the pool test (top level, so a spawned worker can import it)."""
    from specbound.errors import SpecboundError

    if x == 2:
        raise SpecboundError("two is bad input")
    if x == 3:
        raise RuntimeError("three is a bug")
    return 10 * x


def test_pool_reports_failed_jobs_and_runs_the_others():
    from specbound.engines.base import JobError, closing_map

    with closing_map(_pool(2).map(_job, [0, 1, 2, 3, 4])) as outcomes:
        got = dict(outcomes)
    assert {k: v for k, v in got.items() if not isinstance(v, JobError)} == {0: 0, 1: 10, 4: 40}
    assert got[2] == JobError("two is bad input", input_error=True)
    assert got[3] == JobError("RuntimeError: three is a bug", input_error=False)


def _die_in_a_worker(job):
    """Job (x, parent pid): 2 x, but job 1 kills the spawned process that runs it."""
    x, parent = job
    if x == 1 and os.getpid() != parent:
        os._exit(9)
    return 2 * x


def test_a_dead_worker_costs_only_its_job_the_parent_trains_the_rest():
    """A spawned worker killed mid-job breaks the pool: that job is a JobError (or, when this
    process ran it, its value), and every other job still gives its value, here or there."""
    from specbound.engines.base import JobError, closing_map

    jobs = [(x, os.getpid()) for x in range(6)]
    with closing_map(_pool(2).map(_die_in_a_worker, jobs)) as outcomes:
        got = {job[0]: out for job, out in outcomes}
    assert sorted(got) == list(range(6))
    assert {x: v for x, v in got.items() if x != 1} == {x: 2 * x for x in range(6) if x != 1}
    assert got[1] == 2 or (isinstance(got[1], JobError) and not got[1].input_error)


def test_a_failed_model_is_reported_after_the_others_are_written(tmp_path):
    """One job whose model folder is damaged fails in its worker; the other models are written
    and the failure is one line at the end (what a re-run needs)."""
    from specbound.errors import SpecboundError
    from specbound.studies.zoo import model_name, plan
    from specbound.studies.zoo.distributed import run_on_engine

    p = plan("modular-addition", preset="tiny", grid=GRID)
    models = tmp_path / "models"
    models.mkdir()
    points = p.points()
    (models / model_name(points[1])).mkdir()  # empty: "not a finished model"
    written: list[str] = []
    with pytest.raises(SpecboundError, match=r"1 of 4 zoo jobs failed \(first: depth-1.*no "):
        run_on_engine(
            _pool(2),
            p,
            models,
            [[q] for q in points],
            "cpu",
            1,
            lambda c: 1,
            lambda q, m: written.append(model_name(q)),
        )
    assert sorted(written) == sorted(model_name(q) for i, q in enumerate(points) if i != 1)
    for name in written:
        assert (models / name / "model.safetensors").is_file()


def test_a_worker_killed_twice_fails_its_job_naming_the_signal_and_exits_1(tmp_path):
    """Issue 44: SIGKILL of a worker costs its job one retry in a fresh worker, then the job is
    listed as failed naming the signal; the other models are written, and the command exits 1
    with one line (2 is for bad input)."""
    root = Path(__file__).resolve().parents[3]  # the repository: tests.support is importable
    out = tmp_path / "z"
    script = (
        f"import sys; sys.path.insert(0, {str(root)!r}); from tests.support import procjobs; "
        "procjobs.kill_zoo_workers(); "
        "from specbound.cli import main; sys.argv[0] = 'specbound'; main()"
    )
    g = _grid_file(tmp_path, GRID)
    cmd = [sys.executable, "-c", script, "zoo", "train", "modular-addition", "--preset", "tiny",
           "--grid", str(g), "--out", str(out), "--workers", "2"]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("error: "), r.stderr
    assert "zoo jobs failed" in line and "Traceback" not in r.stderr
    assert "worker process killed by SIGKILL twice (retried once in a fresh worker)" in line
    written = pd.read_csv(out / "zoo.csv")["model"]
    failed = int(line.split("error: ")[1].split(" of ")[0])
    assert 1 <= failed < 4 and len(written) == 4 - failed  # this process trained the others
    assert sorted(f"models/{p.name}" for p in (out / "models").iterdir()) == sorted(written)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_stops_the_workers_and_leaves_no_partial_model(tmp_path, sig, code):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) or SIGTERM to the
    CLI while two workers train: exit 130 / 143 with one line, every worker gone, no temp dir
    and no half-written model folder; a re-run resumes."""
    long = {**GRID, "max_steps": 10**6}
    g = _grid_file(tmp_path, long)
    out = tmp_path / "z"
    cmd = [sys.executable, "-m", "specbound", "zoo", "train", "modular-addition", "--preset",
           "tiny", "--grid", str(g), "--out", str(out), "--workers", "2"]  # fmt: skip
    from tests.support.procjobs import fresh_sigint

    proc = subprocess.Popen(
        cmd, stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=fresh_sigint
    )
    try:
        deadline = time.monotonic() + 240
        while len(list((out / "models").glob(".*.tmp"))) < 2:  # both workers are training
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == code
    assert err.strip().splitlines() == ["interrupted" if code == 130 else "terminated"]
    deadline = time.monotonic() + 30  # the workers (and multiprocessing's helper) are gone
    while True:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "a worker outlived its parent"
        time.sleep(0.2)
    assert list((out / "models").iterdir()) == []  # no temp dir, no partial model
