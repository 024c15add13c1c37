"""What data a zoo model saw: ``MODEL/data.json`` and :func:`training_data` (SPEC 12).

Each model directory records its task, the size-axis value and seed that drew its split, the
exact train and test indices into the task's deterministic data set (``task.data()``), and the
SHA-256 of the training inputs and labels as training used them. ``training_data(model_dir)``
rebuilds them and checks the checksums, so a third party recomputes on exactly those examples
(and learns it at once if the task's data ever changed).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ...errors import SpecboundError
from .tasks import get_task

DATA_FILE = "data.json"
FORMAT = 1


def tensor_sha256(t: Any) -> str:
    """SHA-256 of a CPU tensor's dtype, shape and bytes (C order)."""
    arr = t.detach().cpu().contiguous().numpy()
    h = hashlib.sha256(f"{arr.dtype.str}{tuple(arr.shape)}".encode())
    h.update(arr.tobytes())
    return h.hexdigest()


def data_record(
    task: Any,
    params: dict[str, Any],
    train_idx: list[int],
    test_idx: list[int],
    data: Any,
    train_y: Any = None,
    noise: list[int] | None = None,
) -> dict[str, Any]:
    """The content of data.json for one model (see module doc). ``train_y``: the training
    labels as training used them (``label_noise`` applied; None: the task's); ``noise``: the
    positions (into the training list) whose labels were replaced, recorded with their new
    labels under ``label_noise`` when the grid has that axis."""
    labels = data.y[train_idx] if train_y is None else train_y
    rec = {
        "format": FORMAT,
        "task": task.name,
        "size_axis": task.size_axis,
        "size": params[task.size_axis],
        "seed": params["seed"],
        "num_examples": len(data.y),
        "train": list(train_idx),
        "test": list(test_idx),
        "sha256": {
            "train_inputs": tensor_sha256(data.x[train_idx]),
            "train_labels": tensor_sha256(labels),
            "test_inputs": tensor_sha256(data.x[test_idx]),
            "test_labels": tensor_sha256(data.y[test_idx]),
        },
    }
    if "label_noise" in params:
        pos = list(noise or [])
        rec["label_noise"] = {
            "rate": params["label_noise"],
            "positions": pos,
            "labels": [int(labels[i]) for i in pos],
        }
    return rec


def _record(model_dir: Path) -> dict[str, Any]:
    path = model_dir / DATA_FILE
    try:
        rec = json.loads(path.read_text())
    except FileNotFoundError:
        raise SpecboundError(
            f"{model_dir} has no {DATA_FILE}: not a model trained by 'specbound zoo train' "
            "(or by a version before data records); retrain it"
        ) from None
    except (OSError, ValueError) as exc:
        raise SpecboundError(f"{path} is not valid JSON ({type(exc).__name__})") from None
    ok = (
        isinstance(rec, dict)
        and isinstance(rec.get("task"), str)
        and all(
            isinstance(rec.get(k), list) and all(type(i) is int for i in rec[k])
            for k in ("train", "test")
        )
        and isinstance(rec.get("sha256"), dict)
    )
    if not ok:
        raise SpecboundError(f"{path} lacks task, train/test indices or checksums; retrain it")
    return rec


def task_of(model_dir: str | os.PathLike[str]) -> Any:
    """The registered task a zoo model was trained on (from its validated ``data.json``)."""
    return get_task(_record(Path(model_dir))["task"])


def split_data(model_dir: str | os.PathLike[str], part: str = "train") -> tuple[Any, Any]:
    """``(inputs, labels)`` of the ``part`` ("train" or "test") split of a zoo model."""
    if part not in ("train", "test"):
        raise SpecboundError(f"part must be 'train' or 'test', not {part!r}")
    d = Path(model_dir)
    rec = _record(d)
    task = get_task(rec["task"])
    data = task.data()
    idx = rec[part]
    n = len(data.y)
    if rec.get("num_examples") != n or any(not 0 <= i < n for i in idx):
        raise SpecboundError(
            f"{d / DATA_FILE}: indices do not fit task '{task.name}' ({n} examples); "
            "the task's data changed since training"
        )
    x, y = data.x[idx], data.y[idx]
    noise = rec.get("label_noise")
    if part == "train" and noise is not None:  # the labels as training used them
        pos, new = noise.get("positions"), noise.get("labels")
        ok = (
            isinstance(pos, list)
            and isinstance(new, list)
            and len(pos) == len(new)
            and all(type(i) is int and 0 <= i < len(idx) for i in pos)
            and all(type(c) is int for c in new)
        )
        if not ok:
            raise SpecboundError(
                f"{d / DATA_FILE}: label_noise must list positions into the training set and "
                "their labels; retrain it"
            )
        y = y.clone()
        y[pos] = data.y.new_tensor(new)
    sums = rec["sha256"]
    if (tensor_sha256(x), tensor_sha256(y)) != (
        sums.get(f"{part}_inputs"),
        sums.get(f"{part}_labels"),
    ):
        raise SpecboundError(
            f"{d / DATA_FILE}: the rebuilt {part} data of task '{task.name}' differ from what "
            "training used (checksum); the task's data changed since training"
        )
    return x, y


def training_data(model_dir: str | os.PathLike[str]) -> tuple[Any, Any]:
    """``(inputs, labels)`` torch tensors exactly as training used them (checksum-verified).

    Inputs are what the task's model takes (``task.logits(model, inputs)``: token ids for the
    BERT tasks, ``pixel_values`` for digits); labels are class indices (int64).
    """
    return split_data(model_dir, "train")


def test_data(model_dir: str | os.PathLike[str]) -> tuple[Any, Any]:
    """``(inputs, labels)`` of the model's test split (checksum-verified)."""
    return split_data(model_dir, "test")


test_data.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
