"""Train one zoo model (or begin and finish one, for ``ensemble.py``): the optimizer, the
stopping rule and the atomic write of its model directory.

Full batch AdamW (betas 0.9, 0.98, gradient norm clipped at 1) on cross-entropy (plus the
``spectral_reg`` penalty, ``regularize.py``; labels with ``label_noise`` applied, ``noise.py``),
stopping as soon as the training cross-entropy is <= the plan's ``target_loss`` or after
``max_steps`` steps. The directory is written to a temporary directory and renamed into place,
so a finished model directory is complete and a re-run skips it (layout: ``train.py``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ... import extras
from ...io.files import dumps_json
from ...io.outdir import TempDir
from .data import data_record
from .noise import noisy_labels
from .plan import ZooPlan
from .pstar import write_model_table
from .regularize import penalized_names, penalty, reg_of
from .tasks import Task

__all__ = [
    "BETAS",
    "CLIP_NORM",
    "OPTIMIZER",
    "begin_model",
    "evaluate",
    "finish_model",
    "train_model",
]

CLIP_NORM = 1.0
BETAS = (0.9, 0.98)
OPTIMIZER = f"AdamW(betas=(0.9, 0.98)), full batch, grad norm clip {CLIP_NORM}"


@contextlib.contextmanager
def torch_settings(threads: int) -> Iterator[None]:
    """Deterministic kernels and ``threads`` intra-op threads, restored afterwards."""
    torch = extras.torch()

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
    torch = extras.torch()

    model.eval()
    with torch.no_grad():
        logits = task.logits(model, x)
        loss = torch.nn.functional.cross_entropy(logits, y).item()
        acc = (logits.argmax(dim=-1) == y).double().mean().item()
    return float(loss), float(acc)


def _save(model: Any, where: Path) -> None:
    """``save_pretrained`` into ``where``; a failed write is an OSError with its errno and path.

    safetensors reports a failed write as its own error type, with the OS error in its text
    (``IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })``):
    its code becomes the OSError's, so that the cause ("No space left on device") and the path
    reach the user's message."""
    try:
        model.save_pretrained(where, safe_serialization=True)
    except OSError:
        raise
    except Exception as exc:
        text = str(exc)
        if "safetensor" not in type(exc).__name__.lower() and "No space" not in text:
            raise
        found = re.search(r"\bcode: (\d+)", text)
        code = int(found.group(1)) if found else errno.ENOSPC if "No space" in text else None
        if code is not None:
            raise OSError(code, os.strerror(code), str(where)) from exc
        raise OSError(f"cannot write {where}: {' '.join(text.split())}") from exc


def begin_model(task: Task, data: Any, params: dict[str, Any], dest: Path) -> dict[str, Any]:
    """Split, seed, build and save the initialization of one grid point into a temp dir
    (``io.outdir.TempDir``: owner-marked, committed by ``finish_model``).

    Returns ``{"t0", "train_idx", "test_idx", "train_y", "noise", "model", "tmp", "temp"}``
    (``train_y``: the training labels as training uses them, ``label_noise`` applied
    (``noise.py``); ``noise``: the positions changed; ``tmp``: the temp dir's path, ``temp``
    the TempDir); the same for both paths.
    """
    torch = extras.torch()

    t0 = time.perf_counter()
    train_idx, test_idx = task.split(params[task.size_axis], params["seed"])
    train_y, noise = noisy_labels(
        data.y[train_idx], params.get("label_noise", 0.0), params["seed"], data.num_classes
    )
    torch.manual_seed(params["seed"])
    model = task.build(params["depth"], params["width"], data.num_classes)
    temp = TempDir(dest, manifest=False)  # the zoo's own manifest lists models/
    try:
        _save(model, temp.path / "init")
    except BaseException:
        temp.discard()
        raise
    return {
        "t0": t0,
        "train_idx": train_idx,
        "test_idx": test_idx,
        "train_y": train_y,
        "noise": noise,
        "model": model,
        "tmp": temp.path,
        "temp": temp,
    }


def finish_model(
    plan_: ZooPlan,
    data: Any,
    params: dict[str, Any],
    dest: Path,
    state: dict[str, Any],
    steps: int,
    device: Any,
    ensemble: int,
    wall_s: float | None = None,
) -> dict[str, Any]:
    """Evaluate ``state["model"]`` (trained, on ``device``), write its files, rename into place."""
    task = plan_.task
    model, temp = state["model"], state["temp"]
    tmp = temp.path
    train_idx, test_idx = state["train_idx"], state["test_idx"]
    try:
        xtr, ytr = data.x[train_idx].to(device), state["train_y"].to(device)
        xte, yte = data.x[test_idx].to(device), data.y[test_idx].to(device)
        train_loss, train_acc = evaluate(task, model, xtr, ytr)
        test_loss, test_acc = evaluate(task, model, xte, yte)
        model.to("cpu")
        _save(model, tmp)
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
            **({"label_noise_changed": len(state["noise"])} if "label_noise" in params else {}),
            "optimizer": OPTIMIZER,
            "device": str(device),
            "ensemble": ensemble,
            "wall_s": round(time.perf_counter() - state["t0"] if wall_s is None else wall_s, 3),
        }
        (tmp / "split.json").write_text(dumps_json({"train": train_idx, "test": test_idx}))
        rec = data_record(task, params, train_idx, test_idx, data, state["train_y"], state["noise"])
        (tmp / "data.json").write_text(dumps_json(rec) + "\n")
        (tmp / "metrics.json").write_text(dumps_json(metrics, indent=2) + "\n")
        write_model_table(tmp)  # p* per matrix of the saved checkpoint (pstar.py)
        temp.commit()
    finally:
        temp.discard()
    return metrics


def train_model(
    plan_: ZooPlan, data: Any, params: dict[str, Any], dest: Path, device: str = "cpu"
) -> dict[str, Any]:
    """Train one grid point alone (``--ensemble 1``) and write its directory ``dest``."""
    torch = extras.torch()

    task = plan_.task
    state = begin_model(task, data, params, dest)
    try:
        dev = torch.device(device)
        xtr, ytr = data.x[state["train_idx"]].to(dev), state["train_y"].to(dev)
        model = state["model"]
        model.to(dev)
        kind, strength = reg_of(params)
        named = dict(model.named_parameters())
        reg_weights = [named[n] for n in penalized_names(model)] if kind != "none" else []
        opt = torch.optim.AdamW(
            model.parameters(), lr=params["lr"], weight_decay=params["weight_decay"], betas=BETAS
        )
        steps = 0
        model.train()
        while True:
            loss = torch.nn.functional.cross_entropy(task.logits(model, xtr), ytr)
            if loss.item() <= plan_.target_loss or steps >= plan_.max_steps:
                break
            opt.zero_grad(set_to_none=True)
            if reg_weights:  # the stopping rule above reads the cross-entropy alone
                loss = loss + penalty(reg_weights, kind, strength)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_NORM)
            opt.step()
            steps += 1
    except BaseException:
        state["temp"].discard()
        raise
    return finish_model(plan_, data, params, dest, state, steps, dev, 1)
