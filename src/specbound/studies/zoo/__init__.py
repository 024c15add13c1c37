"""Model zoos: factorial grids of small Transformers trained on offline tasks (SPEC 10).

``train_zoo(task, out, preset=..., grid=...)`` writes ZOO/zoo.csv, ZOO/zoo.json and one Hugging
Face checkpoint directory per model (see ``train.py``); ``TASKS`` is the task registry.
"""

from __future__ import annotations

from .tasks import TASKS, Task, get_task, register, task_names
from .train import TARGET_LOSS, ZooPlan, load_grid, model_name, plan, train_zoo

__all__ = [
    "TARGET_LOSS",
    "TASKS",
    "Task",
    "ZooPlan",
    "get_task",
    "load_grid",
    "model_name",
    "plan",
    "register",
    "task_names",
    "train_zoo",
]
