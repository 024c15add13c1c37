"""Train a factorial grid of small Transformers on a zoo task (``specbound zoo train``).

Layout of a zoo directory ZOO:

    ZOO/zoo.json                     {"task", "axes", "preset", "grid", ...}
    ZOO/zoo.csv                      one row per finished model (the manifest)
    ZOO/models/<name>/config.json    a standard Hugging Face checkpoint ...
    ZOO/models/<name>/model.safetensors
    ZOO/models/<name>/init/          ... and its weights before the first step
    ZOO/models/<name>/split.json     {"train": [...], "test": [...]} indices into the task's data
    ZOO/models/<name>/metrics.json   hyperparameters, train/test loss and accuracy, steps, wall_s

Training is full batch AdamW (betas 0.9, 0.98, gradient norm clipped at 1) on cross-entropy,
stopping as soon as the training cross-entropy is <= ``target_loss`` (0.01, Jiang et al. 2020)
or after ``max_steps`` steps; ``converged`` records which. Each model directory is written to a
temporary directory and renamed into place, so a model directory with metrics.json is complete
and a re-run skips it. Models train in a seeded random order of the grid, so a run stopped
early leaves a random subset.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import SpecboundError
from .tasks import Task, get_task
from .tasks.base import NUM_HEADS, permutation

TARGET_LOSS = 0.01
CLIP_NORM = 1.0
GRID_KEYS = {"task", "axes", "max_steps", "target_loss"}
INT_AXES = {"depth", "width", "seed", "train_size"}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and a rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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


def _fmt(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def model_name(params: dict[str, Any]) -> str:
    """Directory name of a grid point, e.g. ``depth-1_width-32_lr-0.003_..._seed-0``."""
    return "_".join(f"{k}-{_fmt(v)}" for k, v in params.items())


def load_grid(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a grid YAML/JSON file: ``{task?, axes: {axis: [values]}, max_steps?, target_loss?}``."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise SpecboundError(f"grid file {p} does not exist; pass a YAML file with an 'axes:' map")
    try:
        doc = yaml.safe_load(p.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecboundError(f"grid file {p} is not valid YAML ({first}); fix its syntax") from exc
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


def _check_axis(task: Task, name: str, values: Any, where: str) -> list[Any]:
    if not isinstance(values, list):
        values = [values]
    if not values:
        raise SpecboundError(f"{where}: axis '{name}' has no values; give at least one")
    out: list[Any] = []
    for v in map(_number, values):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
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
        elif name == task.size_axis:
            problem = task.check_size(v)
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
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise SpecboundError(f"{grid_source}: max_steps must be a positive integer")
    if (
        isinstance(target, bool)
        or not isinstance(target, (int, float))
        or not math.isfinite(target)
        or not target > 0
    ):
        raise SpecboundError(f"{grid_source}: target_loss must be a positive number")
    checked = {a: _check_axis(task, a, axes[a], grid_source) for a in task.axes}
    return ZooPlan(task, checked, int(max_steps), float(target), preset)


@contextlib.contextmanager
def _torch_settings(threads: int) -> Iterator[None]:
    """Deterministic kernels and ``threads`` intra-op threads, restored afterwards."""
    import torch

    old_threads = torch.get_num_threads()
    old_det = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det)


def evaluate(task: Task, model: Any, x: Any, y: Any) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) of ``model`` on ``(x, y)``, eval mode, no gradients."""
    import torch

    model.eval()
    with torch.no_grad():
        logits = task.logits(model, x)
        loss = torch.nn.functional.cross_entropy(logits, y).item()
        acc = (logits.argmax(dim=-1) == y).double().mean().item()
    return float(loss), float(acc)


