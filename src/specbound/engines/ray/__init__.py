"""The Ray engine: jobs as Ray tasks on a cluster (or a local Ray runtime).

Needs the ``ray`` extra (``pip install '.[ray]'`` from a clone); Ray itself is imported only when
the engine first connects (``runtime.connect``), never by the local path.

Every node needs specbound installed and the checkpoints readable under the same path (a shared
file system), or hub ids resolvable there (each node's own Hugging Face cache). Workers read the
weights themselves: no weight array travels through the object store, only the results.

``map``: one task per job, declaring ``num_cpus`` (``Resources.cpus``, else
``RayOptions.threads``: the BLAS threads it may use) and ``memory`` (``Resources.memory``, else
``RayOptions.memory``; capped to the cluster's total), so Ray never schedules more concurrent
jobs on a node than its RAM holds. A task whose worker dies (out of memory, killed, node lost)
is retried ``max_retries`` times; one that still fails comes back as a ``JobError``.

``splits_by_block``: a large model is one task per transformer block (``analysis.blocks``).
Model sweeps and their resume records: ``analysis.sweep`` and ``io.records``, the same for
every engine.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ... import extras
from ...errors import Param
from ...validation import check_int
from ..base import EngineOptionError, JobError, Progress, Resources
from .runtime import (
    DeferredSignals,
    connect,
    memory_cap,
    probe,
    reason,
    require_ray,
    run_task,
)

J = TypeVar("J")
R = TypeVar("R")

#: Retries of a task whose worker process died (Ray ``max_retries``).
DEFAULT_MAX_RETRIES = 3
#: Seconds ``map`` waits on Ray at a time before it checks for a SIGTERM.
WAIT_S = 0.25

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "RayEngine",
    "RayOptions",
    "connect",
    "require_ray",
]


@dataclass(frozen=True)
class RayOptions:
    """Options of the Ray engine.

    ``address``: the cluster to join (``host:port`` of the head's GCS, ``auto``,
    ``ray://...``); None: ``$RAY_ADDRESS``, else a local runtime. A given ``host:port`` is
    probed when the engine is made, so a dead address fails before any work (even when every
    result comes from a cache). ``num_cpus``: CPUs of a local runtime (None: this machine's).
    ``threads``: CPUs (and BLAS threads) per task. ``max_retries``: retries of a task whose
    worker died. ``memory``: bytes each task declares when its job says nothing (None:
    undeclared).
    """

    address: str | None = None
    num_cpus: int | None = None
    threads: int = 1
    max_retries: int = DEFAULT_MAX_RETRIES
    memory: int | None = None

    def __post_init__(self) -> None:
        if self.address is not None and (not isinstance(self.address, str) or not self.address):
            raise EngineOptionError(
                Param("address"),
                f" must be a non-empty string (host:port), got {self.address!r}",
                engine="ray",
                option="address",
            )
        if self.num_cpus is not None:
            check_int(self.num_cpus, "num_cpus", min=1)
        check_int(self.threads, "threads", min=1)
        check_int(self.max_retries, "max_retries", min=0)
        if self.memory is not None:
            check_int(self.memory, "memory", min=1)


class RayEngine:
    """:class:`specbound.engines.base.Engine` on Ray (module doc)."""

    name = "ray"
    distributed = True
    splits_by_block = True
    jobs_end_with_map = False  # a cancelled task may still run on its node for a while

    def __init__(self, options: RayOptions | None = None) -> None:
        self.options = options if options is not None else RayOptions()
        if not extras.available("ray"):  # the same line before any work, cached spectra or not
            require_ray()
        if self.options.address is not None:
            probe(self.options.address)

    def connect(self) -> Any:
        """The ``ray`` module, connected (``runtime.connect``)."""
        return connect(self.options.address, self.options.num_cpus)

    def map(
        self,
        fn: Callable[[J], R],
        jobs: Sequence[J],
        *,
        progress: Progress | None = None,
        resources: Callable[[J], Resources] | None = None,
    ) -> Iterator[tuple[J, R | JobError]]:
        """One Ray task per job; ``(job, outcome)`` in completion order (protocol doc)."""
        jobs = list(jobs)
        if not jobs:
            return
        ray = self.connect()
        task = ray.remote(run_task)
        cap = memory_cap(ray)
        retries = self.options.max_retries
        pending: dict[Any, J] = {}
        sigterm = DeferredSignals(signal.SIGTERM)
        try:
            for job in jobs:
                res = resources(job) if resources is not None else Resources()
                cpus = res.cpus if res.cpus is not None else self.options.threads
                memory = res.memory if res.memory is not None else self.options.memory
                opts: dict[str, Any] = {
                    "num_cpus": cpus,
                    "max_retries": retries,
                    "retry_exceptions": False,
                }
                if memory is not None:
                    opts["memory"] = cap(memory)
                if res.label is not None:
                    opts["name"] = f"specbound:{res.label}"
                pending[task.options(**opts).remote(fn, job, cpus)] = job
            done = 0
            while pending:
                finished: list[tuple[J, Any]] = []
                with sigterm:  # a SIGTERM is acted on here, in plain Python (runtime doc)
                    ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_S)
                    for ref in ready:
                        job = pending.pop(ref)
                        try:
                            finished.append((job, ray.get(ref)))
                        except ray.exceptions.RayError as exc:
                            finished.append((job, reason(exc, ray, retries)))
                for job, out in finished:  # the caller records these before a SIGTERM acts
                    done += 1
                    if progress is not None:
                        progress(done, len(jobs))
                    yield job, out
                sigterm.check()
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def start(self, warm: Callable[[], Any] | None = None) -> None:
        """Nothing to start: Ray connects on the first ``map``."""

    def close(self) -> None:
        """Nothing to end: the connection stays for this process's next ``map``."""
