"""``zoo train --engine ray``: one engine job per ensemble (per model with ``--ensemble 1``).

Each job trains its members on a worker and writes their model directories itself, each
atomically (temp dir + rename) into the shared ``ZOO/models/``; it returns their metrics, and
the driver writes zoo.csv and reports each model as its job finishes. The driver holds the
zoo's lock for the whole run. A job re-run after its worker died (engine retries) or a zoo
re-run after an interruption skips members already finished, exactly like the local path, so a
Ray zoo resumes the same way. Jobs declare ``threads`` CPUs and the memory of their members'
activations plus 1 GiB. With ``--ensemble 1`` every model is trained by the same code with the
same settings as locally, so the files are identical bit for bit on one machine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ... import extras
from ...engines.base import JobError, JobsLostError, Resources, closing_map
from ...errors import SpecboundError
from . import zoodir
from .ensemble import activation_bytes, train_ensemble
from .plan import ZooPlan, model_name, plan
from .single import torch_settings, train_model
from .tasks import get_task
from .tasks.base import NUM_HEADS

#: (task name, plan record, members, models dir, device, threads, ensemble size)
Job = tuple[str, dict[str, Any], list[dict[str, Any]], str, str, int, int]


def _plan(job: Job) -> ZooPlan:
    task, rec, *_ = job
    grid = {"axes": rec["grid"], "max_steps": rec["max_steps"], "target_loss": rec["target_loss"]}
    return plan(task, preset=rec["preset"], grid=grid)


def warm(task: str) -> None:
    """A spawned worker's first act while the parent starts too
    (``engines.processes.ProcessEngine.start``): the imports and the data its jobs need, and
    one small model built (torch's RNG is seeded again before every model, so this changes no
    result). Errors are left to the jobs."""
    import contextlib

    hf_logging = extras.load("transformers.utils.logging")

    hf_logging.set_verbosity_error()
    with contextlib.suppress(Exception):
        t = get_task(task)
        t.build(1, 2 * NUM_HEADS, t.data().num_classes)


def run_job(job: Job) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Train one job's members not finished yet; ``[(params, metrics)]`` for all of them."""
    hf_logging = extras.load("transformers.utils.logging")

    _, _, members, models_dir, device, threads, size = job
    p = _plan(job)
    models = Path(models_dir)
    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
    todo = []
    for params in members:  # finished by an earlier try of this job
        m = zoodir.finished_metrics(models / model_name(params), params, p)
        if m is None:
            todo.append(params)
        else:
            out.append((params, m))
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        data = p.task.data()
        with torch_settings(threads):
            if size == 1:
                for params in todo:
                    out.append(
                        (params, train_model(p, data, params, models / model_name(params), device))
                    )
            elif todo:
                train_ensemble(p, data, todo, models, device, lambda q, m: out.append((q, m)))
    except OSError as exc:
        raise zoodir.os_error(models.parent, exc) from None
    return out


def run_on_engine(
    engine: Any,
    p: ZooPlan,
    models: Path,
    chunks: list[list[dict[str, Any]]],
    device: str,
    threads: int,
    size: Callable[[list[dict[str, Any]]], int],
    finished: Callable[[dict[str, Any], dict[str, Any]], None],
) -> None:
    """Map ``run_job`` over the chunks on ``engine``; ``finished`` per model as jobs finish.

    Jobs that fail are reported together at the end (one line, with the first reason), after
    every other job's models are written: a re-run trains only what is missing. All of them bad
    input (a damaged model folder, a full disk): SpecboundError; any job that the engine lost
    (its worker died after the retries, or a bug): ``JobsLostError`` (the CLI exits 1).
    """
    rec = p.record()
    jobs: list[Job] = [(p.task.name, rec, c, str(models), device, threads, size(c)) for c in chunks]
    data = p.task.data()

    def resources(job: Job) -> Resources:
        members = job[2]
        need = 2**30
        for q in members:
            n = len(p.task.split(q[p.task.size_axis], q["seed"])[0])
            need += activation_bytes(p.task, data, q, n)
        return Resources(cpus=threads, memory=need, label=model_name(members[0])[:60])

    failed: list[str] = []
    lost: list[str] = []
    with closing_map(engine.map(run_job, jobs, resources=resources)) as outcomes:
        for job, result in _iter(outcomes):
            if isinstance(result, JobError):
                line = f"{model_name(job[2][0])}: {result.reason}"
                failed.append(line)
                if not result.input_error:
                    lost.append(line)
                continue
            for params, m in result:
                finished(params, m)
    if failed:
        error = JobsLostError if lost else SpecboundError
        raise error(
            f"{len(failed)} of {len(jobs)} zoo jobs failed (first: {(lost or failed)[0]}); the "
            "others are written: fix the cause and re-run the same command to train the rest"
        )


def _iter(outcomes: Any) -> Iterator[Any]:
    yield from outcomes
