"""The correlation protocol of SPEC 10: does a measure rank a zoo's generalization gaps?

The statistics are pure functions of arrays (measure values ``mu``, gaps ``g``, integer codes of
the hyperparameter axes, one row per model) or of one table with a row per model;
``correlate`` is the I/O edge that reads a manifest, analyzes every model and builds that table.

For a measure mu over the models where it is defined (finite):

- Kendall tau: tau-b of (mu, g) (``scipy.stats.kendalltau``);
- granulated Psi (Jiang et al. 2020, eq. 4): for axis i, psi_i = mean over groups of models that
  share every other axis value (>= 2 models, tau defined) of tau in the group; Psi = mean of the
  defined psi_i;
- CMI: over ordered pairs (a, b), a != b, with g_a != g_b, V_mu = [mu_a - mu_b > 0] (a tie counts
  as -), V_g = [g_a - g_b > 0]; for a set S of axes the cell of a pair is (theta_S(a), theta_S(b))
  and CMI_S = sum_u p(u) I(V_mu; V_g | u) / sum_u p(u) H(V_g | u), logs base 2. Reported: the
  minimum over |S| <= 2 (the empty set included; S where the denominator is 0 are undefined and
  skipped) and the S attaining it (first in the order (), (a0,), (a1,), ..., (a0, a1), ...).
  This is SPEC 10's p(u)-weighted form, not the PGDL 2020 scorer (uniform over |S| = 2 cells);
- sign-error (Dziugaite et al. 2020): over unordered pairs differing in exactly one axis with
  g_a != g_b, err = (1 - sign(dmu) sign(dg)) / 2; the mean over all such pairs, and the maximum
  over axes of the per-axis mean (the robust figure) with its axis;
- 95% bootstrap percentile intervals of tau and Psi: models resampled with replacement (the same
  draws for every measure; a measure's undefined models drop out of each draw), a resampled
  model drawn twice counts as two models tied in mu and g, draws where the statistic is
  undefined are left out.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import SpecboundError

if TYPE_CHECKING:
    import pandas as pd

GAP_KINDS = ("accuracy", "loss")
METRIC_COLUMNS = ("train_acc", "test_acc", "train_loss", "test_loss")
#: Manifest columns that are never hyperparameter axes.
RESERVED_COLUMNS = frozenset({"model", "init", "converged", *METRIC_COLUMNS})
#: Columns that are not axes unless named in ``--axes``: bookkeeping, and ``seed`` (replicates).
NOT_DEFAULT_AXES = frozenset(
    {"name", "path", "status", "error", "test_size", "steps", "wall_s", "seed"}
)
EMPTY_SET = "(none)"
SKIPPED_COLUMNS = ["model", "reason"]


# --- statistics ------------------------------------------------------------------------------


def kendall_tau(mu: np.ndarray, g: np.ndarray) -> float:
    """Kendall tau-b of (mu, g); NaN when undefined (< 2 models, or mu or g constant)."""
    mu = np.asarray(mu, dtype=float)
    g = np.asarray(g, dtype=float)
    if mu.size < 2 or np.all(mu == mu[0]) or np.all(g == g[0]):
        return math.nan
    from scipy.stats import kendalltau

    return float(kendalltau(mu, g, variant="b").statistic)


def axis_codes(table: pd.DataFrame, axes: Sequence[str]) -> np.ndarray:
    """Integer codes (n_models x n_axes) of the axis values; a missing value is a value too."""
    import pandas as pd

    cols = []
    for a in axes:
        codes, _ = pd.factorize(table[a], use_na_sentinel=False)
        cols.append(np.asarray(codes, dtype=np.int64))
    if not cols:
        return np.zeros((len(table), 0), dtype=np.int64)
    return np.stack(cols, axis=1)


def _row_ids(codes: np.ndarray) -> np.ndarray:
    """One id per distinct row of ``codes`` (all 0 when there are no columns)."""
    if codes.shape[1] == 0 or codes.shape[0] == 0:
        return np.zeros(codes.shape[0], dtype=np.int64)
    dims = codes.max(axis=0) + 1
    if float(np.prod(dims.astype(float))) < 2.0**62:
        key = np.ravel_multi_index(codes.T, dims)
        _, inv = np.unique(key, return_inverse=True)
    else:
        _, inv = np.unique(codes, axis=0, return_inverse=True)
    return np.asarray(inv).reshape(-1)


def axis_groups(codes: np.ndarray, axis: int) -> list[np.ndarray]:
    """Index arrays of the groups of >= 2 models sharing every axis value except ``axis``."""
    gid = _row_ids(np.delete(codes, axis, axis=1))
    groups = [np.flatnonzero(gid == k) for k in range(int(gid.max()) + 1)] if gid.size else []
    return [grp for grp in groups if grp.size >= 2]


def _tau_b(mu: np.ndarray, g: np.ndarray) -> float:
    """tau-b from the pair signs (the same number as scipy's, cheaper on small groups)."""
    return float(weighted_tau(np.ones((1, mu.size)), _sign_matrix(mu), _sign_matrix(g))[0])


def granulated_psi(
    mu: np.ndarray, g: np.ndarray, codes: np.ndarray, groups: list[list[np.ndarray]] | None = None
) -> tuple[float, list[float]]:
    """(Psi, [psi_i per axis]); psi_i is NaN for an axis with no group where tau is defined.

    ``groups``: ``axis_groups(codes, i)`` for every axis i, when already computed.
    """
    mu = np.asarray(mu, dtype=float)
    g = np.asarray(g, dtype=float)
    if groups is None:
        groups = [axis_groups(codes, a) for a in range(codes.shape[1])]
    psis = []
    for a in range(codes.shape[1]):
        taus = [_tau_b(mu[grp], g[grp]) for grp in groups[a]]
        taus = [t for t in taus if not math.isnan(t)]
        psis.append(float(np.mean(taus)) if taus else math.nan)
    defined = [p for p in psis if not math.isnan(p)]
    return (float(np.mean(defined)) if defined else math.nan), psis


def axis_subsets(k: int) -> list[tuple[int, ...]]:
    """Every set of at most two of ``k`` axes, the empty set first."""
    return [()] + [(a,) for a in range(k)] + list(itertools.combinations(range(k), 2))


def _cmi_of_cells(v_mu: np.ndarray, v_g: np.ndarray, cell: np.ndarray) -> float:
    n_cells = int(cell.max()) + 1
    counts = np.bincount(cell * 4 + v_mu * 2 + v_g, minlength=4 * n_cells)
    counts = counts.reshape(n_cells, 2, 2).astype(float)
    n_u = counts.sum(axis=(1, 2))
    p_u = n_u / n_u.sum()
    joint = counts / n_u[:, None, None]
    pm = joint.sum(axis=2, keepdims=True)
    pg = joint.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(joint > 0, joint * np.log2(joint / (pm * pg)), 0.0)
        hg = np.where(pg > 0, -pg * np.log2(pg), 0.0)
    info = np.maximum(terms.sum(axis=(1, 2)), 0.0)
    ent = hg.sum(axis=(1, 2))
    den = float(np.sum(p_u * ent))
    if den <= 1e-15:
        return math.nan
    return float(np.sum(p_u * info)) / den


def cmi_pairs(
    g: np.ndarray, codes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    """Ordered pairs (a, b), a != b, with g_a != g_b; V_g; the cell ids of every S of
    ``axis_subsets``. They depend on g and the axes only, so measures can share them."""
    g = np.asarray(g, dtype=float)
    a, b = np.nonzero(~np.eye(g.size, dtype=bool))
    dg = g[a] - g[b]
    keep = dg != 0
    a, b, dg = a[keep], b[keep], dg[keep]
    cells = [
        _row_ids(np.concatenate([codes[a][:, list(s)], codes[b][:, list(s)]], axis=1))
        for s in axis_subsets(codes.shape[1])
    ]
    return a, b, (dg > 0).astype(np.int64), cells


def cmi(
    mu: np.ndarray, g: np.ndarray, codes: np.ndarray, pairs: tuple[Any, ...] | None = None
) -> tuple[float, tuple[int, ...] | None]:
    """(min over |S| <= 2 of CMI_S, the S attaining it); (NaN, None) when no CMI_S is defined.

    ``pairs``: ``cmi_pairs(g, codes)`` when already computed.
    """
    mu = np.asarray(mu, dtype=float)
    a, b, v_g, cells = pairs if pairs is not None else cmi_pairs(g, codes)
    if a.size == 0:
        return math.nan, None
    v_mu = (mu[a] - mu[b] > 0).astype(np.int64)
    best, best_s = math.nan, None
    for s, cell in zip(axis_subsets(codes.shape[1]), cells, strict=True):
        val = _cmi_of_cells(v_mu, v_g, cell)
        if not math.isnan(val) and (best_s is None or val < best - 1e-12):
            best, best_s = val, s
    return best, best_s


def sign_error(mu: np.ndarray, g: np.ndarray, codes: np.ndarray) -> tuple[float, float, int | None]:
    """(mean sign-error, max over axes of the per-axis mean, that axis) over one-axis pairs."""
    mu = np.asarray(mu, dtype=float)
    g = np.asarray(g, dtype=float)
    a, b = np.triu_indices(mu.size, 1)
    diff = codes[a] != codes[b]
    dg = g[a] - g[b]
    keep = (diff.sum(axis=1) == 1) & (dg != 0)
    if not keep.any():
        return math.nan, math.nan, None
    err = (1.0 - np.sign(mu[a] - mu[b])[keep] * np.sign(dg[keep])) / 2.0
    which = np.argmax(diff[keep], axis=1)
    robust, robust_axis = math.nan, None
    for ax in range(codes.shape[1]):
        sel = which == ax
        if sel.any():
            m = float(err[sel].mean())
            if robust_axis is None or m > robust:
                robust, robust_axis = m, ax
    return float(err.mean()), robust, robust_axis


def _sign_matrix(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        s = np.sign(x[:, None] - x[None, :])
    return np.nan_to_num(s, nan=0.0)


def weighted_tau(w: np.ndarray, sx: np.ndarray, sy: np.ndarray) -> np.ndarray:
    """tau-b of each multiset of models given as counts ``w`` (draws x n), from sign matrices.

    With w_i copies of model i, sum over pairs of sign(dx) sign(dy) is w^T (Sx * Sy) w / 2 and the
    pairs not tied in x number w^T |Sx| w / 2; tau-b = num / sqrt(untied_x * untied_y).
    """
    num = np.einsum("bi,bi->b", w @ (sx * sy), w)
    dx = np.einsum("bi,bi->b", w @ np.abs(sx), w)
    dy = np.einsum("bi,bi->b", w @ np.abs(sy), w)
    ok = (dx > 0) & (dy > 0)
    out = np.full(w.shape[0], np.nan)
    out[ok] = num[ok] / np.sqrt(dx[ok] * dy[ok])
    return out


def bootstrap_counts(n: int, draws: int, seed: int) -> np.ndarray:
    """Counts (draws x n) of each model in ``draws`` resamples of n models with replacement."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(draws, n))
    flat = (idx + n * np.arange(draws)[:, None]).ravel()
    return np.bincount(flat, minlength=draws * n).reshape(draws, n).astype(float)


def bootstrap_tau_psi(
    mu: np.ndarray, g: np.ndarray, codes: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """tau and Psi of every resample (each a row of ``counts``); NaN where mu is NaN drops out."""
    mu = np.asarray(mu, dtype=float)
    g = np.asarray(g, dtype=float)
    valid = np.isfinite(mu) & np.isfinite(g)
    w = counts * valid
    sx, sy = _sign_matrix(np.where(valid, mu, 0.0)), _sign_matrix(np.where(valid, g, 0.0))
    taus = weighted_tau(w, sx, sy)
    vcodes = codes[valid]
    vidx = np.flatnonzero(valid)
    psi_sum = np.zeros(counts.shape[0])
    psi_n = np.zeros(counts.shape[0])
    for ax in range(codes.shape[1]):
        s = np.zeros(counts.shape[0])
        c = np.zeros(counts.shape[0])
        for grp in axis_groups(vcodes, ax):
            ix = vidx[grp]
            t = weighted_tau(w[:, ix], sx[np.ix_(ix, ix)], sy[np.ix_(ix, ix)])
            ok = ~np.isnan(t)
            s[ok] += t[ok]
            c[ok] += 1
        has = c > 0
        psi_sum[has] += s[has] / c[has]
        psi_n[has] += 1
    psis = np.full(counts.shape[0], np.nan)
    psis[psi_n > 0] = psi_sum[psi_n > 0] / psi_n[psi_n > 0]
    return taus, psis


def percentile_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The (1 - level)/2 and (1 + level)/2 percentiles of the defined values (NaN if none)."""
    v = values[~np.isnan(values)]
    if v.size == 0:
        return math.nan, math.nan
    lo, hi = np.percentile(v, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def correlation_columns(axes: Sequence[str]) -> list[str]:
    """Columns of correlation.csv."""
    return (
        ["measure", "n_models", "kendall_tau", "tau_low", "tau_high", "psi", "psi_low", "psi_high"]
        + [f"psi_{a}" for a in axes]
        + ["cmi", "cmi_axes", "sign_error", "sign_error_robust", "sign_error_robust_axis"]
    )


def correlation_table(
    models: pd.DataFrame,
    measures: Sequence[str],
    axes: Sequence[str],
    *,
    gap: str = "gap",
    bootstrap: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """One row per measure: tau, Psi (with bootstrap intervals), psi per axis, CMI, sign-error.

    ``models`` has one row per model with a column per measure, the gap column ``gap`` and one
    column per axis. A measure is evaluated over the models where it and the gap are finite.
    """
    import pandas as pd

    for c in [gap, *axes, *measures]:
        if c not in models.columns:
            raise SpecboundError(f"the models table has no column '{c}'")
    if bootstrap < 0:
        raise SpecboundError(f"--bootstrap must be >= 0, got {bootstrap}")
    g_all = pd.to_numeric(models[gap], errors="coerce").to_numpy(float)
    codes_all = axis_codes(models, axes)
    counts = bootstrap_counts(len(models), bootstrap, seed) if bootstrap > 0 else None
    rows = []
    shared: dict[bytes, Any] = {}
    for name in measures:
        mu_all = pd.to_numeric(models[name], errors="coerce").to_numpy(float)
        ok = np.isfinite(mu_all) & np.isfinite(g_all)
        mu, g, codes = mu_all[ok], g_all[ok], codes_all[ok]
        key = ok.tobytes()
        if key not in shared:  # groups and pairs depend on the models only, not on mu
            shared[key] = (
                [axis_groups(codes, a) for a in range(codes.shape[1])],
                cmi_pairs(g, codes),
            )
        groups, pairs = shared[key]
        psi, psis = granulated_psi(mu, g, codes, groups)
        c, s = cmi(mu, g, codes, pairs)
        se, ser, sea = sign_error(mu, g, codes)
        row: dict[str, Any] = {
            "measure": name,
            "n_models": int(ok.sum()),
            "kendall_tau": kendall_tau(mu, g),
        }
        t_lo = t_hi = p_lo = p_hi = math.nan
        if counts is not None:
            bt, bp = bootstrap_tau_psi(np.where(ok, mu_all, np.nan), g_all, codes_all, counts)
            t_lo, t_hi = percentile_interval(bt, level)
            p_lo, p_hi = percentile_interval(bp, level)
        row.update(tau_low=t_lo, tau_high=t_hi, psi=psi, psi_low=p_lo, psi_high=p_hi)
        row.update({f"psi_{a}": p for a, p in zip(axes, psis, strict=True)})
        row.update(
            cmi=c,
            cmi_axes=(None if s is None else "+".join(axes[i] for i in s) if s else EMPTY_SET),
            sign_error=se,
            sign_error_robust=ser,
            sign_error_robust_axis=None if sea is None else axes[sea],
        )
        rows.append(row)
    return pd.DataFrame(rows, columns=correlation_columns(axes))


# --- the models table ------------------------------------------------------------------------


def gap_values(table: pd.DataFrame, kind: str = "accuracy") -> np.ndarray:
    """g = train_acc - test_acc (``accuracy``) or test_loss - train_loss (``loss``)."""
    import pandas as pd

    if kind not in GAP_KINDS:
        raise SpecboundError(f"--gap must be one of {', '.join(GAP_KINDS)}, got '{kind}'")
    a, b = ("train_acc", "test_acc") if kind == "accuracy" else ("test_loss", "train_loss")
    missing = [c for c in (a, b) if c not in table.columns]
    if missing:
        raise SpecboundError(
            f"--gap {kind} needs columns {a} and {b}; the manifest lacks {', '.join(missing)}"
        )
    x = pd.to_numeric(table[a], errors="coerce").to_numpy(float)
    y = pd.to_numeric(table[b], errors="coerce").to_numpy(float)
    return x - y


def measure_registry() -> tuple[list[str], dict[str, bool]]:
    """(SPEC 9 measure names in order, {bound-form measure: value already log10}), from the
    ``specbound.measures`` registry."""
    from ..measures import MEASURES

    names = list(MEASURES)
    forms = {n: m.log10 for n, m in MEASURES.items() if m.bound_form}
    return names, forms


def add_bound_forms(
    table: pd.DataFrame, measures: Sequence[str], forms: dict[str, bool]
) -> list[str]:
    """Add ``<name>_per_sqrt_n`` = log10 value - 1/2 log10 n and ``sample_size_only``.

    Only when ``train_size`` is a column with a value for some model; ``sample_size_only``
    (-1/2 log10 n) only when n varies. Returns the names of the added measures.
    """
    import pandas as pd

    if "train_size" not in table.columns:
        return []
    n = pd.to_numeric(table["train_size"], errors="coerce").to_numpy(float)
    n = np.where(n > 0, n, np.nan)
    if not np.isfinite(n).any():
        return []
    half = 0.5 * np.log10(n)
    added = []
    for name in measures:
        if name not in forms or name not in table.columns:
            continue
        v = pd.to_numeric(table[name], errors="coerce").to_numpy(float)
        if not forms[name]:
            with np.errstate(divide="ignore", invalid="ignore"):
                v = np.where(v > 0, np.log10(np.where(v > 0, v, 1.0)), np.nan)
        table[f"{name}_per_sqrt_n"] = v - half
        added.append(f"{name}_per_sqrt_n")
    if np.unique(n[np.isfinite(n)]).size > 1:
        table["sample_size_only"] = -half
        added.append("sample_size_only")
    return added


# --- reading a zoo ---------------------------------------------------------------------------


@dataclass
class Zoo:
    """A parsed manifest: the table as read, its directory, the axes and an optional task."""

    manifest: Path
    table: pd.DataFrame
    axes: list[str]
    task: str | None = None


def _parse_axes(axes: str | Sequence[str] | None) -> list[str] | None:
    if axes is None:
        return None
    if isinstance(axes, str):
        axes = axes.split(",")
    out = [a.strip() for a in axes if a.strip()]
    return out or None


def read_zoo(path: str | Path, axes: str | Sequence[str] | None = None) -> Zoo:
    """Read a manifest CSV, or a ``specbound zoo train`` directory (DIR/zoo.csv + DIR/zoo.json).

    Axes: ``axes`` if given; else those of zoo.json's ``axes`` (or, for a plain manifest, of its
    columns) that vary across the manifest, leaving out the model, init, converged, metric and
    bookkeeping columns (test_size, steps, wall_s) and ``seed`` (replicates, not an axis).
    """
    import pandas as pd

    p = Path(path)
    meta: dict[str, Any] = {}
    if p.is_dir():
        manifest = p / "zoo.csv"
        if not manifest.is_file():
            raise SpecboundError(
                f"{p} is a directory without zoo.csv; pass the zoo directory "
                "written by 'specbound zoo train' or --manifest FILE.csv"
            )
        meta_file = p / "zoo.json"
        if meta_file.is_file():
            try:
                meta = json.loads(meta_file.read_text())
            except (OSError, ValueError) as exc:
                raise SpecboundError(f"cannot read {meta_file}: {exc}") from None
            if not isinstance(meta, dict):
                raise SpecboundError(f"{meta_file} must hold a JSON object with 'axes'")
    else:
        manifest = p
    if manifest.exists():  # a FIFO would block forever: refuse anything but a regular file
        from ..checkpoint import check_regular_file

        check_regular_file(manifest, "manifest", advice="pass a zoo.csv file or a zoo directory")
    if not manifest.is_file():
        raise SpecboundError(
            f"manifest {manifest} does not exist; pass a zoo.csv file or a zoo directory"
        )
    try:
        table = pd.read_csv(manifest, skipinitialspace=True, comment="#")
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise SpecboundError(
            f"cannot read manifest {manifest} as CSV: {' '.join(str(exc).split())}"
        ) from None
    table.columns = [str(c).strip() for c in table.columns]
    if "model" not in table.columns:
        raise SpecboundError(
            f"manifest {manifest} has no 'model' column (columns: {', '.join(table.columns)})"
        )
    if len(table) == 0:
        raise SpecboundError(f"manifest {manifest} lists no models")
    if table["model"].isna().any():
        raise SpecboundError(
            f"manifest {manifest}: row {int(table['model'].isna().argmax()) + 2} "
            "has an empty 'model'"
        )
    if table["model"].astype(str).duplicated().any():
        dup = table["model"][table["model"].astype(str).duplicated()].iloc[0]
        raise SpecboundError(f"manifest {manifest} lists model '{dup}' twice")
    where: dict[str, str] = {}  # the same directory spelled twice (m0, ./m0/) counts twice too
    for m in table["model"].astype(str).str.strip():
        entry = resolve_entry(m, manifest.parent)
        key = os.path.realpath(entry) if os.path.exists(entry) else entry
        if key in where:
            raise SpecboundError(
                f"manifest {manifest} lists model '{m}' twice (as '{where[key]}' and '{m}')"
            )
        where[key] = m
    chosen = _parse_axes(axes)
    if chosen is None:
        listed = meta.get("axes")
        if listed is not None and not (
            isinstance(listed, list) and all(isinstance(a, str) for a in listed)
        ):
            raise SpecboundError(
                f"zoo.json beside {manifest}: 'axes' must be a list of column "
                f"names, got {listed!r}; fix it or pass --axes"
            )
        candidates = (
            [str(a) for a in listed] if isinstance(listed, (list, tuple)) else list(table.columns)
        )
        # default: the zoo's own axes (zoo.json, seed included: the default axes) that
        # vary; from a bare manifest, varying columns that are not bookkeeping or seeds
        skip = frozenset() if isinstance(listed, (list, tuple)) else NOT_DEFAULT_AXES
        chosen = [
            c
            for c in candidates
            if c in table.columns
            and c not in RESERVED_COLUMNS
            and c not in skip
            and table[c].nunique(dropna=False) > 1
        ]
    bad = [a for a in chosen if a not in table.columns or a in RESERVED_COLUMNS]
    if bad:
        raise SpecboundError(
            f"axis '{bad[0]}' is not a hyperparameter column of {manifest} "
            f"(columns: {', '.join(table.columns)})"
        )
    if len(set(chosen)) != len(chosen):
        raise SpecboundError(f"--axes names an axis twice: {','.join(chosen)}")
    task = meta.get("task")
    return Zoo(manifest, table, chosen, None if task is None else str(task))


def resolve_entry(entry: str, base: Path) -> str:
    """A manifest path relative to ``base`` when it exists there, else the entry (hub id/path)."""
    entry = str(entry).strip()
    p = Path(entry).expanduser()
    if p.is_absolute():
        return str(p)
    local = base / p
    # org/name is a hub id unless its first part is a directory beside the manifest
    looks_hub = (
        entry.count("/") == 1 and not entry.startswith(".") and not (base / p.parts[0]).is_dir()
    )
    return entry if looks_hub and not local.exists() else str(local)


def parse_converged(values: pd.Series) -> np.ndarray:
    """True/False from bools, 0/1 or words (true/false, yes/no); missing counts as converged."""
    out = []
    for v in values.tolist():
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append(True)
        elif isinstance(v, (bool, np.bool_)):
            out.append(bool(v))
        elif isinstance(v, (int, float, np.integer, np.floating)):
            out.append(float(v) != 0)
        else:
            s = str(v).strip().lower()
            if s in ("true", "t", "yes", "y", "1", "1.0", ""):
                out.append(True)
            elif s in ("false", "f", "no", "n", "0", "0.0"):
                out.append(False)
            else:
                raise SpecboundError(f"'converged' must be true/false, got '{v}'")
    return np.array(out, dtype=bool)


# --- the study ------------------------------------------------------------------------------


@dataclass
class Correlation:
    """The result of ``correlate``: models.csv, correlation.csv and skipped.csv as DataFrames."""

    models: pd.DataFrame
    correlation: pd.DataFrame
    skipped: pd.DataFrame
    axes: list[str]
    measures: list[str]
    gap: str = "accuracy"
    manifest: str = ""
    task: str | None = None
    n_listed: int = 0
    n_unconverged: int = 0
    include_unconverged: bool = False
    bootstrap: int = 1000
    seed: int = 0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The content of correlate.json."""
        return {
            "manifest": self.manifest,
            "task": self.task,
            "gap": self.gap,
            "axes": list(self.axes),
            "measures": list(self.measures),
            "n_listed": self.n_listed,
            "n_models": int(len(self.models)),
            "n_skipped": int(len(self.skipped)),
            "n_unconverged": self.n_unconverged,
            "include_unconverged": self.include_unconverged,
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "notes": list(self.notes),
        }


def _measures_of(a: Any) -> dict[str, float | None]:
    m = getattr(a, "measures", None)
    if isinstance(m, dict):
        return dict(m)
    # until the measures registry lands: the two proxies and the parameter count
    return {
        "spectrum_adaptive": a.bounds.spectrum_adaptive.log10,
        "norm_based": a.bounds.norm_based.log10,
        "num_parameters": None if a.num_parameters is None else float(a.num_parameters),
    }


def _default_analyze(
    path: str, init: str | None, cache: bool, device: str | None, name: str
) -> dict[str, float | None]:
    import inspect

    from ..analysis import analyze

    kw: dict[str, Any] = {"cache": cache, "device": device, "name": name}
    params = inspect.signature(analyze).parameters
    if "measures" in params:
        kw["measures"] = None
    if "init" in params:
        kw["init"] = init
    return _measures_of(analyze(path, **kw))


def _reason(exc: BaseException) -> str:
    msg = " ".join(str(exc).split()) or type(exc).__name__
    return msg if isinstance(exc, SpecboundError) else f"{type(exc).__name__}: {msg}"


Analyzer = Callable[[str, "str | None", bool, "str | None", str], dict[str, "float | None"]]


def correlate(
    zoo: str | Path | Zoo,
    *,
    axes: str | Sequence[str] | None = None,
    gap: str | None = None,
    include_unconverged: bool = False,
    bootstrap: int = 1000,
    seed: int = 0,
    cache: bool = True,
    device: str | None = None,
    on_model: Callable[[int, int, str, str | None], None] | None = None,
    analyzer: Analyzer | None = None,
) -> Correlation:
    """Analyze every model of a zoo and compute SPEC 10 for every SPEC 9 measure.

    ``zoo``: a manifest CSV, a ``zoo train`` directory or a ``Zoo``. ``gap``: ``accuracy``
    (train - test accuracy) or ``loss`` (test - train loss); by default accuracy when the
    manifest has both accuracies, else loss. Models that fail to load or
    analyze are listed in ``skipped`` with the reason and left out; so are unconverged models
    (unless ``include_unconverged``) and models without the gap's metrics. ``on_model(i, n, name,
    error)`` is called after each model. ``analyzer(path, init, cache, device, name)`` returns a
    model's measures (default: ``specbound.analysis.analyze(...).measures``).
    """
    import pandas as pd

    z = zoo if isinstance(zoo, Zoo) else read_zoo(zoo, axes)
    if isinstance(zoo, Zoo) and axes is not None:
        z = Zoo(z.manifest, z.table, _parse_axes(axes) or [], z.task)
    if bootstrap < 0:
        raise SpecboundError(f"--bootstrap must be >= 0, got {bootstrap}")
    table = z.table.copy()
    if gap is None:  # accuracy when the manifest has it, else loss
        has_loss = {"train_loss", "test_loss"} <= set(table.columns)
        has_acc = {"train_acc", "test_acc"} <= set(table.columns)
        gap = "loss" if has_loss and not has_acc else "accuracy"
    g = gap_values(table, gap)
    converged = (
        parse_converged(table["converged"])
        if "converged" in table.columns
        else np.ones(len(table), dtype=bool)
    )
    base = z.manifest.parent
    analyzer = analyzer or _default_analyze
    names, forms = measure_registry()
    rows, skipped = [], []
    n_unconverged = 0
    total = len(table)
    for i, rec in enumerate(table.to_dict("records")):
        name = str(rec["model"]).strip()
        error = None
        if not np.isfinite(g[i]):
            error = f"no {gap} gap: a metric of --gap {gap} is missing or not a number"
        elif not converged[i] and not include_unconverged:
            n_unconverged += 1
            error = "unconverged (excluded; --include-unconverged keeps it)"
        else:
            init = rec.get("init")
            init_path = (
                None
                if init is None
                or (isinstance(init, float) and math.isnan(init))
                or not str(init).strip()
                else resolve_entry(str(init), base)
            )
            try:
                values = analyzer(resolve_entry(name, base), init_path, cache, device, name)
            except (KeyboardInterrupt, MemoryError):
                raise
            except Exception as exc:  # a broken model never aborts the study
                error = _reason(exc)
            else:
                row = dict(rec)
                row["model"] = name
                row["gap"] = float(g[i])
                row["converged"] = bool(converged[i])
                row.update({k: (math.nan if v is None else float(v)) for k, v in values.items()})
                rows.append(row)
        if error is not None:
            skipped.append({"model": name, "reason": error})
        if on_model is not None:
            on_model(i + 1, total, name, error)
    if not rows:
        first = skipped[0]["reason"] if skipped else "none listed"
        raise SpecboundError(
            f"no model of {z.manifest} could be used ({len(skipped)} skipped; "
            f"first: {skipped[0]['model'] if skipped else ''}: {first})"
        )
    models = pd.DataFrame(rows)
    found = [c for c in models.columns if c not in table.columns and c not in ("gap",)]
    measures = [m for m in names if m in models.columns]
    measures += [m for m in found if m not in measures and m != "converged"]
    measures += add_bound_forms(models, measures, forms)
    front = ["model", *z.axes]
    rest = [
        c
        for c in table.columns
        if c not in front and c not in measures and c not in ("gap", "converged")
    ]
    models = models[front + rest + ["gap", "converged"] + measures]
    corr = correlation_table(models, measures, z.axes, bootstrap=bootstrap, seed=seed)
    notes = []
    if axes is None and not isinstance(zoo, Zoo):
        notes.append(
            f"axes by default (the varying hyperparameter columns; seed is a replicate, "
            f"not an axis): {', '.join(z.axes) or 'none'}; choose them with --axes"
        )
    if "converged" not in table.columns:
        notes.append("the manifest has no 'converged' column: every model counts as converged")
    if "train_size" not in table.columns:
        notes.append("no train_size column: no bound forms (<measure>_per_sqrt_n)")
    return Correlation(
        models,
        corr,
        pd.DataFrame(skipped, columns=SKIPPED_COLUMNS),
        list(z.axes),
        measures,
        gap,
        str(z.manifest),
        z.task,
        total,
        n_unconverged,
        include_unconverged,
        bootstrap,
        seed,
        notes,
    )
