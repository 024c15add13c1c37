"""Shared fixtures: the real MiniLM, its scaled copies, an isolated spectra cache, the random-BERT
writer as a fixture (``tiny_bert``; the function itself is
``tests.support.checkpoints.write_tiny_bert``), the hypothesis profile, and the rule for slow
tests: ``@pytest.mark.slow(reason=...)`` on every test over ``SLOW_S`` seconds on an idle 2-core
machine. Collection refuses a ``slow`` mark without its reason; ``pytest --check-durations``
(by hand, never in CI: timings on shared machines mean nothing) lists the unmarked tests that
took longer and fails the run.

Under pytest-xdist (the README's ``-n 2``) each worker, and every process it starts, runs BLAS
and OpenMP on one thread: two workers with a BLAS thread per core each left threads spinning
for one another, which made single tests 10-30 times slower."""

from __future__ import annotations

import os

#: The thread-count variables a pytest-xdist worker sets to 1 (before numpy or torch loads).
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in THREAD_VARS:
        os.environ.setdefault(_var, "1")

import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from specbound.config import hypothesis_profile
from tests.support.checkpoints import write_tiny_bert

#: A test that takes longer than this (setup, call and teardown, on an idle 2-core machine with
#: the README's ``-n 2``) is marked ``@pytest.mark.slow(reason=...)``.
SLOW_S = 20.0


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--check-durations",
        action="store_true",
        help=f"fail if a test not marked slow took over {SLOW_S:g} s (run by hand on an idle "
        "machine; CI does not time tests)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A ``slow`` mark says why: ``@pytest.mark.slow(reason="...")``."""
    bare = [i.nodeid for i in items for m in i.iter_markers("slow") if not m.kwargs.get("reason")]
    if bare:
        raise pytest.UsageError(
            "@pytest.mark.slow needs reason='why it takes over "
            f"{SLOW_S:g} s': " + ", ".join(bare[:5])
        )


_durations: dict[str, float] = {}
_marked_slow: set[str] = set()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Adds up setup, call and teardown per test (on the controller under pytest-xdist)."""
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration
    if "slow" in report.keywords:
        _marked_slow.add(report.nodeid)


def over_the_limit(
    durations: dict[str, float], marked: set[str], limit: float = SLOW_S
) -> list[tuple[str, float]]:
    """The tests not marked slow that took over ``limit`` seconds, slowest first."""
    late = [(n, d) for n, d in durations.items() if d > limit and n not in marked]
    return sorted(late, key=lambda nd: -nd[1])


_LATE = pytest.StashKey[list[tuple[str, float]]]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if not config.getoption("--check-durations") or hasattr(config, "workerinput"):
        return  # (a pytest-xdist worker: its controller adds up every report)
    late = config.stash[_LATE] = over_the_limit(_durations, _marked_slow)
    if late and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _LATE not in config.stash:
        return
    terminalreporter.section(f"tests over {SLOW_S:g} s not marked slow")
    for name, d in config.stash[_LATE] or [("none", 0.0)]:
        terminalreporter.write_line(f"{d:7.1f} s  {name}" if d else name)


# CI profile: no per-example deadline (2 shared cores make timings meaningless), random (not
# derandomized) examples, so `--hypothesis-seed=S` explores new cases and every test must hold
# for any seed; no example database, so a run does not depend on earlier runs' failures.
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=False,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(hypothesis_profile())


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SPECBOUND_CACHE_DIR", str(tmp_path_factory.mktemp("sbcache")))


def _sigint_state() -> tuple[Any, bool, bool]:
    """(Python's SIGINT handler, SIGINT blocked in this thread, SIGINT ignored by the process
    as the kernel has it: a C library can set SIG_IGN behind Python's back). A child started
    from here inherits the last two (``procjobs.fresh_sigint``)."""
    blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set())
    ignored = False
    try:
        with open("/proc/self/status") as f:  # the main thread's view (pytest runs there)
            for line in f:
                if line.startswith("SigIgn:"):
                    ignored = bool(int(line.split()[1], 16) >> (signal.SIGINT - 1) & 1)
    except OSError:  # no /proc: Python's view only
        pass
    return signal.getsignal(signal.SIGINT), blocked, ignored


@pytest.fixture(autouse=True)
def _sigint_left_as_found():
    """Every test leaves SIGINT's handler, mask and disposition as it found them: the library
    restores what it changes (``engines.processes``, ``engines.ray.runtime``), and a test that
    changes them restores them, so no later test's child inherits SIGINT blocked or ignored."""
    before = _sigint_state()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    yield
    after = _sigint_state()
    if after != before:  # put back (one offender, one error), then fail
        signal.signal(signal.SIGINT, before[0])
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    assert after == before, "this test left SIGINT changed (handler, blocked, ignored)"


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    from specbound.demo import minilm_path

    return minilm_path()


@pytest.fixture(scope="session")
def scaled_minilm(tmp_path_factory, minilm_dir):
    """factor -> directory of MiniLM with every encoder weight matrix multiplied by factor."""
    from tests.support.safetensors_np import load_file, save_file

    sd = load_file(str(minilm_dir / "model.safetensors"))
    out = {}
    for f in (0.1, 0.2, 0.3):
        d = tmp_path_factory.mktemp(f"minilm_x{f}")
        scaled = {
            k: (v * np.float32(f) if k.startswith("encoder.layer.") and v.ndim == 2 else v)
            for k, v in sd.items()
        }
        save_file(scaled, str(d / "model.safetensors"))
        shutil.copy(minilm_dir / "config.json", d / "config.json")
        out[f] = d
    return out


@pytest.fixture
def tiny_bert(tmp_path: Path) -> Callable[..., Path]:
    """``tiny_bert(name="m", **kw)``: ``write_tiny_bert(tmp_path / name, **kw)``."""

    def write(name: str = "m", **kw: Any) -> Path:
        return write_tiny_bert(tmp_path / name, **kw)

    return write