def train_model(
    plan_: ZooPlan, data: Any, params: dict[str, Any], dest: Path, device: str = "cpu"
) -> dict[str, Any]:
    """Train one grid point and write its checkpoint directory ``dest`` atomically."""
    import torch

    task = plan_.task
    t0 = time.perf_counter()
    train_idx, test_idx = task.split(params[task.size_axis], params["seed"])
    dev = torch.device(device)
    xtr, ytr = data.x[train_idx].to(dev), data.y[train_idx].to(dev)
    xte, yte = data.x[test_idx].to(dev), data.y[test_idx].to(dev)
    torch.manual_seed(params["seed"])
    model = task.build(params["depth"], params["width"], data.num_classes)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
    try:
        tmp.chmod(0o777 & ~_umask())
        model.save_pretrained(tmp / "init", safe_serialization=True)
        model.to(dev)
        opt = torch.optim.AdamW(
            model.parameters(),
            lr=params["lr"],
            weight_decay=params["weight_decay"],
            betas=(0.9, 0.98),
        )
        steps = 0
        model.train()
        while True:
            loss = torch.nn.functional.cross_entropy(task.logits(model, xtr), ytr)
            if loss.item() <= plan_.target_loss or steps >= plan_.max_steps:
                break
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_NORM)
            opt.step()
            steps += 1
        train_loss, train_acc = evaluate(task, model, xtr, ytr)
        test_loss, test_acc = evaluate(task, model, xte, yte)
        model.to("cpu")
        model.save_pretrained(tmp, safe_serialization=True)
        metrics = {
            "task": task.name,
            "hyperparameters": params,
            "train_size": len(train_idx),
            "test_size": len(test_idx),
            "train_loss": train_loss,
            "test_loss": test_loss,
            "train_acc": train_acc,
            "test_acc": test_acc,
            "steps": steps,
            "max_steps": plan_.max_steps,
            "target_loss": plan_.target_loss,
            "converged": bool(train_loss <= plan_.target_loss),
            "optimizer": f"AdamW(betas=(0.9, 0.98)), full batch, grad norm clip {CLIP_NORM}",
            "device": str(dev),
            "wall_s": round(time.perf_counter() - t0, 3),
        }
        (tmp / "split.json").write_text(json.dumps({"train": train_idx, "test": test_idx}))
        (tmp / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        os.rename(tmp, dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return metrics


def _manifest_row(name: str, m: dict[str, Any], axes: tuple[str, ...]) -> dict[str, Any]:
    row = {
        "model": f"models/{name}",
        "init": f"models/{name}/init",
        "train_size": m["train_size"],
        "test_size": m["test_size"],
        "converged": m["converged"],
    }
    for k in ("train_acc", "test_acc", "train_loss", "test_loss", "steps", "wall_s"):
        row[k] = m[k]
    for a in axes:
        row[a] = m["hyperparameters"].get(a)
    return row


def write_manifest(out: Path, plan_: ZooPlan) -> Any:
    """Rewrite ZOO/zoo.csv from every finished model (grid order first, then the rest by name)."""
    import pandas as pd

    models = out / "models"
    order = [model_name(p) for p in plan_.points()]
    done = {
        d.name
        for d in models.iterdir()
        if not d.name.startswith(".") and (d / "metrics.json").is_file()
    }
    names = [n for n in order if n in done] + sorted(done - set(order))
    rows = [
        _manifest_row(n, json.loads((models / n / "metrics.json").read_text()), plan_.task.axes)
        for n in names
    ]
    cols = [
        "model",
        "init",
        "train_size",
        "test_size",
        "converged",
        "train_acc",
        "test_acc",
        "train_loss",
        "test_loss",
        "steps",
        "wall_s",
        *[a for a in plan_.task.axes if a != "train_size"],
    ]
    df = pd.DataFrame(rows, columns=cols)
    atomic_write_text(out / "zoo.csv", df.to_csv(index=False))
    return df


def _check_zoo(out: Path, plan_: ZooPlan) -> None:
    """Refuse an --out that is a file, a zoo of another task, or a user's non-empty directory."""
    meta_path = out / "zoo.json"
    if out.exists() and not out.is_dir():
        raise SpecboundError(f"--out {out} exists and is not a directory; choose another path")
    if meta_path.is_file():
        try:
            old = json.loads(meta_path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SpecboundError(
                f"{meta_path} is not valid JSON; repair it or use a new --out"
            ) from exc
        if not isinstance(old, dict) or old.get("task") != plan_.task.name:
            task = old.get("task") if isinstance(old, dict) else None
            raise SpecboundError(
                f"{out} holds a zoo of task '{task}', not '{plan_.task.name}'; choose another --out"
            )
    elif out.is_dir() and any(x.name != ".lock" for x in out.iterdir()):
        raise SpecboundError(
            f"--out {out} is a non-empty directory without zoo.json; "
            "choose a new or empty directory"
        )


def _write_meta(out: Path, plan_: ZooPlan, grid_source: str | None) -> None:
    (out / "models").mkdir(parents=True, exist_ok=True)
    meta = {
        "task": plan_.task.name,
        "description": plan_.task.description,
        "axes": list(plan_.task.axes),
        "size_axis": plan_.task.size_axis,
        "preset": plan_.preset,
        "grid_file": grid_source,
        "grid": plan_.axes,
        "max_steps": plan_.max_steps,
        "target_loss": plan_.target_loss,
        "num_models": len(plan_.points()),
    }
    atomic_write_text(out / "zoo.json", json.dumps(meta, indent=2) + "\n")


@contextlib.contextmanager
def _lock(out: Path) -> Iterator[None]:
    out.mkdir(parents=True, exist_ok=True)
    fh = open(out / ".lock", "w")  # noqa: SIM115
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise SpecboundError(
                f"another 'zoo train' is writing to {out}; wait for it or choose another --out"
            ) from exc
        yield
    finally:
        fh.close()


def train_zoo(
    task: str,
    out: str | os.PathLike[str],
    *,
    preset: str = "standard",
    grid: str | os.PathLike[str] | dict[str, Any] | None = None,
    device: str = "cpu",
    threads: int = 1,
    on_model: Callable[[int, int, str, dict[str, Any] | None], None] | None = None,
) -> Any:
    """Train every grid point not already finished in ``out``; return the manifest DataFrame.

    ``on_model(i, n, name, metrics)`` is called per grid point (metrics None when skipped).
    """
    source = None
    if isinstance(grid, (str, os.PathLike)):
        source = str(grid)
        grid = load_grid(grid)
    p = plan(task, preset=preset, grid=grid, grid_source=source or "grid")
    if device != "cpu" and not device.startswith("cuda"):
        raise SpecboundError(f"--device {device}: expected cpu or cuda")
    if threads < 1:
        raise SpecboundError("--threads must be >= 1")
    import torch  # after the argument checks: bad input fails fast

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SpecboundError(f"--device {device}: CUDA is not available here; use --device cpu")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise SpecboundError(f"--out {out} exists and is not a directory; choose another path")
    _check_zoo(out, p)
    with _lock(out):
        _check_zoo(out, p)
        _write_meta(out, p, source)
        models = out / "models"
        for stale in models.glob(".*.tmp"):  # left by a killed run; we hold the lock
            shutil.rmtree(stale, ignore_errors=True)
        from transformers.utils import logging as hf_logging

        hf_verbosity = hf_logging.get_verbosity()
        hf_bars = hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        try:
            data = p.task.data()
            points = p.points()
            # a seeded shuffle, so that an interrupted run leaves a random subset of the grid
            order = [points[j] for j in permutation(len(points), 0)]
            with _torch_settings(threads):
                for i, params in enumerate(order, 1):
                    name = model_name(params)
                    dest = models / name
                    if (dest / "metrics.json").is_file():
                        if on_model:
                            on_model(i, len(points), name, None)
                        continue
                    if dest.exists():
                        raise SpecboundError(
                            f"{dest} exists without metrics.json (not a "
                            "finished model); move it away and re-run"
                        )
                    m = train_model(p, data, params, dest, device=device)
                    write_manifest(out, p)
                    if on_model:
                        on_model(i, len(points), name, m)
        finally:
            hf_logging.set_verbosity(hf_verbosity)
            if hf_bars:
                hf_logging.enable_progress_bar()
        return write_manifest(out, p)
