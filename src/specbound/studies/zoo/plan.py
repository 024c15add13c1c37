"""What a zoo is meant to hold: a task, a factorial grid of axis values, a stopping rule.

``plan(task, preset=..., grid=...)`` resolves a preset and a grid file into a :class:`ZooPlan`;
``model_name(params)`` names each grid point (one directory per model, unique per point);
``ZooPlan.record()`` is what zoo.json stores and a re-run must match.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import SpecboundError
from ...io.files import read_small_file
from ...io.readback import ZOO_DESIGNS
from ...io.yamlfiles import MAX_YAML_BYTES, DuplicateKeyError, load_yaml
from ...validation import WORKERS, check_int, check_real
from .tasks import Task, get_task
from .tasks.base import NUM_HEADS

TARGET_LOSS = 0.01
GRID_KEYS = {"task", "axes", "max_steps", "target_loss", "design", "cells"}
INT_AXES = {"depth", "width", "seed", "train_size"}
#: Axes a grid may add to every task's (issue 52), in the order they take in a model's name
#: (after ``weight_decay``): ``label_noise`` rho (share of training labels replaced by another
#: class, ``noise.py``), ``spectral_reg`` (``none``/``nuclear``/``spectral``) and its strength
#: lambda (``regularize.py``). A grid without them trains as before (same names, same files).
OPTIONAL_AXES = ("label_noise", "spectral_reg", "spectral_reg_strength")
#: The values of the one text axis.
SPECTRAL_REGS = ("none", "nuclear", "spectral")
#: The values of the grid's top-level ``design`` key (copied into zoo.json; SPEC 10 v5): the
#: designs zoo.json may declare.
DESIGNS = ZOO_DESIGNS
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
    design: str | None = None
    #: The (depth, width) cells a grid's ``cells:`` key keeps (None: every combination).
    cells: list[tuple[int, int]] | None = None

    @property
    def axis_names(self) -> tuple[str, ...]:
        """The axes of this plan in manifest order: the task's, with the optional axes the grid
        names (``OPTIONAL_AXES``) after ``weight_decay``."""
        return tuple(self.axes)

    def points(self) -> list[dict[str, Any]]:
        """Every combination of axis values (the factorial grid), in axis order.

        With ``cells`` only the points of those (depth, width) cells. A point with
        ``spectral_reg`` ``none`` trains without a penalty whatever the strength:
        its ``spectral_reg_strength`` is 0.0 and the duplicates this makes are dropped (the
        first kept), so ``none`` x [lambda_1, lambda_2] is one model per remaining point."""
        names = list(self.axes)
        out: list[dict[str, Any]] = []
        seen: set[tuple[Any, ...]] = set()
        cells = None if self.cells is None else set(self.cells)
        for combo in itertools.product(*(self.axes[n] for n in names)):
            point = dict(zip(names, combo, strict=True))
            if cells is not None and (point["depth"], point["width"]) not in cells:
                continue
            if point.get("spectral_reg") == "none":
                point["spectral_reg_strength"] = 0.0
            key = tuple(point.values())
            if key not in seen:
                seen.add(key)
                out.append(point)
        return out

    def record(self) -> dict[str, Any]:
        """The plan as zoo.json stores it: a re-run into the same zoo must give the same record
        (``design`` only when the grid sets it, so earlier zoo.json files still match)."""
        rec: dict[str, Any] = {
            "task": self.task.name,
            "preset": self.preset,
            "grid": {k: list(v) for k, v in self.axes.items()},
            "max_steps": self.max_steps,
            "target_loss": self.target_loss,
        }
        if self.design is not None:
            rec["design"] = self.design
        if self.cells is not None:
            rec["cells"] = [list(c) for c in self.cells]
        return rec


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


#: The bounds of the numeric axes, in the order they are checked: ``(axes, test, problem)``;
#: a value's problem is that of the first rule naming its axis whose test it fails (then the
#: task's own rule for its size axis, ``Task.size_problem``).
_AXIS_RULES: tuple[tuple[frozenset[str], Callable[[Any], bool], str], ...] = (
    (frozenset({"depth", "width"}), lambda v: v < 1, "must be >= 1"),
    (
        frozenset({"width"}),
        lambda v: bool(v % NUM_HEADS),
        f"must be a multiple of the {NUM_HEADS} attention heads",
    ),
    (frozenset({"lr"}), lambda v: v <= 0, "must be > 0"),
    (frozenset({"weight_decay", "seed", "spectral_reg_strength"}), lambda v: v < 0, "must be >= 0"),
    (
        frozenset({"label_noise"}),
        lambda v: not 0 <= v < 1,
        "must be in [0, 1) (the share of training labels replaced)",
    ),
    (
        frozenset({"seed"}),
        lambda v: v >= 2**32,
        "must be below 2**32 (torch and numpy seeds are 32-bit)",
    ),
    (frozenset({"depth"}), lambda v: v > 256, "must be <= 256"),
    (frozenset({"width"}), lambda v: v > 65536, "must be <= 65536"),
)


def _axis_problem(task: Task, name: str, v: Any) -> str | None:
    """What is wrong with the number ``v`` on axis ``name`` (``_AXIS_RULES``), None if nothing."""
    for axes, fails, problem in _AXIS_RULES:
        if name in axes and fails(v):
            return problem
    if name == task.size_axis:
        return task.size_problem(v)
    return None


def _spectral_reg_value(v: Any, where: str) -> Any:
    """A value of the one text axis, ``spectral_reg``."""
    if v not in SPECTRAL_REGS:
        raise SpecboundError(
            f"{where}: axis 'spectral_reg' value {v!r}: must be one of {', '.join(SPECTRAL_REGS)}"
        )
    return v


def _numeric_value(task: Task, name: str, raw: Any, where: str) -> int | float:
    """A value of a numeric axis: an int on ``INT_AXES``, else a float, within its bounds."""
    v = _number(raw)
    if not _is_finite_number(v):
        raise SpecboundError(f"{where}: axis '{name}' value {v!r} is not a finite number")
    if name in INT_AXES:
        if float(v) != int(v):
            raise SpecboundError(f"{where}: axis '{name}' value {v!r} must be an integer")
        v = int(v)
    else:
        v = float(v)
    problem = _axis_problem(task, name, v)
    if problem:
        raise SpecboundError(f"{where}: axis '{name}' value {v!r}: {problem}")
    return v


def _check_axis(task: Task, name: str, values: Any, where: str) -> list[Any]:
    """The values of one axis, each checked (a single value is a list of one), none twice."""
    if not isinstance(values, list):
        values = [values]
    if not values:
        raise SpecboundError(f"{where}: axis '{name}' has no values; give at least one")
    out: list[Any] = []
    for raw in values:
        if name == "spectral_reg":
            v = _spectral_reg_value(raw, where)
        else:
            v = _numeric_value(task, name, raw, where)
        if v in out:
            raise SpecboundError(f"{where}: axis '{name}' lists {v!r} twice")
        out.append(v)
    return out


def _cells(grid: dict[str, Any], where: str) -> list[tuple[int, int]] | None:
    """The grid's ``cells:`` (a list of ``{depth: D, width: W}`` or ``[D, W]``), checked as
    the depth and width axes are; None without the key."""
    raw = grid.get("cells")
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        raise SpecboundError(
            f"{where}: 'cells' must list (depth, width) cells, e.g. [{{depth: 1, width: 128}}]"
        )
    out: list[tuple[int, int]] = []
    for c in raw:
        if isinstance(c, dict) and set(c) == {"depth", "width"}:
            d, w = c["depth"], c["width"]
        elif isinstance(c, list) and len(c) == 2:
            d, w = c
        else:
            raise SpecboundError(f"{where}: cell {c!r} must be {{depth: D, width: W}} or [D, W]")
        for name, v in (("depth", d), ("width", w)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise SpecboundError(f"{where}: cell {c!r}: {name} must be an integer >= 1")
        if (d, w) in out:
            raise SpecboundError(f"{where}: 'cells' lists {c!r} twice")
        out.append((d, w))
    return out


def _grid_axes(task: Task, grid: dict[str, Any], where: str) -> dict[str, Any]:
    """The axes a grid sets, each one the task's or an optional one (``OPTIONAL_AXES``)."""
    axes: dict[str, Any] = {}
    for k, v in (grid.get("axes") or {}).items():
        if k not in task.axes and k not in OPTIONAL_AXES:
            raise SpecboundError(
                f"{where}: unknown axis '{k}' for task {task.name}; "
                f"axes: {', '.join((*task.axes, *OPTIONAL_AXES))}"
            )
        axes[k] = v
    return axes


