"""Layerwise exports from the HTSR power-law fits (``specbound layers``): AlphaPruning's
per-layer sparsities and TempBalance's per-layer learning-rate factors, keyed by the
checkpoint's tensor names.

AlphaPruning (Lu et al., NeurIPS 2024, arXiv 2410.10912; the authors' ``ww_sparsity`` with
``s1 = 1 - epsilon``, ``s2 = 1 + epsilon``). Each layer (transformer block; ``granularity=
"matrix"``: each weight matrix) gets the metric q = mean alpha of its ``ok`` fits, then

    r_i = s1 + (q_i - q_min) / (q_max - q_min) (s2 - s1)          (in [1 - eps, 1 + eps])
    sparsity_i = eta r_i,   eta = S sum_i P_i / sum_i P_i r_i

over the P_i parameters of each matrix, so that the parameter-weighted mean sparsity is the
target S exactly. Larger alpha (a less heavy tail: a less well-trained layer) is pruned more.

TempBalance (Zhou et al., NeurIPS 2023, openreview.net/forum?id=oyV9FslE3j; ``tb_linear_map``
of the authors' ``Tempbalance`` with ``lr_min_ratio`` = s1, ``lr_max_ratio`` = s2, defaults 0.5
and 1.5): each weight matrix gets the learning-rate factor

    f_i = s1 + (alpha_i - alpha_min) / (alpha_max - alpha_min) (s2 - s1)

(the layer's learning rate is f_i times the global one; larger alpha trains faster).

Failed fits (``htsr_fit`` short_tail or poor) are not mapped and take no part in q_min, q_max,
alpha_min, alpha_max: such a matrix gets the target sparsity S (a layer none of whose fits is
``ok`` likewise) and the learning-rate factor 1, the untuned rate, as TempBalance does for the
layers it skips; eta is then computed over the mapped matrices only, so the weighted mean stays
S. When every mapped metric is equal, r = 1 (and f = (s1 + s2)/2). The mapping always reads
specbound's fit of SPEC 9 (WeightWatcher's default alpha); the papers' own runs use other
x_min rules (AlphaPruning ``xmin_peak``, TempBalance the median eigenvalue).

Rows: one per checkpoint tensor of each raw weight of SPEC 9; a gated MLP's stacked
[W_gate; W_up] is one fit and gives its value to both tensors (half the parameters each); a
fused projection (GPT-2 ``c_attn``) has one row per part (role query, key, value) under the same
tensor name.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .analysis import Analysis, analyze
from .errors import Param, SpecboundError, SpecboundValueError
from .measures.powerlaw import FIT_OK
from .validation import Interval, Options, validate_params

if TYPE_CHECKING:
    import pandas as pd

    from .analysis import Analysis

METHODS = ("alphapruning", "tempbalance")
GRANULARITIES = ("layer", "matrix")
#: Defaults: AlphaPruning's README example (S = 0.7, epsilon = 0.2) and TempBalance's
#: ``lr_min_ratio`` / ``lr_max_ratio``.
DEFAULT_SPARSITY = 0.7
DEFAULT_EPSILON = 0.2
DEFAULT_LR_MIN = 0.5
DEFAULT_LR_MAX = 1.5

BASE_COLUMNS = [
    "tensor",
    "layer",
    "role",
    "parameters",
    "htsr_alpha",
    "htsr_num_tail",
    "htsr_fit",
]
ALPHAPRUNING_COLUMNS = [*BASE_COLUMNS, "metric", "mapped", "ratio", "sparsity"]
TEMPBALANCE_COLUMNS = [*BASE_COLUMNS, "mapped", "lr_factor"]


def _unit(q: np.ndarray) -> np.ndarray:
    """(q - min) / (max - min), 0.5 everywhere when max == min (every metric equal)."""
    lo, hi = float(np.min(q)), float(np.max(q))
    if hi == lo:
        return np.full(q.shape, 0.5)
    return (q - lo) / (hi - lo)


#: The parameters' constraints (:mod:`specbound.validation`), checked once at each public
#: function's boundary: a target sparsity S in (0, 1), epsilon in [0, 1), a learning-rate
#: factor > 0, a method of METHODS, a granularity of GRANULARITIES.
SPARSITY = (Interval(float, 0.0, 1.0, closed="neither"),)
EPSILON = (Interval(float, 0.0, 1.0, closed="left"),)
LR_FACTOR = (Interval(float, 0.0, None, closed="neither"),)
METHOD = (Options(*METHODS),)
GRANULARITY = (Options(*GRANULARITIES),)
_OPTIONS = {
    "method": METHOD,
    "sparsity": SPARSITY,
    "epsilon": EPSILON,
    "lr_min": LR_FACTOR,
    "lr_max": LR_FACTOR,
    "granularity": GRANULARITY,
}


@validate_params({"sparsity": SPARSITY, "epsilon": EPSILON})
def alphapruning_sparsities(
    metric: ArrayLike,
    parameters: ArrayLike,
    sparsity: float = DEFAULT_SPARSITY,
    epsilon: float = DEFAULT_EPSILON,
) -> tuple[np.ndarray, np.ndarray]:
    """(ratio r, sparsity) of each matrix from its metric (NaN: not mapped, gets ``sparsity``
    and ratio NaN) and parameter count; the parameter-weighted mean sparsity is ``sparsity``."""
    s, eps = sparsity, epsilon  # checked (@validate_params)
    q = np.asarray(metric, dtype=np.float64)
    p = np.asarray(parameters, dtype=np.float64)
    mapped = np.isfinite(q)
    ratio = np.full(q.shape, np.nan)
    out = np.full(q.shape, s)
    if mapped.any():
        ratio[mapped] = (1.0 - eps) + _unit(q[mapped]) * (2.0 * eps)
        eta = s * float(np.sum(p[mapped])) / float(np.sum(p[mapped] * ratio[mapped]))
        out[mapped] = eta * ratio[mapped]
    worst = float(np.max(out)) if out.size else 0.0
    if worst >= 1.0:
        raise SpecboundError(
            f"sparsity {s:g} with epsilon {eps:g} gives a layer sparsity of {worst:.4g} >= 1; "
            "lower the sparsity or the epsilon"
        )
    return ratio, out


@validate_params({"lr_min": LR_FACTOR, "lr_max": LR_FACTOR})
def tempbalance_factors(
    alpha: ArrayLike, lr_min: float = DEFAULT_LR_MIN, lr_max: float = DEFAULT_LR_MAX
) -> np.ndarray:
    """TempBalance's ``tb_linear_map`` factor of each matrix (alpha NaN: not mapped, 1)."""
    s1, s2 = lr_min, lr_max  # checked (@validate_params); their order is checked here
    if s2 < s1:
        raise SpecboundValueError(
            Param("lr_max"), " must be >= ", Param("lr_min", f"{s1:g}"), f", got {s2:g}"
        )
    a = np.asarray(alpha, dtype=np.float64)
    mapped = np.isfinite(a)
    out = np.ones(a.shape)
    if mapped.any():
        out[mapped] = s1 + _unit(a[mapped]) * (s2 - s1)
    return out


