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
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from .analysis import Analysis

PROXIES = ("spectrum_adaptive", "norm_based")
AXES = ("hidden_size", "num_layers")
#: models.csv: sizes, then one column per registered measure (``measure_columns()``), then the
#: shares of matrices at p = 0 and p = 2.
SIZE_COLUMNS = ["model", "num_layers", "hidden_size", "num_heads", "intermediate_size"]
P_COLUMNS = ["share_p0", "share_p2"]
GROWTH_COLUMNS = [
    "measure",
    "axis",
    "fixed_axis",
    "fixed_value",
    "fit",
    "exponent",
    "exponent_se",
    "log10_per_unit",
    "log10_per_unit_se",
    "n_points",
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


def measure_columns() -> list[str]:
    """The measure columns of models.csv: every registered measure, in SPEC 9 order."""
    from .measures import measure_names

    return measure_names()


def model_columns() -> list[str]:
    return SIZE_COLUMNS + measure_columns() + P_COLUMNS


def log10_values(models: pd.DataFrame, name: str) -> np.ndarray | None:
    """log10 of measure ``name`` per model (the value itself for log10 measures); None when
    some model lacks it or a non-log measure is not positive (no log to fit)."""
    from .measures import get_measure

    if name not in models.columns:
        return None
    y = models[name].to_numpy(dtype=np.float64)
    if not get_measure(name).log10:
        if not np.all(y > 0):
            return None
        y = np.log10(y)
    return y if y.size and np.all(np.isfinite(y)) else None


def growth_table(models: pd.DataFrame) -> pd.DataFrame:
    """Per-fixed and pooled growth fits of every measure (log10 of it) along both axes (see
    module doc). Measures undefined on some model (``distance_from_init`` without an init) are
    left out."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for proxy in measure_columns():
        y_all = log10_values(models, proxy)
        if y_all is None:
            continue
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
                rows.append(
                    _fit_row(proxy, axis, other, int(z0), "per_fixed", x_all[sel], y_all[sel], None)
                )
            if usable:
                sel = np.logical_or.reduce(usable)
                rows.append(
                    _fit_row(proxy, axis, other, None, "pooled", x_all[sel], y_all[sel], z_all[sel])
                )
    return pd.DataFrame(rows, columns=GROWTH_COLUMNS)


def _fit_row(
    proxy: str,
    axis: str,
    other: str,
    z0: int | None,
    fit: str,
    x: np.ndarray,
    y: np.ndarray,
    groups: np.ndarray | None,
) -> dict[str, Any]:
    e, e_se = ols(np.log10(x), y, groups)
    u, u_se = ols(x, y, groups)
    return {
        "measure": proxy,
        "axis": axis,
        "fixed_axis": other,
        "fixed_value": z0,
        "fit": fit,
        "exponent": e,
        "exponent_se": e_se,
        "log10_per_unit": u,
        "log10_per_unit_se": u_se,
        "n_points": int(x.size),
    }


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
        **{n: a.measures.get(n) for n in measure_columns()},
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
    #: (model, reason) for each model that could not be analyzed (bad input) and was left out.
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def to_dir(self, path: Any, extra: Callable[[Any], object] | None = None) -> Any:
        """Write models.csv, growth.csv and skipped.csv (when models were skipped) into ``path``
        through ``io.output_dir`` (one atomic write). No figures: ``extra(tmp)`` may add files
        to the same write, e.g. ``lambda tmp: report.write_study(study, tmp)`` for figures/ and
        report.html (the CLI does this); CSVs alone need no matplotlib."""
        from pathlib import Path

        import pandas as pd

        from .io import output_dir

        with output_dir(path) as tmp:
            self.models.to_csv(tmp / "models.csv", index=False, float_format="%.17g")
            self.growth.to_csv(tmp / "growth.csv", index=False, float_format="%.17g")
            if self.skipped:
                pd.DataFrame(self.skipped, columns=["model", "reason"]).to_csv(
                    tmp / "skipped.csv", index=False
                )
            if extra is not None:
                extra(tmp)
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
    on_skip: Callable[[str, str], None] | None = None,
    engine: str = "local",
    engine_options: dict[str, Any] | None = None,
    prefix: str | None = None,
) -> Study:
    """Analyze every model (cache reused) and fit the growth of both proxies.

    ``engine``: ``"local"`` (this process, one model after the other) or ``"ray"`` (one Ray task
    per model; ``engine_options`` go to ``specbound.engines.ray.analyze_models``: ``address``,
    ``num_cpus``, ``threads``, ``max_retries``, ``state_dir`` to resume, ...).

    A model that cannot be analyzed (a ``SpecboundError``: bad checkpoint, config, ...) is
    skipped: ``on_skip(name, reason)`` is called and it is listed in ``Study.skipped``. Raises
    SpecboundError only when no model could be analyzed.
    """
    import pandas as pd

    from .analysis import analyze
    from .errors import SpecboundError

    if len(models) == 0:
        raise SpecboundError("scale needs at least one model")
    seen: dict[str, str] = {}
    for i, m in enumerate(models):  # a model listed twice would weigh twice in the growth fits
        if not isinstance(m, (str, os.PathLike)):
            continue
        label = str(names[i] if names is not None else os.fspath(m))
        key = os.path.realpath(m) if os.path.exists(m) else os.fspath(m)  # ./a and a alike
        if key in seen:
            same = "" if seen[key] == label else f" (as '{seen[key]}' and '{label}')"
            raise SpecboundError(f"model '{label}' is listed twice{same}; list each model once")
        seen[key] = label
    from .analysis import check_device
    from .bounds import check_grid_m, check_l_phi

    # options are checked once, up front: a bad option is not a broken model
    grid_m = check_grid_m(grid_m)
    l_phi = None if l_phi is None else check_l_phi(l_phi)
    check_device(device)
    analyses = []
    skipped: list[tuple[str, str]] = []
    if engine != "local":
        from .engines import get_engine

        analyses, skipped = get_engine(engine).analyze_models(
            models,
            names=names,
            on_model=on_model,
            on_skip=on_skip,
            analyze_kwargs={
                "l_phi": l_phi,
                "grid_m": grid_m,
                "device": device,
                "cache": cache,
                **({"prefix": prefix} if prefix is not None else {}),
            },
            **(engine_options or {}),
        )
    for i, m in enumerate(models if engine == "local" else []):
        name = names[i] if names is not None else None
        label = str(name or m)
        if on_model is not None:
            on_model(i + 1, len(models), label)
        try:
            analyses.append(
                analyze(
                    m,
                    l_phi=l_phi,
                    grid_m=grid_m,
                    device=device,
                    cache=cache,
                    name=name,
                    prefix=prefix,
                )
            )
        except SpecboundError as exc:
            skipped.append((label, str(exc)))
            if on_skip is not None:
                on_skip(label, str(exc))
    if not analyses:
        raise SpecboundError(
            f"none of the {len(models)} models could be analyzed (first: "
            f"{skipped[0][0]}: {skipped[0][1]})"
        )
    table = pd.DataFrame([model_row(a) for a in analyses], columns=model_columns())
    table = table.sort_values(["num_layers", "hidden_size", "model"], kind="stable")
    order = list(table.index)
    table = table.reset_index(drop=True)
    return Study(table, growth_table(table), [analyses[i] for i in order], skipped=skipped)


def read_manifest(path: Any) -> list[str]:
    """Models listed in a text file: one per line, ``#`` comments and blank lines ignored.

    Relative paths are taken relative to the manifest's directory when they exist there.
    """
    from pathlib import Path

    from .checkpoint import check_regular_file
    from .errors import SpecboundError

    p = Path(path)
    try:
        if p.exists():  # a FIFO would block forever: refuse anything but a regular file
            check_regular_file(p, "manifest", advice="pass a text file listing models")
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SpecboundError(f"cannot read manifest {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SpecboundError(
            f"manifest {p} is not UTF-8 text; pass a text file listing models, one per line"
        ) from None
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
    return [
        f"google/bert_uncased_L-{L}_H-{N}_A-{N // 64}"
        for L in MINIATURE_LAYERS
        for N in MINIATURE_HIDDEN
    ]


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
