"""The scaling study (SPEC.md section 7): many models -> one table, growth fits, figures.

``scale(models)`` analyzes every model (the spectra cache is reused) and returns a ``Study``:

- ``models``: one row per model (sizes, both proxies in log10, share of matrices at p = 0 / 2);
- ``growth``: fitted growth of each proxy along each axis (``hidden_size``, ``num_layers``).

Growth fits ("the other axis fixed"). For axis x (N or L), proxy B and the other axis z:

- ``fit = "per_fixed"``: one ordinary least-squares line per value z0 of the other axis, over the
  models with z = z0 (needs >= 2 distinct x; the standard error needs >= 3 points, else NaN);
- ``fit = "pooled"``: one common slope with a separate intercept per value of z (a fixed-effects
  OLS, ``log10 B = a_z + b * f(x)``), over every group with >= 2 distinct x. This is "the other
  axis fixed" using the whole grid at once; its standard error needs more points than
  parameters (n > 1 + number of groups).

Each row gives ``exponent`` = slope of log10 B on log10 x (d log B / d log x, the power-law
exponent) and ``log10_per_unit`` = slope of log10 B on x (orders of magnitude per unit of x, the
natural measure of exponential growth in depth), each with its OLS standard error
(sqrt(sigma^2 (X^T X)^-1), sigma^2 = RSS / (n - k)) and ``n_points``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from .analysis import Analysis

PROXIES = ("spectrum_adaptive", "norm_based")
AXES = ("hidden_size", "num_layers")
MODEL_COLUMNS = [
    "model", "num_layers", "hidden_size", "num_heads", "intermediate_size", "num_parameters",
    "spectrum_adaptive_log10", "norm_based_log10", "share_p0", "share_p2",
]
GROWTH_COLUMNS = [
    "proxy", "axis", "fixed_axis", "fixed_value", "fit", "exponent", "exponent_se",
    "log10_per_unit", "log10_per_unit_se", "n_points",
]


def ols(x: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None) -> tuple[float, float]:
    """Slope of y on x and its standard error; ``groups`` adds one intercept per group."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if groups is None:
        groups = np.zeros(x.size)
    levels = np.unique(groups)
    design = np.column_stack([x] + [(groups == g).astype(np.float64) for g in levels])
    n, k = design.shape
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    if n <= k:
        return float(coef[0]), math.nan
    resid = y - design @ coef
    sigma2 = float(resid @ resid) / (n - k)
    cov = sigma2 * np.linalg.pinv(design.T @ design)
    return float(coef[0]), float(math.sqrt(max(cov[0, 0], 0.0)))


