"""Train a factorial grid of small Transformers on a zoo task (``specbound zoo train``).

Layout of a zoo directory ZOO (the rules for writing it: ``zoodir.py``):

    ZOO/.specbound-manifest.json     what specbound wrote here, with checksums
    ZOO/zoo.json                     {"task", "preset", "grid", "max_steps", "target_loss", ...}
    ZOO/zoo.csv                      one row per finished model (the manifest)
    ZOO/pstar.csv                    p* per matrix of every finished model (``pstar.py``)
    ZOO/models/<name>/config.json    a standard Hugging Face checkpoint ...
    ZOO/models/<name>/model.safetensors
    ZOO/models/<name>/init/          ... and its weights before the first step
    ZOO/models/<name>/split.json     {"train": [...], "test": [...]} indices into the task's data
    ZOO/models/<name>/data.json      task, size, seed, the indices and checksums (``data.py``)
    ZOO/models/<name>/metrics.json   hyperparameters, train/test loss and accuracy, steps, wall_s
    ZOO/models/<name>/pstar.csv      its per-matrix p* table

Training is full batch AdamW (betas 0.9, 0.98, gradient norm clipped at 1) on cross-entropy,
stopping as soon as the training cross-entropy is <= ``target_loss`` (0.01, Jiang et al. 2020)
or after ``max_steps`` steps; ``converged`` records which. Each model directory is written to a
temporary directory and renamed into place, so a finished model directory is complete and a
re-run skips it. With ``ensemble`` > 1 models sharing an architecture train together as one
batched computation (``ensemble.py``); every file has the same form as one at a time.
Models train in a seeded random order of the grid (ensembles: a seeded order of ensembles),
so a run stopped early leaves a random subset. With ``workers`` > 1 the models (or ensembles)
train side by side in worker processes (the process engine, ``workers.py``), with the same
files.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ... import extras
from ...engines import get_engine, options_for
from ...engines.processes import ProcessEngine, ProcessOptions
from ...errors import Param, SpecboundError, SpecboundTypeError, SpecboundValueError
from ...validation import WORKERS, IsCallable, PathLike, Satisfies, Text, check_int, validate_params
from . import zoodir
from .distributed import run_on_engine, warm
from .ensemble import auto_mode, groups, train_ensemble
from .plan import (
    GRID_KEYS,
    INT_AXES,
    TARGET_LOSS,
    THREADS,
    ZooPlan,
    load_grid,
    model_name,
    plan,
)
from .pstar import read_model_table
from .single import CLIP_NORM, evaluate, torch_settings, train_model
from .tasks.base import permutation
from .workers import default_workers, remove_temps

__all__ = [
    "CLIP_NORM",
    "GRID_KEYS",
    "INT_AXES",
    "TARGET_LOSS",
    "ZooPlan",
    "evaluate",
    "load_grid",
    "model_name",
    "plan",
    "train_model",
    "train_zoo",
]


def _ensemble_size(ensemble: Any, name: str) -> int | str:
    """``"auto"`` or an integer >= 1 (a string of digits too: the CLI's ``--ensemble 4``)."""
    if isinstance(ensemble, str):
        if ensemble.strip() == "auto":
            return "auto"
        if not ensemble.strip().isdigit():
            raise SpecboundValueError(
                Param(name), f" must be 'auto' or an integer >= 1, got {ensemble!r}"
            )
        ensemble = int(ensemble)
    return check_int(ensemble, name, min=1)


def _training_device(device: Any, name: str) -> str:
    """``cpu``, ``cuda`` or ``cuda:N`` (whether CUDA is there: checked after the arguments)."""
    if not isinstance(device, str):
        raise SpecboundTypeError(
            Param(name), f" must be cpu or cuda, got {device!r} ({type(device).__name__})"
        )
    if device != "cpu" and not device.startswith("cuda"):
        raise SpecboundValueError(Param(name), f" must be cpu or cuda, got {device!r}")
    return device


#: ``ensemble``'s constraints (:mod:`specbound.validation`): ``"auto"`` or an integer >= 1.
ENSEMBLE = (Satisfies(_ensemble_size, "'auto' or an integer >= 1", named=True),)


def _engine(engine: Any, options: dict[str, Any] | None) -> Any:
    """The engine (checked before any work); None means this process (the local engine)."""
    if engine is not None and not isinstance(engine, str):
        return engine

    name = "local" if engine is None else engine
    return get_engine(name, options_for(name, **(options or {})))


@validate_params(
    {
        "task": (Text(),),
        "out": (PathLike(),),
        "preset": (Text(),),
        "device": (Satisfies(_training_device, "cpu or cuda", named=True),),
        "threads": THREADS,
        "ensemble": ENSEMBLE,
        "on_model": (None, IsCallable()),
        "workers": (None, *WORKERS),
    }
)
def train_zoo(
    task: str,
    out: str | os.PathLike[str],
    *,
    preset: str = "standard",
    grid: str | os.PathLike[str] | dict[str, Any] | None = None,
    device: str = "cpu",
    threads: int = 1,
    ensemble: int | str = "auto",
    engine: Any = None,
    engine_options: dict[str, Any] | None = None,
    on_model: Callable[[int, int, str, dict[str, Any] | None], None] | None = None,
    workers: int | None = 1,
) -> Any:
    """Train every grid point not already finished in ``out``; return the manifest DataFrame.

    ``ensemble``: how many same-architecture models train together (``"auto"``:
    ``ensemble.auto_mode``, 1 on the CPU, the memory-bounded ``auto_size`` on CUDA; 1: one at a
    time). ``on_model(i, n, name, metrics)`` is called per grid point
    (metrics None when it was finished before). ``engine``: None or ``"local"`` (this
    process), else an engine name (``"ray"``, options ``engine_options`` such as
    ``{"address": ...}``) or an ``Engine``: one job per ensemble (``distributed.py``).
    ``workers``: processes training jobs side by side on the local engine (``workers.py``; 1:
    this process; None: ``workers.default_workers``, one per usable CPU, as ``zoo train``);
    the files are the same for any number (a script calling this with ``workers`` != 1 needs
    the ``if __name__ == "__main__":`` guard of ``multiprocessing``'s spawn). The arguments are
    checked first (``@validate_params``), then the grid.
    """
    source = None
    if isinstance(grid, (str, os.PathLike)):
        source = str(grid)
        grid = load_grid(grid)
    p = plan(task, preset=preset, grid=grid, grid_source=source or "grid")
    ens = ensemble
    if ens == "auto":
        ens = auto_mode(device)
    eng = _engine(engine, engine_options)

    n_workers = default_workers(device, threads) if workers is None else workers
    if eng is not None and eng.distributed:
        if workers is not None and n_workers > 1:
            raise SpecboundError(
                Param("workers", str(workers)),
                ": for the local engine only; with ",
                Param("engine", eng.name),
                " the engine places the jobs (leave ",
                Param("workers"),
                " out)",
            )
    elif n_workers > 1:
        eng = ProcessEngine(ProcessOptions(workers=n_workers, here=True))
    if device.startswith("cuda"):
        torch = extras.torch()  # after the argument checks: bad input fails fast

        if not torch.cuda.is_available():
            raise SpecboundError(
                Param("device", device),
                ": CUDA is not available here; use ",
                Param("device", "cpu"),
            )
    out = Path(out)
    zoodir.check_zoo(out, p, inputs=[source] if source is not None else [])
    if eng is not None:  # its workers start while this one imports torch
        eng.start(functools.partial(warm, p.task.name))
    try:
        with zoodir.lock(out):
            zoodir.check_zoo(out, p)
            zoodir.write_meta(out, p, source)
            return _train_all(p, out, device, threads, ens, on_model, eng)
    except OSError as exc:
        raise zoodir.os_error(out, exc) from None
    finally:
        if eng is not None:
            eng.close()


def _train_all(
    p: ZooPlan,
    out: Path,
    device: str,
    threads: int,
    ens: int | str,
    on_model: Callable[[int, int, str, dict[str, Any] | None], None] | None,
    eng: Any = None,
) -> Any:
    models = out / "models"
    zoodir.remove_stale_temps(models)  # left by a killed run; we hold the lock
    points = p.points()
    # a seeded shuffle, so that an interrupted run leaves a random subset of the grid
    order = [points[j] for j in permutation(len(points), 0)]
    done: dict[str, dict[str, Any]] = {}
    todo: list[dict[str, Any]] = []
    for params in order:  # every folder checked before anything is trained or printed
        name = model_name(params)
        m = zoodir.finished_metrics(models / name, params, p)
        if m is None:
            todo.append(params)
        else:
            done[name] = m
    tables = {name: read_model_table(models / name) for name in done}
    count = 0
    for params in order:
        name = model_name(params)
        if name in done:
            count += 1
            if on_model:
                on_model(count, len(points), name, None)

    def finished(params: dict[str, Any], m: dict[str, Any]) -> None:
        nonlocal count
        name = model_name(params)
        done[name] = m
        tables[name] = read_model_table(models / name)
        count += 1
        zoodir.write_csv(out, p, done)
        zoodir.write_pstar(out, p, done, tables)
        if on_model:
            on_model(count, len(points), name, m)

    hf_logging = extras.load("transformers.utils.logging")

    hf_verbosity = hf_logging.get_verbosity()
    hf_bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        data = p.task.data()
        if eng is not None and eng.distributed:  # one engine job per ensemble
            chunks = [[q] for q in todo] if ens == 1 else list(groups(p, data, todo, ens, device))

            try:
                run_on_engine(
                    eng,
                    p,
                    models,
                    chunks,
                    device,
                    threads,
                    lambda c: 1 if ens == 1 else len(c),
                    finished,
                )
            finally:
                if eng.jobs_end_with_map:  # its workers have ended; we hold the lock
                    remove_temps(models)
            zoodir.write_pstar(out, p, done, tables)
            return zoodir.write_csv(out, p, done)
        with torch_settings(threads):
            if ens == 1:
                for params in todo:
                    finished(
                        params, train_model(p, data, params, models / model_name(params), device)
                    )
            else:
                for members in groups(p, data, todo, ens, device):
                    train_ensemble(p, data, members, models, device, finished)
    finally:
        hf_logging.set_verbosity(hf_verbosity)
        if hf_bars:
            hf_logging.enable_progress_bar()
    zoodir.write_pstar(out, p, done, tables)
    return zoodir.write_csv(out, p, done)
