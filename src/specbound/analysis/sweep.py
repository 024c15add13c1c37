"""Model sweeps on any engine: one ``analyze`` job per model, resumable, built on ``Engine.map``.

    result = analyze_models(get_engine(name), models, names=..., analyze_kwargs={...},
                            records=RecordStore(state_dir))   # io.records: resume
    result.results   # Analysis or None per model, aligned with ``models``
    result.skipped   # (label, reason) of each model that failed, in input order
    result.analyses  # the analyses that exist, in input order

Resume: with ``records`` (an ``io.records.RecordStore``), a model whose record is there and
verifies (``analysis.records.load``) is not analyzed again (``on_resume(label)``); each result is
written there by this process as it arrives, so a killed run loses only the models in flight.

One model with the engine's own spectra (``--engine ray`` splits it by block):
``analyze_on_engine``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..engines.base import Engine, JobError, Resources, closing_map
from ..errors import SpecboundError
from . import analyze
from .blocks import split_by_block
from .records import load, store, sweep_key
from .sizes import task_memory

if TYPE_CHECKING:
    from ..io.records import RecordStore
    from . import Analysis

#: ``analyze`` options that are callables of this process: never shipped to a job.
_LOCAL_ONLY = ("progress", "spectra_fn")


@dataclass(frozen=True)
class ModelJob:
    """One sweep job: ``analyze(source, name=name, **kwargs)`` (picklable when ``source`` is a
    path or hub id)."""

    source: Any
    name: str | None
    kwargs: Mapping[str, Any]
    label: str
    index: int


@dataclass
class SweepResult:
    """What ``analyze_models`` returns (module doc)."""

    results: list[Analysis | None]
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def analyses(self) -> list[Analysis]:
        return [a for a in self.results if a is not None]


def run_model(model: Any, name: str | None, analyze_kwargs: Mapping[str, Any]) -> Analysis:
    """What one sweep job runs: ``analysis.analyze(model, name=name, **analyze_kwargs)``."""
    return analyze(model, name=name, **analyze_kwargs)


def _run_job(worker: Callable[..., Any], job: ModelJob) -> Any:
    return worker(job.source, job.name, job.kwargs)


def _resources(job: ModelJob) -> Resources:
    return Resources(memory=task_memory(job.source), label=job.label)


def _check_models(
    engine: Engine,
    models: Sequence[Any],
    names: Sequence[str | None] | None,
    per_model_kwargs: Sequence[Mapping[str, Any]] | None,
) -> None:
    """One name and one set of extra options per model; paths or hub ids for an engine whose
    workers read the checkpoints themselves."""
    n = len(models)
    if names is not None and len(names) != n:
        raise SpecboundError(f"names has {len(names)} entries for {n} models; give one per model")
    if per_model_kwargs is not None and len(per_model_kwargs) != n:
        raise SpecboundError(
            f"per_model_kwargs has {len(per_model_kwargs)} entries for {n} models; give one each"
        )
    if engine.distributed:
        for m in models:
            if not isinstance(m, (str, os.PathLike)):
                raise SpecboundError(
                    f"the {engine.name} engine reads each checkpoint in its worker: pass "
                    f"directories or hub ids, not a {type(m).__name__}"
                )


def _jobs(
    models: Sequence[Any],
    names: Sequence[str | None] | None,
    kw: Mapping[str, Any],
    per_model_kwargs: Sequence[Mapping[str, Any]] | None,
) -> list[ModelJob]:
    """One ``ModelJob`` per model, in input order."""
    jobs = []
    for i, m in enumerate(models):
        name = names[i] if names is not None else None
        extra = per_model_kwargs[i] if per_model_kwargs is not None else {}
        source = os.fspath(m) if isinstance(m, os.PathLike) else m
        jobs.append(ModelJob(source, name, {**kw, **extra}, str(name or m), i))
    return jobs


@dataclass
class _Sweep:
    """The state of one ``analyze_models`` call: results by model index, the failures, the
    record store (None: no resume) and the callbacks that report progress."""

    n: int
    store: RecordStore | None
    on_model: Callable[[int, int, str], None] | None
    on_skip: Callable[[str, str], None] | None
    on_resume: Callable[[str], None] | None
    results: list[Analysis | None] = field(init=False)
    keys: list[str] = field(init=False)
    failures: dict[int, str] = field(default_factory=dict)
    done: int = 0

    def __post_init__(self) -> None:
        self.results = [None] * self.n
        self.keys = [""] * self.n

    def _finished(self, job: ModelJob) -> None:
        self.done += 1
        if self.on_model is not None:
            self.on_model(self.done, self.n, job.label)

    def resumed(self, job: ModelJob) -> bool:
        """Whether ``job``'s record is in the store and verifies (then it is a result)."""
        if self.store is None:
            return False
        self.keys[job.index] = sweep_key(job.source, job.name, job.kwargs)
        rec = load(self.store, self.keys[job.index], job)
        if rec is None:
            return False
        self.results[job.index] = rec
        if self.on_resume is not None:
            self.on_resume(job.label)
        self._finished(job)
        return True

    def outcome(self, job: ModelJob, out: Any) -> None:
        """A job's outcome from the engine: a result (stored) or a ``JobError`` (skipped)."""
        if isinstance(out, JobError):
            self.failures[job.index] = out.reason
            if self.on_skip is not None:
                self.on_skip(job.label, out.reason)
        else:
            self.results[job.index] = out
            if self.store is not None:
                store(self.store, self.keys[job.index], job.source, out)
        self._finished(job)


