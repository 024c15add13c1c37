"""The engine protocol: where specbound's work runs (this process, a thread pool, a Ray cluster).

API (what studies, the zoo trainer and the CLI call)::

    from specbound.engines import get_engine, options_for, LocalOptions, RayOptions
    eng = get_engine("ray", RayOptions(address="10.0.0.5:6379"))  # or get_engine("local")
    eng = get_engine(name, options_for(name, address=flag))  # EngineOptionError if unused
    with closing_map(eng.map(fn, jobs, progress=cb, resources=res)) as outcomes:
        for job, out in outcomes:  # as each job finishes
            ...  # out is fn(job), or a JobError (out.reason: one line) when that job failed

    from specbound.analysis import sweep
    from specbound.io import records
    store = records.RecordStore(records.state_dir_for(out)) if eng.distributed else None
    r = sweep.analyze_models(eng, models, names=..., analyze_kwargs={...}, records=store)
    r.results, r.skipped, r.analyses          # aligned Analysis|None, (label, reason), present
    store.clear()                             # after the output is written: ours only
    a = sweep.analyze_on_engine(eng, model, **analyze_kwargs)  # by block if eng.splits_by_block

Engines only execute: they know nothing of checkpoints or analyses. Model sweeps with resume
records (scale, reproduce, correlate) are built on ``map`` once, for every engine, in
:mod:`specbound.analysis.sweep`; the resume records (``io.codec``, never a pickle) live in
:mod:`specbound.io.records` (what they hold of an analysis: :mod:`specbound.analysis.records`);
where a model is split by block: :mod:`specbound.analysis.blocks`; per-job memory from the files:
:mod:`specbound.analysis.sizes`.
Callers ask an engine for its capabilities (``distributed``, ``splits_by_block``,
``jobs_end_with_map``, ``start``, ``close``), never for its type.

A new engine is one module holding a class with the members of the :class:`Engine` protocol
below plus one line in ``engines.ENGINES``; nothing else in specbound changes
(tests/engines/test_base.py runs the studies on a thread pool).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..errors import SpecboundError, one_line_reason

J = TypeVar("J")
R = TypeVar("R")

#: ``progress(done, total)``: called after each finished job (done counts from 1).
Progress = Callable[[int, int], None]
#: ``spectra_fn(ckpt, adapter, device, progress, weights) -> (Spectra, WeightSpectra | None)``:
#: the hook of ``analysis.analyze`` that replaces its local block loop (``analysis.blocks``).
SpectraFn = Callable[..., Any]


@dataclass(frozen=True)
class JobError:
    """One job that did not give a result.

    ``reason``: one line (the job's own ``SpecboundError`` message verbatim, or what happened
    to the worker). ``input_error``: True when ``fn`` raised a ``SpecboundError`` (bad input:
    a study skips the model and goes on); False when the engine lost the job (a worker died
    after its retries, or ``fn`` raised another exception on a remote worker).
    """

    reason: str
    input_error: bool = True


@dataclass(frozen=True)
class Resources:
    """What one job declares to an engine that schedules (ignored by the local engine).

    ``cpus``: CPUs (and BLAS threads) the job may use (None: the engine's default);
    ``memory``: bytes it needs at peak (None: the engine's default, or undeclared);
    ``label``: a short name for logs and task names.
    """

    cpus: int | None = None
    memory: int | None = None
    label: str | None = None


class EngineOptionError(SpecboundError):
    """An option given to an engine that does not use it (``address`` for ``local``), or an
    option of the wrong type. ``engine`` and ``option`` name them, so a CLI can name its flag."""

    def __init__(self, *parts: object, engine: str = "", option: str = "") -> None:
        super().__init__(*parts)
        self.engine = engine
        self.option = option


class JobsLostError(SpecboundError):
    """Jobs that the engine lost (a worker died after its retries, or a bug on a worker) after
    the other jobs' results were kept: not bad input, so the CLI exits 1, not 2 (one line)."""


@runtime_checkable
class Engine(Protocol):
    """The contract every engine implements.

    Attributes
    ----------
    name: the registry name (``"local"``, ``"ray"``).
    options: the engine's own options dataclass (``LocalOptions``, ``RayOptions``, ...).
    distributed: True when jobs run outside this process, finish out of order and workers can
        die (Ray). Studies then keep per-model resume records beside their output and show
        models as they finish; jobs and ``fn`` must be picklable.
    splits_by_block: True when one large model's spectra should be computed as one job per
        transformer block (``analysis.blocks.split_by_block``, each job reopening the
        checkpoint) rather than by ``analyze``'s own block loop in the process running the
        model; the result is identical either way.
    jobs_end_with_map: True when no job of a ``map`` is still running once the iterator is
        exhausted or closed (its workers are this process or processes it waited for), so what
        they left in a folder this process holds locked is safe to remove; False when jobs may
        outlive it elsewhere (Ray tasks on other nodes).

    ``map(fn, jobs, *, progress=None, resources=None)`` -> iterator of ``(job, outcome)``:

    - every job of ``jobs`` is yielded exactly once, as the same object that was passed in,
      as soon as it finishes (completion order; the local engine keeps input order);
    - ``outcome`` is ``fn(job)``, or a :class:`JobError` when ``fn`` raised a
      ``SpecboundError`` (``input_error=True``) or the engine lost the job
      (``input_error=False``: a worker that died after its retries, or, on a remote worker
      only, any other exception; an in-process engine lets a bug propagate with its
      traceback). One failed job never stops the others;
    - ``progress(done, total)`` is called after each finished job;
    - ``resources(job) -> Resources`` declares CPUs and memory per job to engines that
      schedule; the others ignore it;
    - ``fn`` is a top-level callable (or a ``functools.partial`` of one) and jobs are plain
      picklable values, so that any engine can ship them to another process;
    - closing the iterator early (``break``, an exception in the caller, Ctrl-C, SIGTERM)
      cancels the jobs not yet finished; results already yielded stay the caller's;
    - resume is the caller's: it leaves out the jobs whose results it already holds, and
      writes each result as it is yielded (``analysis.sweep`` does this for model sweeps).

    ``start(warm=None)``: start the workers now, each running ``warm()`` first, so that their
    start overlaps this process's own work (a no-op for an engine whose workers start on the
    first ``map``); ``close()``: end the workers ``start`` started that no ``map`` took over
    (a no-op when there are none). Call ``close`` after ``start``, always.
    """

    name: str
    options: Any
    distributed: bool
    splits_by_block: bool
    jobs_end_with_map: bool

    def map(
        self,
        fn: Callable[[J], R],
        jobs: Sequence[J],
        *,
        progress: Progress | None = None,
        resources: Callable[[J], Resources] | None = None,
    ) -> Iterator[tuple[J, R | JobError]]: ...

    def start(self, warm: Callable[[], Any] | None = None) -> None: ...

    def close(self) -> None: ...


@contextlib.contextmanager
def closing_map(
    outcomes: Iterator[tuple[J, R | JobError]],
) -> Iterator[Iterator[tuple[J, R | JobError]]]:
    """``with closing_map(engine.map(...)) as it:``: the iterator, closed on the way out (its
    ``close()``, when it has one: a generator's cancels the jobs not yet finished)."""
    try:
        yield outcomes
    finally:
        close = getattr(outcomes, "close", None)
        if close is not None:
            close()


def call_job(fn: Callable[[J], R], job: J) -> R | JobError:
    """``fn(job)``, with a ``SpecboundError`` turned into a :class:`JobError` (other
    exceptions propagate): what an in-process engine runs for each job."""
    try:
        return fn(job)
    except SpecboundError as exc:
        return JobError(one_line_reason(exc), input_error=True)
