"""Which folders of a study share trained models (SPEC 10, protocols v4 and v5): pure, no files.

Two folders share a model when their task, their effective recipe (``RECIPE_KEYS``; a field
only one side records does not tell models apart), and a model's configuration (the
hyperparameter columns both have) and seed agree, whatever the CPU that retrained it.

Effective recipe (v5): a recipe key separates two zoos only where it changed some model's
training (:func:`separates`). A step cap (``max_steps``) that differs separates them only when
some model of either zoo trained for at least the smaller cap (``Trained.most_steps``); a cap no
model reached changed nothing. Any other recipe key that differs (``target_loss``: the stopping
rule every converged model met) separates them.

:func:`independence` orders the folders (single zoos before pooled folders, more models first,
replicates, then the order given) and lets a folder join the family only when it shares no model
with a member. What each folder holds (:class:`Trained`) is read by the caller
(``studies.correlate.multizoo.folders``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pandas as pd

#: The training settings of a zoo.json that make two retrainings the same model (with task,
#: configuration and seed); the preset only selects grid points, so it is not one of them.
RECIPE_KEYS = ("max_steps", "target_loss")
#: Columns of models.csv that are hyperparameters besides the folders' axes (the size axis of a
#: fixed-n zoo is no axis there, yet tells models apart).
SIZE_COLUMNS = ("train_size", "train_fraction")

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Trained:
    """What one folder says about the models it was computed from."""

    #: The zoo task (None: unknown).
    task: Any
    #: The folder's axes (``seed`` among them is not a hyperparameter).
    axes: tuple[str, ...]
    #: Its models.csv (the hyperparameter columns and ``seed`` are used).
    models: pd.DataFrame
    #: Its recipe fields (``RECIPE_KEYS``) where known.
    recipe: Mapping[str, Any] = field(default_factory=dict)
    #: The most steps any model of its zoo trained (None: unknown).
    most_steps: float | None = None
    #: Whether it pools several zoos (it joins the family after the single zoos).
    pooled: bool = False
    #: Whether it is a replicate of a replicate group (before the single folders of its size).
    replicate: bool = False


def independence(folders: Mapping[K, Trained]) -> dict[K, tuple[K, int] | None]:
    """Per folder (in the order given), None when it joins the study's family, else ``(the
    family folder it shares most models with, the count of shared models)`` (module doc: the
    order and the identity of a model)."""
    hyper = sorted(
        {str(a) for t in folders.values() for a in t.axes if a != "seed"} | set(SIZE_COLUMNS)
    )
    keys = {k: _model_keys(t.models, hyper) for k, t in folders.items()}
    given = list(folders)
    order = sorted(
        range(len(given)),
        key=lambda i: (
            folders[given[i]].pooled,
            -len(folders[given[i]].models),
            not folders[given[i]].replicate,
            i,
        ),
    )
    family: list[K] = []
    out: dict[K, tuple[K, int] | None] = {}
    for i in order:
        p = given[i]
        shared = [(q, _shared(folders[p], folders[q], keys[p], keys[q])) for q in family]
        best = max(shared, key=lambda t: t[1], default=None)
        if best is None or best[1] == 0:
            family.append(p)
            out[p] = None
        else:
            out[p] = best
    return {p: out[p] for p in given}


Keys = tuple[list[str], bool, set[tuple[Any, ...]]]


def _model_keys(models: pd.DataFrame, hyper: list[str]) -> Keys:
    """(the hyperparameter columns models.csv has, whether it has a seed column, one key per
    model: their values and the seed, numbers as floats)."""
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


def _shared(p: Trained, q: Trained, kp: Keys, kq: Keys) -> int:
    """How many trained models ``p`` and ``q`` share (module doc): 0 when their task or a
    recipe field both record separates them (:func:`separates`), else the models of ``p`` whose
    values on the hyperparameter columns both have, and seed, match a model of ``q``."""
    if p.task != q.task:
        return 0
    rp, rq = p.recipe, q.recipe
    both = sorted(rp.keys() & rq.keys())
    if any(separates(k, rp[k], rq[k], p.most_steps, q.most_steps) for k in both):
        return 0
    (cp, sp, models_p), (cq, sq, models_q) = kp, kq
    common = [c for c in cp if c in cq]
    ip = [cp.index(c) for c in common] + ([len(cp)] if sp and sq else [])
    iq = [cq.index(c) for c in common] + ([len(cq)] if sp and sq else [])
    other = {tuple(k[j] for j in iq) for k in models_q}
    return sum(tuple(k[j] for j in ip) in other for k in models_p)


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
