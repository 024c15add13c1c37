"""The zoo directory: what specbound wrote there, the lock, zoo.json, zoo.csv, finished models.

Rules (the output-folder rules of ``specbound.io``, for a folder that grows model by model):

- ``ZOO/.specbound-manifest.json`` (``{"written_by", "kind": "zoo", "files", "dirs",
  "sha256"}``) says which top-level files specbound wrote and their checksums. A non-empty
  ``--out`` without it is refused (it is not a zoo of ours); a zoo.json or zoo.csv whose bytes
  differ from the recorded checksum was edited or replaced by someone else and is refused, never
  overwritten. Files specbound did not write are never touched (a user's ``.lock`` included:
  ours is ``.specbound-zoo.lock``, opened without truncation).
- zoo.json records the plan (task, preset, grid, stopping rule); a re-run with another plan is
  refused with one line naming what changed (train it into a new ``--out``).
- A model directory counts as finished only when every file is there and metrics.json is valid
  and agrees with the plan; anything else is one ``error:`` line naming the directory.
- OSErrors (read-only or full file system, permissions) become one-line ``SpecboundError``s.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...errors import Param, SpecboundError
from ...io.files import csv_text, dumps_json, output_file_kind, refuse_overlap
from ...io.growing import GrowingDir
from ...io.outdir import MANIFEST, sweep_stale
from ...io.readback import read_zoo_json
from .plan import ZooPlan, model_name
from .pstar import COLUMNS as PSTAR_COLUMNS

#: The marker inside a model temp dir written by earlier specbound versions
#: (``models/.NAME.XXXX.tmp``): such leftovers are still removed, only those holding it (a
#: user's ``models/.notes.tmp`` is kept). Model temps are now ``io.outdir.TempDir``s.
TMP_MARKER = ".specbound-model-tmp"


def remove_stale_temps(models: Path) -> list[Path]:
    """Remove the temp dirs specbound left in ``models`` (killed runs): owner-marked temps
    whose writer is gone (``io.outdir.sweep_stale``) and earlier versions' ``.*.tmp`` dirs
    holding :data:`TMP_MARKER`; the caller holds the zoo lock. Returns them."""
    import shutil

    gone = sweep_stale(models)
    for stale in models.glob(".*.tmp"):
        if stale.is_dir() and not stale.is_symlink() and (stale / TMP_MARKER).is_file():
            shutil.rmtree(stale, ignore_errors=True)
            gone.append(stale)
    return gone


LOCK = ".specbound-zoo.lock"
#: Files every finished model directory holds.
MODEL_FILES = (
    "config.json",
    "model.safetensors",
    "init/config.json",
    "init/model.safetensors",
    "split.json",
    "data.json",
    "metrics.json",
)
METRIC_KEYS = {
    "task": str,
    "hyperparameters": dict,
    "train_size": int,
    "test_size": int,
    "train_loss": float,
    "test_loss": float,
    "train_acc": float,
    "test_acc": float,
    "steps": int,
    "max_steps": int,
    "target_loss": float,
    "converged": bool,
    "wall_s": float,
}
CSV_COLUMNS = [
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
]


def os_error(path: Path, exc: OSError) -> SpecboundError:
    """One line for a failed write: the path and the OS's reason (``No space left on device``,
    ``Read-only file system``, ...; an OSError without an errno: its own text)."""
    reason = exc.strerror or " ".join(str(exc).split()) or type(exc).__name__
    where = exc.filename or path
    return SpecboundError(
        f"cannot write the zoo {path} ({where}: {reason}); free space, fix permissions "
        "or choose another ",
        Param("out"),
    )


def _folder(out: Path) -> GrowingDir:
    """The zoo as a growing folder (``io.growing``): zoo.json and zoo.csv checksummed."""
    return GrowingDir(
        out, kind="zoo", files=("zoo.json", "zoo.csv", "pstar.csv"), dirs=("models",), lock=LOCK
    )


def check_zoo(out: Path, plan_: ZooPlan, inputs: Sequence[str | os.PathLike[str]] = ()) -> bool:
    """Refuse an ``--out`` specbound may not write (module doc) or one that is, lies inside or
    contains one of ``inputs`` (the grid file: ``io.files.refuse_overlap``); True when it is a
    new zoo."""
    try:
        return _check_zoo(out, plan_, inputs)
    except OSError as exc:  # a name longer than the file system allows, permissions
        raise os_error(out, exc) from None


def _check_zoo(out: Path, plan_: ZooPlan, inputs: Sequence[str | os.PathLike[str]]) -> bool:
    refuse_overlap(out, inputs)
    kind = output_file_kind(out)
    if kind is not None and kind != "a directory":
        raise SpecboundError(
            Param("out", str(out)), f" exists and is {kind}, not a directory; choose another path"
        )
    if not out.is_dir():
        if out.exists():  # a regular file
            raise SpecboundError(
                Param("out", str(out)), " exists and is not a directory; choose another path"
            )
        return True
    try:
        entries = {p.name for p in out.iterdir()}
    except OSError as exc:
        raise os_error(out, exc) from None
    if not entries:
        return True
    zoo = _folder(out)
    if zoo.manifest() is None:
        raise SpecboundError(
            Param("out", str(out)),
            f" is not empty and is not a zoo written by specbound (no valid {MANIFEST})"
            "; choose a new or empty directory: specbound never overwrites files it did not write",
        )
    changed = zoo.changed()
    if changed:
        raise SpecboundError(
            f"{out / changed[0]} was changed since specbound wrote it; move it away "
            "(specbound never overwrites files it did not write) or choose another ",
            Param("out"),
        )
    meta_path = out / "zoo.json"
    if not meta_path.is_file():
        return True  # a zoo whose first run stopped before writing zoo.json
    old = read_zoo_json(meta_path)  # checksummed (ours), and read as every zoo.json is
    if old.get("task") != plan_.task.name:
        raise SpecboundError(
            f"{out} holds a zoo of task '{old.get('task')}', not '{plan_.task.name}'; "
            "choose another ",
            Param("out"),
        )
    new = plan_.record()
    for key in ("preset", "grid", "max_steps", "target_loss", "design", "cells"):
        if old.get(key) != new.get(key):
            raise SpecboundError(
                f"{out} was trained with {key} {json.dumps(old.get(key))}, this run asks "
                f"{json.dumps(new.get(key))}; a zoo holds one plan: re-run with the same preset, "
                "grid and stopping rule, or train into a new ",
                Param("out"),
            )
    return False


@contextlib.contextmanager
def lock(out: Path) -> Iterator[None]:
    """Hold ``ZOO/.specbound-zoo.lock`` (flock; created, never truncated) while writing."""

    def busy() -> SpecboundError:
        return SpecboundError(
            f"another 'zoo train' is writing to {out}; wait for it or choose another ",
            Param("out"),
        )

    with _folder(out).locked(busy):
        yield


def write_meta(out: Path, plan_: ZooPlan, grid_source: str | None) -> None:
    """ZOO/zoo.json: the plan record plus descriptive fields (axes, size axis, model count)."""
    (out / "models").mkdir(parents=True, exist_ok=True)
    meta = {
        **plan_.record(),
        "description": plan_.task.description,
        "axes": list(plan_.axis_names),
        "size_axis": plan_.task.size_axis,
        "grid_file": grid_source,
        "num_models": len(plan_.points()),
    }
    text = dumps_json(meta, indent=2) + "\n"
    old = out / "zoo.json"
    if old.is_file():  # keep the first run's grid_file text: only the plan must match
        prev = read_zoo_json(old)
        meta["grid_file"] = prev.get("grid_file", grid_source)
        text = dumps_json(meta, indent=2) + "\n"
        if old.read_text() == text:
            return
    _folder(out).write("zoo.json", text)


def _damaged(dest: Path, why: str) -> SpecboundError:
    return SpecboundError(
        f"{dest} is not a finished model ({why}); move it away (or delete it) and re-run"
    )


def finished_metrics(dest: Path, params: dict[str, Any], plan_: ZooPlan) -> dict[str, Any] | None:
    """metrics.json of a finished model directory, None when ``dest`` does not exist yet.

    A directory with a missing file, unreadable or incomplete metrics.json, or metrics that
    disagree with the grid point or the plan is refused with one line (never counted done).
    """
    if not dest.exists() and not dest.is_symlink():
        return None
    if not dest.is_dir():
        raise _damaged(dest, "not a directory")
    for f in MODEL_FILES:
        if not (dest / f).is_file():
            raise _damaged(dest, f"no {f}")
    try:
        m = json.loads((dest / "metrics.json").read_text())
    except (OSError, ValueError) as exc:
        raise _damaged(dest, f"metrics.json is not valid JSON: {type(exc).__name__}") from None
    if not isinstance(m, dict):
        raise _damaged(dest, "metrics.json is not a JSON object")
    for key, typ in METRIC_KEYS.items():
        v = m.get(key)
        ok = isinstance(v, typ) and not (typ is int and isinstance(v, bool))
        if typ is float:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        if not ok:
            raise _damaged(dest, f"metrics.json lacks a valid '{key}'")
    if m["hyperparameters"] != params:
        raise _damaged(dest, "metrics.json holds other hyperparameters than its name says")
    if (m["max_steps"], m["target_loss"], m["task"]) != (
        plan_.max_steps,
        plan_.target_loss,
        plan_.task.name,
    ):
        raise _damaged(dest, "metrics.json was trained under another stopping rule or task")
    return m


def manifest_row(name: str, m: dict[str, Any], axes: tuple[str, ...]) -> dict[str, Any]:
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


def write_csv(out: Path, plan_: ZooPlan, done: dict[str, dict[str, Any]]) -> Any:
    """(Re)write ZOO/zoo.csv: one row per finished model of the plan, in grid order."""
    import pandas as pd

    axes = plan_.axis_names
    rows = [
        manifest_row(n, done[n], axes) for n in (model_name(p) for p in plan_.points()) if n in done
    ]
    cols = [*CSV_COLUMNS, *[a for a in axes if a != "train_size"]]
    df = pd.DataFrame(rows, columns=cols)
    text = csv_text(df)
    if (out / "zoo.csv").is_file() and (out / "zoo.csv").read_text() == text:
        return df
    _folder(out).write("zoo.csv", text)
    return df


def write_pstar(out: Path, plan_: ZooPlan, done: dict[str, dict[str, Any]], tables: Any) -> Any:
    """(Re)write ZOO/pstar.csv: every finished model's per-matrix p* table (``pstar.py``), in
    grid order, ``model`` (``models/<name>``, as zoo.csv) first. ``tables``: name -> the
    model's table (read by the caller, ``pstar.read_model_table``)."""
    import pandas as pd

    frames = []
    for n in (model_name(p) for p in plan_.points()):
        if n in done and n in tables:
            t = tables[n].copy()
            t.insert(0, "model", f"models/{n}")
            frames.append(t)
    df = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["model", *PSTAR_COLUMNS])
    )
    text = csv_text(df)
    if (out / "pstar.csv").is_file() and (out / "pstar.csv").read_text() == text:
        return df
    _folder(out).write("pstar.csv", text)
    return df
