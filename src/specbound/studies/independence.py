"""Which result folders of a study share trained models (SPEC 10, protocols v4 and v5): two
folders share a model when their task, their effective recipe (``RECIPE_KEYS``, from
correlate.json or the zoo.json beside the manifest; a field only one side records does not tell
models apart), and a model's configuration (the hyperparameter columns both have) and seed agree,
whatever the CPU that retrained it.

Effective recipe (v5): a recipe key separates two zoos only where it changed some model's
training. A step cap (``max_steps``) that differs separates them only when some model of either
zoo trained for at least the smaller cap (``steps``, from the zoo.csv beside the manifest, every
model converged or not; else from models.csv, and then only when no model was skipped as
unconverged, since such a model ran to its cap); a cap no model reached changed nothing. Any other
recipe key that differs (``target_loss``: the stopping rule every converged model met) separates
them. ``independence`` orders the folders (single zoos before pooled folders, more
models first, replicates, then the order given) and lets a folder join the family only when it
shares no model with a member."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .correlate.manifest import read_zoo
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
    steps = {p: most_steps(p, read[p][0], read[p][2]) for p in paths}

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
        shared = [(q, _shared(p, q, keys, recipe, read, steps)) for q in family]
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
    steps: dict[Path, float | None] | None = None,
) -> int:
    """How many trained models the folders ``p`` and ``q`` share (module doc): 0 when their
    task or a recipe field both record separates them (``separates``), else the models of ``p``
    whose values on the hyperparameter columns both have, and seed, match a model of ``q``."""
    if read[p][0].get("task") != read[q][0].get("task"):
        return 0
    rp, rq = recipe[p], recipe[q]
    most = steps or {}
    if any(
        separates(k, rp[k], rq[k], most.get(p), most.get(q)) for k in sorted(rp.keys() & rq.keys())
    ):
        return 0
    (cp, sp, kp), (cq, sq, kq) = keys[p], keys[q]
    common = [c for c in cp if c in cq]
    ip = [cp.index(c) for c in common] + ([len(cp)] if sp and sq else [])
    iq = [cq.index(c) for c in common] + ([len(cq)] if sp and sq else [])
    other = {tuple(k[j] for j in iq) for k in kq}
    return sum(tuple(k[j] for j in ip) in other for k in kp)


def separates(key: str, a: Any, b: Any, steps_a: float | None, steps_b: float | None) -> bool:
    """Whether the recipe field ``key`` (values ``a``, ``b`` in two zoos) tells their models
    apart (SPEC 10 v5: only where it changed some model's training). ``steps_a``, ``steps_b``:
    the most steps any model of each zoo trained (None: unknown). A ``max_steps`` that differs
    separates unless both are known and below the smaller cap; any other differing key does."""
    if a == b:
        return False
    if key == "max_steps" and steps_a is not None and steps_b is not None:
        try:
            cap = min(float(a), float(b))
        except (TypeError, ValueError):
            return True
        return not max(steps_a, steps_b) < cap
    return True


def most_steps(
    folder: Path, meta: dict[str, Any], models: pd.DataFrame | None = None
) -> float | None:
    """The most steps any model of the folder's zoo trained: from the zoo.csv beside its
    manifest (every model, converged or not), else from models.csv's ``steps`` when no model was
    left out as unconverged (``n_unconverged`` 0); None when unknown."""
    import pandas as pd

    zoo_dir = _zoo_dir(folder, meta)
    table = None
    if zoo_dir is not None and (zoo_dir / "zoo.csv").is_file():
        table = read_zoo(zoo_dir).table
    elif models is not None and int(meta.get("n_unconverged", 1) or 0) == 0:
        table = models
    if table is None or "steps" not in table.columns or not len(table):
        return None
    s = pd.to_numeric(table["steps"], errors="coerce").to_numpy(float)
    return float(s.max()) if s.size and not pd.isna(s).any() else None


def _zoo_dir(folder: Path, meta: dict[str, Any]) -> Path | None:
    """The zoo directory of the manifest a folder records (looked up from the folder's parents
    and the working directory); None for a pooled folder, a manifest CSV or when not found."""
    manifest = str(meta.get("manifest") or "")
    if not manifest or " + " in manifest:
        return None
    zoo_dir = Path(manifest).parent if manifest.endswith(".csv") else Path(manifest)
    for base in [*folder.resolve().parents, Path.cwd()]:
        if (base / zoo_dir / "zoo.json").is_file():
            return base / zoo_dir
    return None


def _recipe(folder: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The recipe fields (``RECIPE_KEYS``) of a folder: ``meta["recipe"]`` when recorded, else
    those of the zoo.json beside its manifest (the manifest's folder looked up from the folder's
    parents and the working directory); {} when unknown (a pooled folder, a manifest CSV)."""
    rec = meta.get("recipe")
    if isinstance(rec, dict):
        return {k: rec[k] for k in RECIPE_KEYS if k in rec}
    zoo_dir = _zoo_dir(folder, meta)
    if zoo_dir is None:
        return {}
    z = read_zoo_json(zoo_dir / "zoo.json")
    return {k: z[k] for k in RECIPE_KEYS if k in z}