def growth_table(models: pd.DataFrame) -> pd.DataFrame:
    """Per-fixed and pooled growth fits of both proxies along both axes (see module doc)."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for proxy in PROXIES:
        y_all = models[f"{proxy}_log10"].to_numpy(dtype=np.float64)
        for axis in AXES:
            other = AXES[1 - AXES.index(axis)]
            x_all = models[axis].to_numpy(dtype=np.float64)
            z_all = models[other].to_numpy()
            usable = []
            for z0 in sorted(np.unique(z_all)):
                sel = z_all == z0
                if np.unique(x_all[sel]).size < 2:
                    continue
                usable.append(sel)
                rows.append(_fit_row(proxy, axis, other, int(z0), "per_fixed",
                                     x_all[sel], y_all[sel], None))
            if usable:
                sel = np.logical_or.reduce(usable)
                rows.append(_fit_row(proxy, axis, other, None, "pooled",
                                     x_all[sel], y_all[sel], z_all[sel]))
    return pd.DataFrame(rows, columns=GROWTH_COLUMNS)


def _fit_row(proxy: str, axis: str, other: str, z0: int | None, fit: str, x: np.ndarray,
             y: np.ndarray, groups: np.ndarray | None) -> dict[str, Any]:
    e, e_se = ols(np.log10(x), y, groups)
    u, u_se = ols(x, y, groups)
    return {"proxy": proxy, "axis": axis, "fixed_axis": other, "fixed_value": z0, "fit": fit,
            "exponent": e, "exponent_se": e_se, "log10_per_unit": u, "log10_per_unit_se": u_se,
            "n_points": int(x.size)}


def model_row(a: Analysis) -> dict[str, Any]:
    """One row of ``models.csv`` from an Analysis."""
    s = a.spec
    p = a.details.p_star
    return {
        "model": a.model,
        "num_layers": s.num_layers,
        "hidden_size": s.hidden_size,
        "num_heads": s.num_heads,
        "intermediate_size": s.intermediate_size,
        "num_parameters": a.num_parameters,
        "spectrum_adaptive_log10": a.bounds.spectrum_adaptive.log10,
        "norm_based_log10": a.bounds.norm_based.log10,
        "share_p0": float(np.mean(p == 0)) if p.size else 0.0,
        "share_p2": float(np.mean(p == 2)) if p.size else 0.0,
    }


@dataclass
class Study:
    """A multi-model scaling study: ``models`` and ``growth`` DataFrames plus the analyses."""

    models: pd.DataFrame
    growth: pd.DataFrame
    analyses: list[Analysis] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    title: str = "Scaling study"

    def to_dir(self, path: Any, extra_figures: Callable[[Any], list[Any]] | None = None) -> Any:
        """Write models.csv, growth.csv, figures/ and report.html into ``path``, atomically."""
        from pathlib import Path

        from . import plots
        from .io import atomic_dir
        from .report import write_study_report

        with atomic_dir(path) as tmp:
            self.models.to_csv(tmp / "models.csv", index=False, float_format="%.17g")
            self.growth.to_csv(tmp / "growth.csv", index=False, float_format="%.17g")
            figs = plots.study_figures(self, tmp / "figures")
            if extra_figures is not None:
                figs += extra_figures(tmp / "figures")
            write_study_report(self, tmp, figs)
        return Path(path)


def scale(
    models: Sequence[Any],
    *,
    l_phi: float | None = None,
    grid_m: int | None = None,
    device: str | None = None,
    cache: bool = True,
    names: Sequence[str] | None = None,
    on_model: Callable[[int, int, str], None] | None = None,
) -> Study:
    """Analyze every model (cache reused) and fit the growth of both proxies."""
    import pandas as pd

    from .analysis import analyze

    if len(models) == 0:
        raise ValueError("scale needs at least one model")
    analyses = []
    for i, m in enumerate(models):
        name = names[i] if names is not None else None
        if on_model is not None:
            on_model(i + 1, len(models), str(name or m))
        analyses.append(analyze(m, l_phi=l_phi, grid_m=grid_m, device=device, cache=cache,
                                name=name))
    table = pd.DataFrame([model_row(a) for a in analyses], columns=MODEL_COLUMNS)
    table = table.sort_values(["num_layers", "hidden_size", "model"], kind="stable")
    order = list(table.index)
    table = table.reset_index(drop=True)
    return Study(table, growth_table(table), [analyses[i] for i in order])


def read_manifest(path: Any) -> list[str]:
    """Models listed in a text file: one per line, ``#`` comments and blank lines ignored.

    Relative paths are taken relative to the manifest's directory when they exist there.
    """
    from pathlib import Path

    from .errors import SpecboundError

    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except OSError as exc:
        raise SpecboundError(f"cannot read manifest {p}: {exc.strerror or exc}") from None
    out = []
    for line in lines:
        item = line.split("#", 1)[0].strip()
        if not item:
            continue
        local = p.parent / item
        out.append(str(local) if not Path(item).is_absolute() and local.exists() else item)
    if not out:
        raise SpecboundError(f"manifest {p} lists no models")
    return out


# --- BERT Miniatures (Turc et al. 2019) ----------------------------------------------------

MINIATURE_LAYERS = (2, 4, 6, 8, 10, 12)
MINIATURE_HIDDEN = (128, 256, 512, 768)


def miniature_ids() -> list[str]:
    """The 24 hub ids ``google/bert_uncased_L-{L}_H-{N}_A-{N/64}``."""
    return [f"google/bert_uncased_L-{L}_H-{N}_A-{N // 64}"
            for L in MINIATURE_LAYERS for N in MINIATURE_HIDDEN]


def find_local_miniature(local_dir: Any, hub_id: str) -> Any:
    """``DIR/<name>/`` or ``DIR/google/<name>/`` holding config.json, else None."""
    from pathlib import Path

    name = hub_id.split("/", 1)[1]
    for cand in (Path(local_dir) / name, Path(local_dir) / hub_id):
        if (cand / "config.json").is_file():
            return cand
    return None


def locate_miniatures(local_dir: Any = None) -> tuple[list[tuple[str, Any]], list[str], list[str]]:
    """(present (hub id, source) pairs, missing ids, reasons) for the 24 Miniatures.

    With ``local_dir`` the checkpoints are read from it; otherwise through huggingface_hub
    (cache first, then config and weights only when online).
    """
    from .errors import SpecboundError

    present, missing, reasons = [], [], []
    for hub_id in miniature_ids():
        if local_dir is not None:
            path = find_local_miniature(local_dir, hub_id)
            if path is None:
                missing.append(hub_id)
                reasons.append(f"{hub_id}: not in {local_dir}")
            else:
                present.append((hub_id, str(path)))
            continue
        from .hub import resolve_hub_id

        try:
            present.append((hub_id, str(resolve_hub_id(hub_id))))
        except SpecboundError as exc:
            missing.append(hub_id)
            reasons.append(str(exc))
    return present, missing, reasons
