"""Shared fixtures: the real MiniLM, its scaled copies, an isolated spectra cache, the random-BERT
writer as a fixture (``tiny_bert``; the function itself is
``tests.support.checkpoints.write_tiny_bert``) and the hypothesis profile."""

from __future__ import annotations

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
