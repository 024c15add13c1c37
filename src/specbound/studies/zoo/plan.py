"""What a zoo is meant to hold: a task, a factorial grid of axis values, a stopping rule.

``plan(task, preset=..., grid=...)`` resolves a preset and a grid file into a :class:`ZooPlan`;
``model_name(params)`` names each grid point (one directory per model, unique per point);
``ZooPlan.record()`` is what zoo.json stores and a re-run must match.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import SpecboundError
from ...io.files import read_small_file
from ...io.yamlfiles import MAX_YAML_BYTES, DuplicateKeyError, load_yaml
from ...validation import WORKERS, check_int, check_real
from .tasks import Task, get_task
from .tasks.base import NUM_HEADS

TARGET_LOSS = 0.01
GRID_KEYS = {"task", "axes", "max_steps", "target_loss"}
INT_AXES = {"depth", "width", "seed", "train_size"}
#: Architecture axes: models sharing these (and the task) can train as one ensemble.
ARCH_AXES = ("depth", "width")


@dataclass
class ZooPlan:
    """A resolved grid: the task, every axis with its values, the stopping rule."""

    task: Task
    axes: dict[str, list[Any]]
    max_steps: int
    target_loss: float
    preset: str

    def points(self) -> list[dict[str, Any]]:
        """Every combination of axis values (the factorial grid), in axis order."""
        names = list(self.axes)
        return [
            dict(zip(names, combo, strict=True))
            for combo in itertools.product(*(self.axes[n] for n in names))
        ]

    def record(self) -> dict[str, Any]:
        """The plan as zoo.json stores it: a re-run into the same zoo must give the same record."""
        return {
            "task": self.task.name,
            "preset": self.preset,
            "grid": {k: list(v) for k, v in self.axes.items()},
            "max_steps": self.max_steps,
            "target_loss": self.target_loss,
        }


def _fmt(v: Any) -> str:
    """A value as it appears in a model name: ``%g`` when that spells the value exactly, else
    the shortest repr that does (so distinct values always get distinct names)."""
    if isinstance(v, float):
        short = f"{v:g}"
        return short if float(short) == v else repr(v)
    return str(v)


def model_name(params: dict[str, Any]) -> str:
    """Directory name of a grid point, e.g. ``depth-1_width-32_lr-0.003_..._seed-0``.

    Injective: each value's text reads back as exactly that value (``_fmt``).
    """
    return "_".join(f"{k}-{_fmt(v)}" for k, v in params.items())


def load_grid(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a grid YAML/JSON file: ``{task?, axes: {axis: [values]}, max_steps?, target_loss?}``."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise SpecboundError(f"grid file {p} does not exist; pass a YAML file with an 'axes:' map")
    try:
        doc = load_yaml(read_small_file(p, "grid file", SpecboundError, MAX_YAML_BYTES).decode())
    except DuplicateKeyError as exc:
        raise SpecboundError(f"grid file {p}: {exc}; keep one of them") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecboundError(f"grid file {p} is not valid YAML ({first}); fix its syntax") from exc
    except OSError as exc:
        raise SpecboundError(f"grid file {p} cannot be read ({exc.strerror})") from exc
    if not isinstance(doc, dict):
        raise SpecboundError(
            f"grid file {p} must hold a mapping with an 'axes:' key, not {type(doc).__name__}"
        )
    unknown = set(doc) - GRID_KEYS
    if unknown:
        raise SpecboundError(
            f"grid file {p}: unknown key(s) {', '.join(sorted(map(str, unknown)))}"
            f"; allowed: {', '.join(sorted(GRID_KEYS))}"
        )
    if "axes" in doc and not isinstance(doc["axes"], dict):
        raise SpecboundError(f"grid file {p}: 'axes' must map axis names to lists of values")
    return doc


def _number(v: Any) -> Any:
    """``v``, or the float a string spells: YAML 1.1 (PyYAML) reads ``3e-3`` (no dot) as a
    string, and a grid file written that way should mean what its author meant."""
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            return v
    return v


def _is_finite_number(v: Any) -> bool:
    """A finite int or float (numpy ones too), not a bool: ``validation.check_real``."""
    try:
        check_real(v, "value")
    except SpecboundError:
        return False
    return True


def _check_axis(task: Task, name: str, values: Any, where: str) -> list[Any]:
    if not isinstance(values, list):
        values = [values]
    if not values:
        raise SpecboundError(f"{where}: axis '{name}' has no values; give at least one")
    out: list[Any] = []
    for v in map(_number, values):
        if not _is_finite_number(v):
            raise SpecboundError(f"{where}: axis '{name}' value {v!r} is not a finite number")
        if name in INT_AXES:
            if float(v) != int(v):
                raise SpecboundError(f"{where}: axis '{name}' value {v!r} must be an integer")
            v = int(v)
        else:
            v = float(v)
        problem = None
        if name in ("depth", "width") and v < 1:
            problem = "must be >= 1"
        elif name == "width" and v % NUM_HEADS:
            problem = f"must be a multiple of the {NUM_HEADS} attention heads"
        elif name == "lr" and v <= 0:
            problem = "must be > 0"
        elif name in ("weight_decay", "seed") and v < 0:
            problem = "must be >= 0"
        elif name == "seed" and v >= 2**32:
            problem = "must be below 2**32 (torch and numpy seeds are 32-bit)"
        elif name == "depth" and v > 256:
            problem = "must be <= 256"
        elif name == "width" and v > 65536:
            problem = "must be <= 65536"
        elif name == task.size_axis:
            problem = task.size_problem(v)
        if problem:
            raise SpecboundError(f"{where}: axis '{name}' value {v!r}: {problem}")
        if v in out:
            raise SpecboundError(f"{where}: axis '{name}' lists {v!r} twice")
        out.append(v)
    return out


def plan(
    task_name: str,
    *,
    preset: str = "standard",
    grid: dict[str, Any] | None = None,
    grid_source: str = "grid",
) -> ZooPlan:
    """Resolve a preset and an optional grid (its axes replace the preset's) into a ZooPlan."""
    task = get_task(task_name)
    if preset not in task.presets:
        raise SpecboundError(f"unknown preset '{preset}'; available: {', '.join(task.presets)}")
    base = task.presets[preset]
    axes: dict[str, Any] = {k: list(v) for k, v in base.axes.items()}
    max_steps: Any = base.max_steps
    target: Any = TARGET_LOSS
    if grid:
        if grid.get("task") not in (None, task.name):
            raise SpecboundError(f"{grid_source} is for task '{grid['task']}', not '{task.name}'")
        for k, v in (grid.get("axes") or {}).items():
            if k not in task.axes:
                raise SpecboundError(
                    f"{grid_source}: unknown axis '{k}' for task {task.name}; "
                    f"axes: {', '.join(task.axes)}"
                )
            axes[k] = v
        max_steps = grid.get("max_steps", max_steps)
        target = _number(grid.get("target_loss", target))
    try:
        max_steps = check_int(max_steps, "max_steps", min=1)
    except SpecboundError:
        raise SpecboundError(f"{grid_source}: max_steps must be a positive integer") from None
    try:
        target = check_real(target, "target_loss", min=0, include_min=False)
    except SpecboundError:
        raise SpecboundError(f"{grid_source}: target_loss must be a positive number") from None
    checked = {a: _check_axis(task, a, axes[a], grid_source) for a in task.axes}
    p = ZooPlan(task, checked, int(max_steps), float(target), preset)
    names = [model_name(q) for q in p.points()]
    long = [n for n in names if len(n.encode()) > 200]
    if long:
        raise SpecboundError(f"{grid_source}: model name {long[0][:60]}... is too long for a file")
    return p


#: ``threads``' constraints (:mod:`specbound.validation`): torch intra-op threads per model, an
#: integer in 1..4 x the CPUs this process may use (``validation.max_processes``).
THREADS = WORKERS