def _design(grid: dict[str, Any], where: str) -> str | None:
    """The grid's ``design`` (one of ``DESIGNS``), None without the key."""
    design = grid.get("design")
    if design is not None and design not in DESIGNS:
        raise SpecboundError(
            f"{where}: design {design!r} is not known; allowed: {', '.join(DESIGNS)} "
            "(or leave the key out)"
        )
    return design


def _cell_axes(grid: dict[str, Any], cells: list[tuple[int, int]], where: str) -> dict[str, Any]:
    """The depth and width axes that ``cells`` spans (the grid's axes must leave them out)."""
    if "depth" in (grid.get("axes") or {}) or "width" in (grid.get("axes") or {}):
        raise SpecboundError(
            f"{where}: 'cells' lists the depth x width cells; leave depth and width out of 'axes'"
        )
    return {
        "depth": list(dict.fromkeys(d for d, _ in cells)),
        "width": list(dict.fromkeys(w for _, w in cells)),
    }


def _check_reg_pair(axes: dict[str, Any], where: str) -> None:
    """``spectral_reg`` and its strength come together or not at all."""
    if ("spectral_reg" in axes) != ("spectral_reg_strength" in axes):
        have, lack = (
            ("spectral_reg", "spectral_reg_strength")
            if "spectral_reg" in axes
            else ("spectral_reg_strength", "spectral_reg")
        )
        raise SpecboundError(
            f"{where}: axis '{have}' needs the axis '{lack}'; give both (or neither)"
        )


