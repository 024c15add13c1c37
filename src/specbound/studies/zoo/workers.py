"""``zoo train --workers N``: zoo jobs (one model, or one ensemble) in N worker processes.

Each job is ``distributed.run_job``, the code ``--engine ray`` runs, mapped by the process
engine (``engines.processes.ProcessEngine`` with ``here=True``: this process is one of the N,
and the others are spawned while it imports torch, ``distributed.warm`` warming them): a
worker trains its members with ``--threads`` torch threads (1 by default) and writes each
model directory itself, atomically (temp dir + rename); the parent holds the zoo's lock, writes
zoo.csv and reports each model as its job finishes. With one torch thread a model's arithmetic
does not depend on the process it runs in, so the files are identical bit for bit to one at a
time (``wall_s`` aside). The default on the CPU is one worker per usable CPU
(``config.usable_cpus``) divided by ``--threads``; on CUDA it is 1.

On Ctrl-C (or the CLI's SIGTERM) the parent alone acts: the engine ends its workers and the
parent removes their unfinished temp dirs (:func:`remove_temps`) before it exits 130 (143); a
model directory is either complete or absent. A job that fails (its error, or a worker that
died twice: the engine retries a job once in a fresh worker) is reported at the end by
``run_on_engine`` after the other jobs' models are written; a re-run trains the rest.
"""

from __future__ import annotations

from pathlib import Path

from ...config import usable_cpus
from .zoodir import remove_stale_temps


def default_workers(device: str = "cpu", threads: int = 1) -> int:
    """``--workers`` when not given: usable CPUs // ``threads`` on the CPU (>= 1), 1 on CUDA."""
    if str(device).startswith("cuda"):
        return 1
    return max(1, usable_cpus() // max(1, threads))


def remove_temps(models: Path) -> None:
    """Remove the temp dirs of unfinished models (``.NAME.*.tmp``); the caller holds the lock
    and its workers have ended."""
    remove_stale_temps(models)
