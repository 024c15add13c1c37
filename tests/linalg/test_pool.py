"""The explicit parallel setting of ``specbound.linalg.pool`` (no os.environ writes)."""

from __future__ import annotations

import contextlib
import os
import threading

import numpy as np
import pytest

from specbound.errors import SpecboundError
from specbound.linalg import pool
from specbound.linalg.pool import current_parallelism, parallelism, run_jobs


def _thread_ids(n: int = 4) -> set[int]:
    barrier = threading.Barrier(2, timeout=30)

    def job() -> int:
        # two jobs meet only when they run at the same time, on two threads
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait()
        return threading.get_ident()

    return set(run_jobs([job for _ in range(n)]))


def test_blas_mode_runs_in_the_calling_thread(monkeypatch):
    monkeypatch.delenv("SPECBOUND_PARALLEL", raising=False)
    monkeypatch.setattr(pool, "usable_cpus", lambda: 2)
    with parallelism("blas") as p:
        assert p.mode == "blas" and current_parallelism().mode == "blas"
        assert run_jobs([threading.get_ident, threading.get_ident]) == [threading.get_ident()] * 2
    assert current_parallelism().mode == "pool"  # restored


def test_pool_mode_uses_worker_threads(monkeypatch):
    monkeypatch.setattr(pool, "usable_cpus", lambda: 2)
    with parallelism("pool", workers=2):
        ids = _thread_ids()
    assert threading.get_ident() not in ids and len(ids) == 2


def test_one_worker_runs_in_turn(monkeypatch):
    monkeypatch.setattr(pool, "usable_cpus", lambda: 4)
    with parallelism("pool", workers=1):
        assert run_jobs([threading.get_ident] * 3) == [threading.get_ident()] * 3


def test_environment_variable_still_works_and_a_scope_wins(monkeypatch):
    monkeypatch.setenv("SPECBOUND_PARALLEL", "blas")
    assert current_parallelism().mode == "blas"
    with parallelism("pool"):
        assert current_parallelism().mode == "pool"
    monkeypatch.setenv("SPECBOUND_PARALLEL", "nonsense")
    assert current_parallelism().mode == "pool"


def test_scopes_nest_and_stay_in_their_thread(monkeypatch):
    monkeypatch.delenv("SPECBOUND_PARALLEL", raising=False)
    seen = []
    with parallelism("blas"):
        with parallelism(workers=3):
            assert current_parallelism() == pool.Parallelism("blas", 3)
            t = threading.Thread(target=lambda: seen.append(current_parallelism().mode))
            t.start()
            t.join()
        assert current_parallelism() == pool.Parallelism("blas", None)
    assert seen == ["pool"]  # another thread does not inherit this thread's scope
    assert "SPECBOUND_PARALLEL" not in os.environ


@pytest.mark.parametrize(("kw", "word"), [({"mode": "gpu"}, "mode"), ({"workers": 0}, "workers")])
def test_bad_settings_name_the_parameter(kw, word):
    with pytest.raises(SpecboundError, match=word), parallelism(**kw):
        pass


def test_results_keep_their_order(monkeypatch):
    monkeypatch.setattr(pool, "usable_cpus", lambda: 2)
    mats = [np.random.default_rng(i).standard_normal((30, 20)) for i in range(6)]
    with parallelism("pool"):
        got = run_jobs([lambda m=m: np.linalg.svd(m, compute_uv=False) for m in mats])
    for g, m in zip(got, mats, strict=True):
        np.testing.assert_array_equal(g, np.linalg.svd(m, compute_uv=False))
