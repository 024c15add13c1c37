"""Protocol v5 over a zoo (SPEC 10): the modal form and the switching share.

A *cell* is the models of equal architecture (depth L, width N, heads H) and equal training-set
size n; a *position* is one matrix of the architecture (layer, matrix type, head). Over the
usable models of a cell (those in models.csv), the modal p* of each position is the most
frequent p* there (ties: the smallest p). Then, per model and per cell:

    spectrum_adaptive_modal = log10( sum_A c(A, modal p*(position of A)) + sqrt(L) )
    p_switch_share(cell)    = #{(model, position): p* != modal p*} / #{(model, position)}

The modal form never looks at a gap; it equals ``spectrum_adaptive`` exactly for a model whose
every p* is its position's modal p*. The per-matrix table ``pstar.csv`` (``PSTAR_COLUMNS``:
model, cell, layer, head, matrix_type, p_star, p_modal) holds every choice, so the shares
(:func:`switch_shares`) are reproducible from a result folder alone. The math is
``measures.spectrum_adaptive`` (``modal_p_star``, ``switching_counts``,
``log_bound_at_grid_points``); this module groups and tabulates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...io.readback import ZOO_DESIGNS
from ...linalg.spectra import MATRIX_TYPES
from ...measures.spectrum_adaptive import (
    FIXED_FORMS,
    MODAL_FORM,
    log_bound_at_grid_points,
    modal_p_star,
    switching_counts,
)
from ...validation import Options
from ..protocol.adaptivity import ADAPTIVITY, AXIS_PREFIX, INERT_SHARE

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DESIGN",
    "FORM_COLUMNS",
    "INERT_SHARE",
    "MODAL_FORM",
    "PSTAR_COLUMNS",
    "PSTAR_CSV",
    "Choices",
    "Modal",
    "adaptivity_measures",
    "cell_label",
    "choices_of",
    "modal_forms",
    "modal_stage",
    "pooled_pstar",
    "switch_shares",
    "v5_stage",
]

#: The per-matrix table of a correlate folder.
PSTAR_CSV = "pstar.csv"
PSTAR_COLUMNS = ("model", "cell", "layer", "head", "matrix_type", "p_star", "p_modal")
#: ``correlate``'s ``design`` parameter: None (the zoo's own) or one of the designs.
DESIGN = (None, Options(*ZOO_DESIGNS))
#: The columns whose values, with heads, make a cell (an axis among them never varies inside).
CELL_COLUMNS = ("depth", "width", "heads", "train_size")
_POSITION = ["layer", "matrix_type", "head"]
#: The forms of the proxy an adaptivity zoo evaluates as measures.
FORM_COLUMNS = (*FIXED_FORMS, MODAL_FORM)


@dataclass(frozen=True)
class Choices:
    """One model's per-matrix choices (``spectra`` order): its architecture, each matrix's
    position, p*, and log c(A, .) over the grid (``Analysis.contribution_curves``)."""

    depth: int
    width: int
    heads: int
    layer: np.ndarray
    head: np.ndarray
    matrix_type: np.ndarray  # names: QK, OV, M_in, M_out
    p_star: np.ndarray
    curves: np.ndarray
    grid: np.ndarray


def choices_of(out: Any) -> Choices | None:
    """The choices of one analyzed model (an ``Analysis``); None for what is not one (a custom
    analyzer's dict of measures), so that model has no modal form and casts no vote."""
    if isinstance(out, dict) or not hasattr(out, "contribution_curves"):
        return None
    s, spec = out.spectra, out.spec
    return Choices(
        int(spec.num_layers),
        int(spec.hidden_size),
        int(spec.num_heads),
        np.asarray(s.layer, dtype=np.int64),
        np.asarray(s.head, dtype=np.int64),
        np.array([MATRIX_TYPES[int(t)] for t in s.matrix_type], dtype=object),
        np.asarray(out.details.p_star, dtype=np.float64),
        np.asarray(out.contribution_curves(), dtype=np.float64),
        np.asarray(out.details.grid, dtype=np.float64),
    )


def cell_label(depth: int, width: int, heads: int, n: float) -> str:
    """A cell's name: ``depth=L width=N heads=H n=<n>`` (``n=?`` when n is unknown)."""
    if not math.isfinite(n):
        return f"depth={depth} width={width} heads={heads} n=?"
    nn = f"{int(n)}" if float(n).is_integer() else f"{n:g}"
    return f"depth={depth} width={width} heads={heads} n={nn}"


@dataclass
class Modal:
    """What :func:`modal_forms` gives: ``values`` log10 B_modal per model (NaN without
    choices), ``pstar`` the per-matrix table (``PSTAR_COLUMNS``), ``shares`` correlate.json's
    ``p_switch_share`` (:func:`switch_shares`)."""

    values: np.ndarray
    pstar: pd.DataFrame
    shares: dict[str, Any]


def _table(names: Sequence[str], choices: Sequence[Choices | None], n: np.ndarray) -> Any:
    import pandas as pd

    frames = []
    for name, c, nn in zip(names, choices, n, strict=True):
        if c is None:
            continue
        frames.append(
            pd.DataFrame(
                {
                    "model": name,
                    "cell": cell_label(c.depth, c.width, c.heads, float(nn)),
                    "layer": c.layer,
                    "head": c.head,
                    "matrix_type": c.matrix_type.astype(str),
                    "p_star": c.p_star,
                }
            )
        )
    if not frames:
        return pd.DataFrame(columns=list(PSTAR_COLUMNS))
    return pd.concat(frames, ignore_index=True)


def _with_modal(pstar: pd.DataFrame) -> pd.DataFrame:
    """``pstar`` with ``p_modal``: per cell and position, the modal p* over the cell's models
    (``measures.spectrum_adaptive.modal_p_star``)."""
    out = pstar.copy()
    out["p_modal"] = np.nan
    for _, idx in out.groupby("cell", sort=False).groups.items():
        part = out.loc[idx]
        wide = part.pivot_table(
            index="model", columns=_POSITION, values="p_star", aggfunc="first", dropna=False
        )
        modal = modal_p_star(wide.to_numpy(dtype=np.float64))
        lookup = dict(zip(wide.columns, modal, strict=True))
        keys = zip(part["layer"], part["matrix_type"], part["head"], strict=True)
        out.loc[idx, "p_modal"] = [lookup[k] for k in keys]
    return out[list(PSTAR_COLUMNS)]


def switch_shares(pstar: pd.DataFrame) -> dict[str, Any]:
    """correlate.json's ``p_switch_share`` from a per-matrix table (``model, cell, layer, head,
    matrix_type, p_star``; ``p_modal`` recomputed): per cell its models, positions, entries,
    switched entries and ``share``; pooled over every entry (``n_entries``, ``n_switched``,
    ``pooled``), ``max_cell_share``, whether every cell is below ``INERT_SHARE``
    (``all_below_inert``) and a one-line ``statement``."""
    t = _with_modal(pstar) if len(pstar) else pstar
    cells: list[dict[str, Any]] = []
    for cell, part in t.groupby("cell", sort=False) if len(t) else ():
        switched, entries = switching_counts(
            part["p_star"].to_numpy(float), part["p_modal"].to_numpy(float)
        )
        cells.append(
            {
                "cell": str(cell),
                "n_models": int(part["model"].nunique()),
                "n_positions": int(part[_POSITION].drop_duplicates().shape[0]),
                "n_entries": entries,
                "n_switched": switched,
                "share": switched / entries if entries else math.nan,
            }
        )
    n_entries = sum(c["n_entries"] for c in cells)
    n_switched = sum(c["n_switched"] for c in cells)
    shares = [c["share"] for c in cells if math.isfinite(c["share"])]
    pooled = n_switched / n_entries if n_entries else math.nan
    top = max(shares) if shares else math.nan
    below = bool(shares) and all(s < INERT_SHARE for s in shares)
    if cells:
        statement = (
            f"{n_switched} of {n_entries} matrix choices ({100 * pooled:.1f}%) differ from "
            f"their cell's modal p* (largest cell share {100 * top:.1f}%, {len(cells)} cells)"
        )
    else:
        statement = "no per-matrix choices, so no switching share"
    return {
        "cells": cells,
        "n_entries": n_entries,
        "n_switched": n_switched,
        "pooled": pooled,
        "max_cell_share": top,
        "inert_share": INERT_SHARE,
        "all_below_inert": below,
        "statement": statement + ".",
    }


def pooled_pstar(tables: Sequence[pd.DataFrame | None], names: Sequence[str]) -> Any:
    """The per-matrix table of a pool: None unless every part has one; one part's as it is;
    several parts' concatenated with each cell named ``<zoo>: <cell>`` (each zoo keeps its own
    cells: its modal form was chosen inside it). Model names as the pooled models table has
    them (the caller renames)."""
    import pandas as pd

    if not tables or any(t is None for t in tables):
        return None
    if len(tables) == 1:
        return tables[0]
    frames = [
        t.assign(cell=[f"{n}: {c}" for c in t["cell"]])
        for t, n in zip(tables, names, strict=True)
        if t is not None
    ]
    return pd.concat(frames, ignore_index=True)[list(PSTAR_COLUMNS)]


def adaptivity_measures(
    models: pd.DataFrame, axes: Sequence[str], measures: Sequence[str]
) -> list[str]:
    """The measures an adaptivity zoo adds (SPEC 10 v5), added to ``models`` where needed: the
    fixed-index and modal forms that are columns, then ``axis:<name>`` = the axis value for each
    numeric axis (not a cell column, not seed) that varies inside some cell of equal
    ``CELL_COLUMNS``. Its sign is the value's: which way the gap goes is read from the other
    replicate by the study."""
    import pandas as pd

    out = [
        c
        for c in FORM_COLUMNS
        if c in models.columns and c not in measures and models[c].notna().any()
    ]
    cells = [c for c in CELL_COLUMNS if c in models.columns]
    key = (
        models[cells].astype(str).agg("|".join, axis=1) if cells else pd.Series([""] * len(models))
    )
    for a in axes:
        if a in CELL_COLUMNS or a == "seed" or a not in models.columns:
            continue
        v = pd.to_numeric(models[a], errors="coerce")
        if v.isna().any():
            continue  # a word-valued axis has no direction to read
        if (v.groupby(key.to_numpy()).nunique() > 1).any():
            models[f"{AXIS_PREFIX}{a}"] = v.to_numpy(float)
            out.append(f"{AXIS_PREFIX}{a}")
    return out


def v5_stage(
    models: pd.DataFrame,
    choices: Sequence[Choices | None],
    design: str | None,
    axes: Sequence[str],
    measures: Sequence[str],
) -> tuple[Modal | None, list[str], list[str]]:
    """Protocol v5 in correlate: the modal form and shares (:func:`modal_stage`), then for an
    adaptivity zoo its added measures (:func:`adaptivity_measures`). Returns (the modal result,
    the measures, the form columns that are no measure)."""
    modal = modal_stage(models, choices)
    measures = list(measures)
    if design == ADAPTIVITY:
        measures += adaptivity_measures(models, axes, measures)
    forms = [c for c in FORM_COLUMNS if c in models.columns and c not in measures]
    return modal, measures, forms


def modal_stage(models: pd.DataFrame, choices: Sequence[Choices | None]) -> Modal | None:
    """The modal form as a column of ``models`` (``MODAL_FORM``; row k's choices
    ``choices[k]``, cells by its ``train_size`` when present) and the switching shares
    (:func:`modal_forms`); None when no model has per-matrix choices."""
    import pandas as pd

    if not any(c is not None for c in choices):
        return None
    n = (
        pd.to_numeric(models["train_size"], errors="coerce").to_numpy(float)
        if "train_size" in models.columns
        else np.full(len(models), np.nan)
    )
    out = modal_forms([str(x) for x in models["model"]], choices, n)
    models[MODAL_FORM] = out.values
    return out


def modal_forms(
    names: Sequence[str], choices: Sequence[Choices | None], train_size: np.ndarray
) -> Modal:
    """The modal form of every model, the per-matrix table and the switching shares (module
    doc). ``train_size[k]``: model k's n (NaN when unknown); cells group by it."""
    n = np.asarray(train_size, dtype=np.float64)
    pstar = _with_modal(_table(names, choices, n))
    values = np.full(len(names), np.nan)
    modal_of = {
        name: part["p_modal"].to_numpy(float) for name, part in pstar.groupby("model", sort=False)
    }
    for k, (name, c) in enumerate(zip(names, choices, strict=True)):
        if c is None or name not in modal_of:
            continue
        values[k] = log_bound_at_grid_points(c.curves, c.grid, modal_of[name], c.depth) / math.log(
            10.0
        )
    return Modal(values, pstar, switch_shares(pstar))
