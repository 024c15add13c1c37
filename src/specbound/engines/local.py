"""The local engine: every job in this process, one after the other, in input order (the default).

Imports nothing beyond specbound's own dependencies (no Ray).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .base import JobError, Progress, Resources, call_job

J = TypeVar("J")
R = TypeVar("R")


@dataclass(frozen=True)
class LocalOptions:
    """The local engine has no options (threads are set with ``--threads`` / linalg.pool)."""


class LocalEngine:
    """:class:`specbound.engines.base.Engine` in this process."""

    name = "local"
    distributed = False
    splits_by_block = False  # ``analyze`` computes the blocks in this process
    jobs_end_with_map = True

    def __init__(self, options: LocalOptions | None = None) -> None:
        self.options = options if options is not None else LocalOptions()

    def map(
        self,
        fn: Callable[[J], R],
        jobs: Sequence[J],
        *,
        progress: Progress | None = None,
        resources: Callable[[J], Resources] | None = None,
    ) -> Iterator[tuple[J, R | JobError]]:
        """Each ``(job, fn(job) or JobError)`` in input order; a bug in ``fn`` propagates."""
        jobs = list(jobs)
        for i, job in enumerate(jobs):
            out = call_job(fn, job)
            if progress is not None:
                progress(i + 1, len(jobs))
            yield job, out

    def start(self, warm: Callable[[], Any] | None = None) -> None:
        """Nothing to start: jobs run in this process."""

    def close(self) -> None:
        """Nothing to end."""
