"""Within architecture (SPEC 10, protocol v4): tau_arch, the mean over cells of equal depth,
width and training-set size n of Kendall tau-b within the cell (cells with >= 3 models and a
defined tau-b; a measure constant inside a cell has none there: the cell is "at the ceiling"),
and the bootstrap that resamples configurations within each cell."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .stats import as_codes, members, nanmean_rows, ratio, row_ids, set_sums

#: The axes whose values, with the training-set size n, make a cell of tau_arch.
CELL_AXES = ("depth", "width")


@dataclass(frozen=True)
class ArchStats:
    """tau_arch per row of the weights, and (from the models as they are) the cells used (>= 3
    models and a defined tau-b) and the cells at the ceiling (>= 3 models, the measure constant
    inside: no tau-b)."""

    tau_arch: np.ndarray
    cells_used: int
    cells_at_ceiling: int


def arch_cells(cell_codes: np.ndarray) -> tuple[np.ndarray, ...]:
    """Index arrays of the models of each cell (one distinct row of ``cell_codes``: the depth,
    width and n of each model), in cell order."""
    return tuple(members(row_ids(as_codes(cell_codes, len(cell_codes)))))


def tau_arch(
    mu: np.ndarray,
    g: np.ndarray,
    cells: Sequence[np.ndarray],
    config: np.ndarray,
    w: np.ndarray,
    resample: bool = False,
) -> ArchStats:
    """tau_arch = mean over the cells of Kendall tau-b within the cell (SPEC 10, protocol v4),
    for each row of ``w`` (draws x models; ``config``: each model's configuration).

    A cell enters when it holds >= 3 models (weighted, in a resample) and its tau-b is defined.
    In a resample (configurations drawn within each cell, :func:`cell_config_counts`) a
    configuration drawn c times weighs its models c, a pair across configurations c_a c_b, a pair
    inside one c (1 - 1/K_cell) (SPEC "Pair weights in a resample", with K the configurations of
    the cell; ``resample`` False: every pair at weight 1, the point estimate with ``w = 1``).
    The counts of cells used and at the ceiling are
    those of the models as they are."""
    mu = np.asarray(mu, dtype=float)
    g = np.asarray(g, dtype=float)
    w = np.atleast_2d(np.asarray(w, dtype=float))
    config = np.asarray(config, dtype=np.int64)
    rows = w.shape[0]
    n_conf = int(config.max()) + 1 if config.size else 0
    cw = np.zeros((rows, n_conf))
    within = np.ones(n_conf)
    for idx in cells:
        confs = np.unique(config[idx])
        within[confs] = 1.0 - 1.0 / confs.size
        for c in confs:
            cw[:, c] = w[:, idx[config[idx] == c][0]]
    extra = cw * cw - (within * cw if resample else cw)
    vals, used, ceiling = [], 0, 0
    for idx in cells:
        if idx.size < 3:
            continue
        s, ux, uy, _ = set_sums(mu, g, config, w, extra, idx)
        t = ratio(s, np.sqrt(ux * uy))
        t[w[:, idx].sum(axis=1) < 3] = np.nan
        vals.append(t)
        if np.unique(mu[idx]).size == 1:
            ceiling += 1
        elif np.unique(g[idx]).size > 1:
            used += 1
    return ArchStats(nanmean_rows(vals, rows), used, ceiling)


def cell_config_counts(cell_of_config: np.ndarray, draws: int, seed: int) -> np.ndarray:
    """Counts (draws x configurations) of ``draws`` resamples of the configurations *within each
    cell*: a cell of K configurations draws K of its own with replacement (one uniform per slot,
    ``numpy.random.default_rng(seed).random((draws, configurations))``, mapped onto the slot's
    cell), so every cell keeps its number of configurations."""
    cell = np.asarray(cell_of_config, dtype=np.int64)
    k = cell.size
    if k == 0:
        return np.zeros((draws, 0))
    order = np.argsort(cell, kind="stable")  # configurations grouped by cell
    sizes = np.bincount(cell)
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    u = np.random.default_rng(seed).random((draws, k))
    slot_cell = cell[order]  # the cell of each slot, in grouped order
    pick = start[slot_cell] + np.minimum(
        (u * sizes[slot_cell]).astype(np.int64), sizes[slot_cell] - 1
    )
    drawn = order[pick]  # configuration ids drawn, draws x slots
    flat = (drawn + k * np.arange(draws)[:, None]).ravel()
    return np.bincount(flat, minlength=draws * k).reshape(draws, k).astype(float)
