"""The zoo task registry: a new task is one module here plus one ``register`` line below."""

from __future__ import annotations

from ....errors import SpecboundError
from .base import Data, Preset, Task

TASKS: dict[str, Task] = {}


def register(task: Task) -> Task:
    """Add a task instance to the registry under ``task.name`` (names are unique)."""
    if not task.name or task.name in TASKS:
        raise ValueError(f"zoo task name {task.name!r} is empty or already registered")
    if not {"tiny", "standard"} <= set(task.presets):
        raise ValueError(f"zoo task {task.name!r} needs 'tiny' and 'standard' presets")
    TASKS[task.name] = task
    return task


def task_names() -> list[str]:
    return list(TASKS)


def get_task(name: str) -> Task:
    """The registered task called ``name``; SpecboundError listing the known ones otherwise."""
    if name not in TASKS:
        raise SpecboundError(f"unknown zoo task '{name}'; available: {', '.join(TASKS)}")
    return TASKS[name]


from .digits import Digits  # noqa: E402
from .modular_addition import ModularAddition  # noqa: E402
from .sparse_parity import SparseParity  # noqa: E402

register(ModularAddition())
register(Digits())
register(SparseParity())

__all__ = ["TASKS", "Data", "Preset", "Task", "get_task", "register", "task_names"]
