"""Which result folders of a study share trained models (SPEC 10, protocol v4): two folders
share a model when their task, their recipe (``RECIPE_KEYS``, from correlate.json or the zoo.json
beside the manifest; a field only one side records does not tell models apart), and a model's
configuration (the hyperparameter columns both have) and seed agree, whatever the CPU that
retrained it. ``independence`` orders the folders (single zoos before pooled folders, more
models first, replicates, then the order given) and lets a folder join the family only when it
shares no model with a member."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .readback import read_zoo_json

if TYPE_CHECKING:
    import pandas as pd

#: The training settings of a zoo.json that make two retrainings the same model (with task,
#: configuration and seed); the preset only selects grid points, so it is not one of them.
RECIPE_KEYS = ("max_steps", "target_loss")
#: Columns of models.csv that are hyperparameters besides the folders' axes (the size axis of a
#: fixed-n zoo is no axis there, yet tells models apart).
SIZE_COLUMNS = ("train_size", "train_fraction")


Read = dict[Path, tuple[dict[str, Any], "pd.DataFrame", "pd.DataFrame"]]


def independence(
    paths: Sequence[Path], read: Read, role: dict[Path, tuple[str, str]]
) -> dict[Path, tuple[Path, int] | None]:
    """Per folder, None when it joins the study's family, else ``(the family folder it shares
    most models with, the count of shared models)`` (module doc: the order and the identity of
    a model)."""
    hyper = sorted(
        {str(a) for p in paths for a in read[p][0].get("axes") or [] if a != "seed"}
        | set(SIZE_COLUMNS)
    )
    keys = {p: _model_keys(p, read[p], hyper) for p in paths}
    recipe = {p: _recipe(p, read[p][0]) for p in paths}

    def pooled(p: Path) -> bool:
        return role.get(p, ("", ""))[0] == "pooled" or len(read[p][0].get("zoos") or []) >= 2

    order = sorted(
        range(len(paths)),
        key=lambda i: (
            pooled(paths[i]),
            -len(read[paths[i]][2]),
            role.get(paths[i], ("single", ""))[0] != "replicate",
            i,
        ),
    )
    family: list[Path] = []
    out: dict[Path, tuple[Path, int] | None] = {}
    for i in order:
        p = paths[i]
        shared = [(q, _shared(p, q, keys, recipe, read)) for q in family]
        best = max(shared, key=lambda t: t[1], default=None)
        if best is None or best[1] == 0:
            family.append(p)
            out[p] = None
        else:
            out[p] = best
    return {p: out[p] for p in paths}


def _model_keys(
    p: Path, r: tuple[dict[str, Any], pd.DataFrame, pd.DataFrame], hyper: list[str]
) -> tuple[list[str], bool, set[tuple[Any, ...]]]:
    """(the hyperparameter columns models.csv has, whether it has a seed column, one key per
    model: their values and the seed, numbers as floats)."""
    models = r[2]
    cols = [c for c in hyper if c in models.columns]
    has_seed = "seed" in models.columns
    use = [*cols, "seed"] if has_seed else cols
    rows = models[use].itertuples(index=False, name=None) if len(models) else []
    return cols, has_seed, {tuple(_norm(v) for v in row) for row in rows}


def _norm(v: Any) -> Any:
    """A cell as a comparable value: numbers (and numeric text) as floats."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def _shared(
    p: Path,
    q: Path,
    keys: dict[Path, tuple[list[str], bool, set[tuple[Any, ...]]]],
    recipe: dict[Path, dict[str, Any]],
    read: Read,
) -> int:
    """How many trained models the folders ``p`` and ``q`` share (module doc): 0 when their
    task or a recipe field both record differs, else the models of ``p`` whose values on the
    hyperparameter columns both have, and seed, match a model of ``q``."""
    if read[p][0].get("task") != read[q][0].get("task"):
        return 0
    rp, rq = recipe[p], recipe[q]
    if any(rp[k] != rq[k] for k in rp.keys() & rq.keys()):
        return 0
    (cp, sp, kp), (cq, sq, kq) = keys[p], keys[q]
    common = [c for c in cp if c in cq]
    ip = [cp.index(c) for c in common] + ([len(cp)] if sp and sq else [])
    iq = [cq.index(c) for c in common] + ([len(cq)] if sp and sq else [])
    other = {tuple(k[j] for j in iq) for k in kq}
    return sum(tuple(k[j] for j in ip) in other for k in kp)


def _recipe(folder: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The recipe fields (``RECIPE_KEYS``) of a folder: ``meta["recipe"]`` when recorded, else
    those of the zoo.json beside its manifest (the manifest's folder looked up from the folder's
    parents and the working directory); {} when unknown (a pooled folder, a manifest CSV)."""
    rec = meta.get("recipe")
    if isinstance(rec, dict):
        return {k: rec[k] for k in RECIPE_KEYS if k in rec}
    manifest = str(meta.get("manifest") or "")
    if not manifest or " + " in manifest:
        return {}
    zoo_dir = Path(manifest).parent if manifest.endswith(".csv") else Path(manifest)
    for base in [*folder.resolve().parents, Path.cwd()]:
        f = base / zoo_dir / "zoo.json"
        if f.is_file():
            z = read_zoo_json(f)
            return {k: z[k] for k in RECIPE_KEYS if k in z}
    return {}