def _stopping_rule(max_steps: Any, target: Any, where: str) -> tuple[int, float]:
    """``max_steps`` (a positive integer) and ``target_loss`` (a positive number), checked."""
    try:
        max_steps = check_int(max_steps, "max_steps", min=1)
    except SpecboundError:
        raise SpecboundError(f"{where}: max_steps must be a positive integer") from None
    try:
        target = check_real(target, "target_loss", min=0, include_min=False)
    except SpecboundError:
        raise SpecboundError(f"{where}: target_loss must be a positive number") from None
    return int(max_steps), float(target)


def _axis_order(task: Task, axes: dict[str, Any]) -> list[str]:
    """The task's axes, with the optional axes ``axes`` holds after ``weight_decay``."""
    order = list(task.axes)
    at = order.index("weight_decay") + 1
    order[at:at] = [a for a in OPTIONAL_AXES if a in axes]
    return order


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
    design: str | None = None
    cells: list[tuple[int, int]] | None = None
    if grid:
        if grid.get("task") not in (None, task.name):
            raise SpecboundError(f"{grid_source} is for task '{grid['task']}', not '{task.name}'")
        axes.update(_grid_axes(task, grid, grid_source))
        max_steps = grid.get("max_steps", max_steps)
        target = _number(grid.get("target_loss", target))
        design = _design(grid, grid_source)
        cells = _cells(grid, grid_source)
        if cells is not None:
            axes.update(_cell_axes(grid, cells, grid_source))
    _check_reg_pair(axes, grid_source)
    steps, loss = _stopping_rule(max_steps, target, grid_source)
    checked = {a: _check_axis(task, a, axes[a], grid_source) for a in _axis_order(task, axes)}
    p = ZooPlan(task, checked, steps, loss, preset, design, cells)
    names = [model_name(q) for q in p.points()]
    long = [n for n in names if len(n.encode()) > 200]
    if long:
        raise SpecboundError(f"{grid_source}: model name {long[0][:60]}... is too long for a file")
    return p


#: ``threads``' constraints (:mod:`specbound.validation`): torch intra-op threads per model, an
#: integer in 1..4 x the CPUs this process may use (``validation.max_processes``).
THREADS = WORKERS


def grid_of_record(meta: dict[str, Any]) -> dict[str, Any]:
    """The grid (``load_grid``'s form) that reproduces a zoo from its zoo.json ``meta``: the
    recorded axes, cells, design and stopping rule (``plan(meta["task"], preset=...,
    grid=grid_of_record(meta)).record()`` equals the record zoo.json holds)."""
    axes = {k: list(v) for k, v in meta["grid"].items()}
    grid: dict[str, Any] = {"task": meta["task"], "axes": axes}
    if meta.get("cells") is not None:
        grid["cells"] = [list(c) for c in meta["cells"]]
        axes.pop("depth", None)
        axes.pop("width", None)
    for key in ("design", "max_steps", "target_loss"):
        if meta.get(key) is not None:
            grid[key] = meta[key]
    return grid
