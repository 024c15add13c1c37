"""Model zoos: factorial grids of small Transformers trained on offline tasks (SPEC 10, 12).

``train_zoo(task, out, preset=..., grid=..., ensemble=...)`` writes ZOO/zoo.csv, ZOO/zoo.json
and one Hugging Face checkpoint directory per model (see ``train.py``); ``TASKS`` is the task
registry; ``training_data(model_dir)`` rebuilds a model's training examples (``data.py``).
"""

from __future__ import annotations

from .data import test_data, training_data
from .plan import TARGET_LOSS, THREADS, ZooPlan, load_grid, model_name, plan
from .tasks import TASKS, Task, get_task, register, task_names
from .train import train_zoo

__all__ = [
    "TARGET_LOSS",
    "TASKS",
    "THREADS",
    "Task",
    "ZooPlan",
    "get_task",
    "load_grid",
    "model_name",
    "plan",
    "register",
    "task_names",
    "test_data",
    "train_zoo",
    "training_data",
]