def _weight_rows(a: Analysis) -> dict[str, np.ndarray]:
    """The raw weights of ``a`` split into checkpoint tensors (gate + up -> two rows)."""
    if a.weight_spectra is None or not len(a.weight_spectra):
        raise SpecboundError(
            f"{a.model}: no raw weight matrix to fit (the layerwise methods read htsr_alpha)"
        )
    cols = a.weight_columns()
    rows: dict[str, list[Any]] = {k: [] for k in [*BASE_COLUMNS, "matrix", "ok"]}
    for i in range(len(cols["tensor"])):
        names = [n for n in str(cols["tensor"][i]).split("+") if n] or [
            f"{cols['role'][i]} of block {int(cols['layer'][i])}"
        ]
        size = int(cols["rows"][i]) * int(cols["cols"][i])
        for name in names:
            rows["tensor"].append(name)
            rows["layer"].append(int(cols["layer"][i]))
            rows["role"].append(str(cols["role"][i]))
            rows["parameters"].append(size // len(names))
            rows["htsr_alpha"].append(float(cols["htsr_alpha"][i]))
            rows["htsr_num_tail"].append(cols["htsr_num_tail"][i])
            rows["htsr_fit"].append(str(cols["htsr_fit"][i]))
            rows["matrix"].append(i)
            rows["ok"].append(cols["htsr_fit"][i] == FIT_OK)
    out = {k: np.asarray(v, dtype=object) for k, v in rows.items()}
    out["parameters"] = np.asarray(rows["parameters"], dtype=np.int64)
    out["htsr_alpha"] = np.asarray(rows["htsr_alpha"], dtype=np.float64)
    out["layer"] = np.asarray(rows["layer"], dtype=np.int64)
    out["ok"] = np.asarray(rows["ok"], dtype=bool)
    return out


@validate_params(_OPTIONS)
def layerwise_frame(
    a: Analysis,
    method: str,
    *,
    sparsity: float = DEFAULT_SPARSITY,
    epsilon: float = DEFAULT_EPSILON,
    lr_min: float = DEFAULT_LR_MIN,
    lr_max: float = DEFAULT_LR_MAX,
    granularity: str = "layer",
) -> pd.DataFrame:
    """The layerwise export of one analysis (see the module docstring): one row per checkpoint
    tensor (``tensor``), with its fit and ``sparsity`` (alphapruning) or ``lr_factor``
    (tempbalance); ``mapped`` is False where a failed fit got the fallback value."""
    import pandas as pd

    r = _weight_rows(a)
    alpha_ok = np.where(r["ok"], r["htsr_alpha"], np.nan)
    base = {k: r[k] for k in BASE_COLUMNS}
    if method == "tempbalance":
        factors = tempbalance_factors(alpha_ok, lr_min, lr_max)
        return pd.DataFrame(
            {**base, "mapped": r["ok"], "lr_factor": factors}, columns=TEMPBALANCE_COLUMNS
        )
    if granularity == "layer":  # the layer's metric: the mean alpha of its ok fits
        metric = np.full(alpha_ok.shape, np.nan)
        for layer in np.unique(r["layer"]):
            sel = r["layer"] == layer
            # each fit once, however many tensors it spans (gate + up)
            fits = {
                int(m): alpha_ok[k]
                for k, m in zip(np.flatnonzero(sel), r["matrix"][sel], strict=True)
            }
            vals = [v for v in fits.values() if math.isfinite(v)]
            if vals:
                metric[sel] = float(np.mean(vals))
    else:
        metric = alpha_ok
    ratio, sp = alphapruning_sparsities(metric, r["parameters"], sparsity, epsilon)
    return pd.DataFrame(
        {**base, "metric": metric, "mapped": np.isfinite(metric), "ratio": ratio, "sparsity": sp},
        columns=ALPHAPRUNING_COLUMNS,
    )


@validate_params(_OPTIONS)
def layerwise(
    model: Any,
    method: str,
    *,
    sparsity: float = DEFAULT_SPARSITY,
    epsilon: float = DEFAULT_EPSILON,
    lr_min: float = DEFAULT_LR_MIN,
    lr_max: float = DEFAULT_LR_MAX,
    granularity: str = "layer",
    **analyze_kw: Any,
) -> pd.DataFrame:
    """``layerwise_frame`` of ``model`` (an ``Analysis``, or anything ``specbound.analyze``
    reads, with ``analyze_kw`` passed on): AlphaPruning sparsities or TempBalance factors."""
    a = (
        model
        if isinstance(model, Analysis)
        else analyze(model, measures=["htsr_alpha"], **analyze_kw)
    )
    return layerwise_frame(
        a,
        method,
        sparsity=sparsity,
        epsilon=epsilon,
        lr_min=lr_min,
        lr_max=lr_max,
        granularity=granularity,
    )