def analyze_models(
    engine: Engine,
    models: Sequence[Any],
    *,
    names: Sequence[str | None] | None = None,
    analyze_kwargs: Mapping[str, Any] | None = None,
    per_model_kwargs: Sequence[Mapping[str, Any]] | None = None,
    on_model: Callable[[int, int, str], None] | None = None,
    on_skip: Callable[[str, str], None] | None = None,
    on_resume: Callable[[str], None] | None = None,
    records: RecordStore | None = None,
    worker_fn: Callable[..., Any] | None = None,
) -> SweepResult:
    """``analyze`` over ``models`` on ``engine`` (module doc).

    ``on_model(done, n, label)`` as each model finishes or is resumed; ``on_skip(label,
    reason)`` for each model that failed (a ``SpecboundError`` in its job: bad input; or a
    job the engine lost). ``per_model_kwargs[i]`` adds to ``analyze_kwargs`` for model i (e.g.
    its ``init``). ``records``: the resume records (module doc; None: none). ``worker_fn(model,
    name, kwargs) -> Analysis`` replaces ``run_model`` in the jobs (tests, custom pipelines;
    picklable for a distributed engine).
    """
    kw = {k: v for k, v in (analyze_kwargs or {}).items() if k not in _LOCAL_ONLY}
    _check_models(engine, models, names, per_model_kwargs)
    jobs = _jobs(models, names, kw, per_model_kwargs)
    sweep = _Sweep(len(models), records, on_model, on_skip, on_resume)
    todo = [job for job in jobs if not sweep.resumed(job)]
    fn = functools.partial(_run_job, worker_fn or run_model)
    with closing_map(engine.map(fn, todo, resources=_resources)) as outcomes:
        for job, out in outcomes:
            sweep.outcome(job, out)
    skipped = [(jobs[i].label, sweep.failures[i]) for i in sorted(sweep.failures)]
    return SweepResult(sweep.results, skipped)


def analyze_on_engine(engine: Engine, model: Any, **analyze_kwargs: Any) -> Analysis:
    """``analysis.analyze(model, **analyze_kwargs)`` with the spectra computed the engine's way:
    one engine job per transformer block when ``engine.splits_by_block``
    (``blocks.split_by_block``), else ``analyze``'s own block loop; the same numbers either way."""
    if engine.splits_by_block:
        fn = split_by_block(engine, analyze_kwargs.get("mapping"), analyze_kwargs.get("prefix"))
        analyze_kwargs = {**analyze_kwargs, "spectra_fn": fn}
    return analyze(model, **analyze_kwargs)
