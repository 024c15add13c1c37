"""The engine protocol: a third engine written here (a thread pool, ~30 lines) runs the studies.

If a new engine is one module, this file proves it: ``ThreadEngine`` implements
``specbound.engines.base.Engine`` and nothing else, and ``scale`` (and ``correlate``) through
it give the local engine's tables exactly.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from specbound.engines import base
from specbound.engines.base import Engine, JobError, Resources, call_job
from specbound.io.files import csv_text
from tests.support.checkpoints import write_tiny_bert


class ThreadEngine:
    """Jobs on a thread pool, yielded as they finish; block spectra through analysis.blocks."""

    name = "threads"
    options = None
    distributed = False
    splits_by_block = True
    jobs_end_with_map = True

    def __init__(self, workers: int = 3) -> None:
        self.workers = workers
        self.threads: set[str] = set()

    def _call(self, fn: Callable[[Any], Any], job: Any) -> Any:
        self.threads.add(threading.current_thread().name)
        return call_job(fn, job)

    def map(
        self,
        fn: Callable[[Any], Any],
        jobs: Sequence[Any],
        *,
        progress: Callable[[int, int], None] | None = None,
        resources: Callable[[Any], Resources] | None = None,
    ) -> Iterator[tuple[Any, Any]]:
        jobs = list(jobs)
        with ThreadPoolExecutor(self.workers, thread_name_prefix="eng") as pool:
            pending = {pool.submit(self._call, fn, j): j for j in reversed(jobs)}
            done = 0
            try:
                while pending:
                    ready, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for f in ready:
                        done += 1
                        if progress is not None:
                            progress(done, len(jobs))
                        yield pending.pop(f), f.result()
            finally:
                for f in pending:
                    f.cancel()

    def start(self, warm: Callable[[], Any] | None = None) -> None:
        pass

    def close(self) -> None:
        pass


SHAPES = [(2, 8, 0), (3, 8, 1), (2, 16, 2)]  # (L, N, seed)


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    d = tmp_path_factory.mktemp("zoo")
    return [
        str(write_tiny_bert(d / f"m{i}", layers=L, hidden=N, heads=2, ffn=2 * N, seed=s))
        for i, (L, N, s) in enumerate(SHAPES)
    ]


def _csv(df: pd.DataFrame) -> str:
    return csv_text(df)


def test_thread_engine_implements_the_protocol() -> None:
    from specbound.engines import get_engine

    assert isinstance(ThreadEngine(), Engine)
    for name in ("local", "ray"):
        if name == "ray":
            pytest.importorskip("ray")  # the ray engine refuses to be made without Ray
        assert isinstance(get_engine(name), Engine)


def test_map_contract_each_job_once_errors_per_job() -> None:
    from specbound.engines import get_engine

    for eng in (get_engine("local"), ThreadEngine()):
        seen: list[tuple[int, int]] = []
        out = dict(
            eng.map(_square_or_fail, [1, 2, 3, 4], progress=lambda d, n, s=seen: s.append((d, n)))
        )
        assert out[1] == 1 and out[2] == 4 and out[4] == 16
        assert isinstance(out[3], JobError) and out[3].input_error
        assert out[3].reason == "three is bad input"
        assert sorted(seen) == [(1, 4), (2, 4), (3, 4), (4, 4)]


def _square_or_fail(x: int) -> int:
    if x == 3:
        raise base.SpecboundError("three   is bad\ninput")
    return x * x


def test_scale_through_a_thread_engine_equals_local(zoo: list[str], tmp_path: Path) -> None:
    from specbound.studies.scale import scale

    bad = tmp_path / "broken"
    bad.mkdir()
    (bad / "config.json").write_text("{not json")
    models = [*zoo, str(bad)]
    local = scale(models, cache=False)
    eng = ThreadEngine()
    done: list[str] = []
    threaded = scale(models, cache=False, engine=eng, on_model=lambda i, n, m: done.append(m))
    assert len(eng.threads) >= 1 and all(t.startswith("eng") for t in eng.threads)
    assert sorted(done) == sorted(models)
    assert _csv(threaded.models) == _csv(local.models)  # models.csv, byte for byte
    assert _csv(threaded.growth) == _csv(local.growth)
    assert threaded.skipped == local.skipped and [m for m, _ in local.skipped] == [str(bad)]


def test_scale_by_name_with_local_options(zoo: list[str]) -> None:
    from specbound.engines import LocalOptions, get_engine
    from specbound.studies.scale import scale

    a = scale(zoo, cache=False, engine="local", engine_options=LocalOptions())
    b = scale(zoo, cache=False, engine=get_engine("local"))
    assert _csv(a.models) == _csv(b.models)


def test_one_model_by_block_through_a_thread_engine(zoo: list[str]) -> None:
    import numpy as np

    from specbound.analysis import analyze
    from specbound.analysis.sweep import analyze_on_engine

    seen: list[tuple[int, int]] = []
    a = analyze_on_engine(
        ThreadEngine(), zoo[1], cache=False, progress=lambda d, n: seen.append((d, n))
    )
    b = analyze(zoo[1], cache=False)
    assert a.summary() == b.summary() and a.measures == b.measures
    np.testing.assert_array_equal(a.spectra.sv_values, b.spectra.sv_values)
    assert sorted(seen)[-1] == (3, 3)


def test_engine_options_are_typed() -> None:
    from specbound.engines import EngineOptionError, LocalOptions, get_engine, options_for
    from specbound.errors import SpecboundError

    with pytest.raises(EngineOptionError, match="address is unused with engine 'local'") as e:
        options_for("local", address="10.0.0.5:6379")
    assert e.value.option == "address" and e.value.engine == "local"
    assert options_for("local", address=None) == LocalOptions()
    with pytest.raises(EngineOptionError, match="takes LocalOptions"):
        get_engine("local", options_for("ray", threads=2))
    with pytest.raises(SpecboundError, match="unknown engine 'spark'; available: local, ray"):
        get_engine("spark")
    from specbound.engines import RayOptions

    assert RayOptions(threads=2).threads == 2
    with pytest.raises(SpecboundError, match="threads"):
        RayOptions(threads=0)


def test_correlate_through_a_thread_engine_equals_local(zoo: list[str], tmp_path: Path) -> None:
    from specbound.studies.correlate import correlate

    rows = ["model,depth,width,train_acc,test_acc,converged"]
    for i, (m, (L, N, _)) in enumerate(zip(zoo, SHAPES, strict=True)):
        rows.append(f"{m},{L},{N},1.0,{0.5 + 0.1 * i},true")
    manifest = tmp_path / "zoo.csv"
    manifest.write_text("\n".join(rows) + "\n")
    kw: dict[str, Any] = {"bootstrap": 200, "seed": 1, "cache": False}
    eng = ThreadEngine()
    a = correlate(manifest, engine=eng, **kw)
    assert eng.threads  # the models were analyzed on the engine's threads
    b = correlate(manifest, **kw)
    assert len(a.models) == len(zoo)
    pd.testing.assert_frame_equal(a.models, b.models, check_exact=True)
    pd.testing.assert_frame_equal(a.correlation, b.correlation, check_exact=True)


def test_local_engine_lets_a_bug_propagate() -> None:
    from specbound.engines import get_engine

    with (
        pytest.raises(ZeroDivisionError),
        contextlib.closing(get_engine("local").map(_divide, [1, 0])) as it,
    ):
        list(it)


def _divide(x: int) -> float:
    return 1 / x
