"""``analyze``: checkpoint -> spectra (cached) -> both proxies, as an ``Analysis``.

This is the Python API the CLI is a thin layer on. Tables are built lazily so that the
command line does not pay for pandas unless it writes them.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._version import __version__
from ..adapters.registry import adapter_for, init_adapter_for
from ..core import ModelSpec
from ..errors import Param, SpecboundError
from ..io import output_dir
from ..io.checkpoint import load_checkpoint
from ..io.files import json_safe, write_csv
from ..io.outdir import local_inputs
from ..linalg import cache as spectra_cache
from ..linalg.model import (
    DEVICE,
    Progress,
    check_device,
    compute_all_spectra,
    compute_distance,
)
from ..linalg.spectra import Spectra
from ..linalg.weights import WeightSpectra
from ..measures import (
    MeasureInput,
    compute_measures,
    get_measure,
    measure_names,
    needs_weight_spectra,
    resolve_names,
)
from ..measures.bounds import GRID_M, L_PHI, BoundDetails, Bounds, compute_bounds
from ..measures.powerlaw import fit_summary, weight_fits
from ..measures.spectrum_adaptive import (
    FIXED_INDICES,
    adaptive_headrooms,
    ceiling_gap,
    headroom_min,
    kept_singular_values,
    log10_fixed_index_bound,
    log10_rank_ceiling,
    log_contribution_curve,
    share_p0,
)
from ..tables import (
    MATRIX_COLUMNS,
    WEIGHT_COLUMNS,
    details_frame,
    headroom_sentence,
    layer_columns,
    matrix_columns,
    weight_columns,
)
from ..validation import Boolean, IsCallable, Names, Text, check_param, validate_params

if TYPE_CHECKING:
    import pandas as pd

    from ..linalg.weights import WeightSpectra
    from ..measures import MeasureInput

__all__ = [
    "MATRIX_COLUMNS",
    "WEIGHT_COLUMNS",
    "Analysis",
    "Progress",
    "analyze",
    "check_device",
]


class AnalysisDetails(BoundDetails):
    """``Analysis.details``: the ``BoundDetails`` of the analysis (``a.details.p_star``,
    ``a.details.log_alpha``, ...) that is also callable: ``a.details()`` is the one per-matrix
    DataFrame of ``Analysis.details_frame`` (canonical matrices and raw weights)."""

    _analysis: Analysis | None = None

    @classmethod
    def of(cls, details: BoundDetails, analysis: Analysis) -> AnalysisDetails:
        out = cls(**{f.name: getattr(details, f.name) for f in dataclasses.fields(BoundDetails)})
        out._analysis = analysis
        return out

    def __call__(self) -> pd.DataFrame:
        if self._analysis is None:
            raise SpecboundError("these details belong to no Analysis; use Analysis.details()")
        return self._analysis.details_frame()


@dataclass
class Analysis:
    """One model's spectra, proxies and measures (SPEC 2-10).

    Tables (pandas DataFrames): ``matrices`` (canonical matrices), ``layers``, ``weights`` (raw
    weights), ``details()`` (both kinds in one frame); ``summary()`` is a JSON-safe dict.
    ``spectral_norm`` columns are sigma_max (the largest singular value); WeightWatcher's
    ``spectral_norm`` is lambda_max = sigma_max^2 (here ``htsr`` fits use lambda = sigma^2).
    The depth factor alpha(l) of SPEC 4 is ``depth_factor`` in every table; ``htsr_alpha`` is
    WeightWatcher's power-law exponent. Bounds: ``bounds.<name>.log10`` (and ``.ln``).
    """

    model: str
    spec: ModelSpec
    spectra: Spectra
    details: BoundDetails
    adaptations: list[str] = field(default_factory=list)
    from_cache: bool = False
    num_parameters: int | None = None  # every tensor in the checkpoint, embeddings included
    weight_spectra: WeightSpectra | None = None  # SPEC 9's raw weight matrices
    distance_init: np.ndarray | None = None  # ||W - W0||_F^2 per raw weight (with an init)
    measure_choice: list[str] | None = None  # None: every registered measure
    #: The local paths read (the checkpoint, the init): ``to_dir`` never writes over, inside
    #: or around them (``io.outdir.check_output_dir``); () for an in-memory model.
    inputs: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        d = self.details
        if not isinstance(d, AnalysisDetails) or d._analysis is not self:
            self.details = AnalysisDetails.of(d, self)

    def details_frame(self) -> pd.DataFrame:
        """One row per matrix with every per-matrix column (``tables.DETAIL_COLUMNS``): the
        canonical matrices (``kind`` "canonical", ``matrix`` QK/OV/M_in/M_out, the columns of
        ``matrices``) then the raw weights (``kind`` "weight", ``matrix`` W_Q, W_K, W_V, W_O,
        W_in, W_out, the columns of ``weights``, when they were computed). Also ``details()``."""
        return details_frame(self)

    def measure_input(self) -> MeasureInput:
        """What the measures read (``specbound.measures``); made once per Analysis, so the
        power-law fits behind the measures and the weights table are computed once."""
        if "_measure_input" not in self.__dict__:
            self.__dict__["_measure_input"] = MeasureInput(
                self.spec,
                self.spectra,
                self.details,
                self.weight_spectra or WeightSpectra.empty(),
                self.num_parameters,
                self.distance_init,
            )
        return self.__dict__["_measure_input"]

    def _measured(self) -> tuple[dict[str, float | None], dict[str, str]]:
        if "_measure_cache" not in self.__dict__:
            self.__dict__["_measure_cache"] = compute_measures(
                self.measure_input(), self.measure_choice
            )
        return self.__dict__["_measure_cache"]

    @property
    def measures(self) -> dict[str, float | None]:
        """{measure name: value} for the chosen SPEC 9 measures (None when undefined)."""
        return dict(self._measured()[0])

    @property
    def measure_notes(self) -> dict[str, str]:
        """{measure name: why it is undefined or what it skipped}."""
        return dict(self._measured()[1])

    def weight_columns(self) -> dict[str, np.ndarray]:
        """The columns of ``weights`` as numpy arrays (no pandas needed)."""
        return weight_columns(self)

    @property
    def weights(self) -> pd.DataFrame:
        """One row per raw weight matrix of SPEC 9 (columns ``WEIGHT_COLUMNS``)."""
        import pandas as pd

        return pd.DataFrame(self.weight_columns(), columns=WEIGHT_COLUMNS)

    @property
    def bounds(self) -> Bounds:
        return self.details.bounds

    @property
    def grid_m(self) -> int:
        return self.details.bounds.grid_m

    @property
    def l_phi(self) -> float:
        return self.details.bounds.L_phi

    @property
    def spectrum_adaptive_share_p0(self) -> float:
        """Share of the QK, OV, M_in, M_out matrices whose p* is 0 (SPEC 10's diagnosis)."""
        return share_p0(self.details.p_star)

    @property
    def log10_spectrum_adaptive_ceiling(self) -> float:
        """log10 B_ceiling = log10(sum_A sqrt(r(A) N) + sqrt(L)): the rank ceiling of the
        spectrum-adaptive proxy (SPEC 10), from the numerical ranks of SPEC 3 only."""
        if not np.all(np.isfinite(self.spectra.sv_values)):
            return math.nan  # a spectrum beyond float64: its rank is unknown (summary: null)
        return log10_rank_ceiling(self.spectra.rank, self.spec.hidden_size, self.spec.num_layers)

    @property
    def spectrum_adaptive_ceiling_gap(self) -> float:
        """log10 B_ceiling - log10 B_spectrum_adaptive (>= 0; 0 when every matrix picks p* = 0,
        i.e. the proxy is a rank count that does not see the trained singular values)."""
        if not np.all(np.isfinite(self.spectra.sv_values)):
            return math.nan
        return ceiling_gap(
            self.spectra.rank,
            self.details.log_contribution,
            self.spec.hidden_size,
            self.spec.num_layers,
        )

    @property
    def adaptive_headroom(self) -> np.ndarray:
        """Per matrix (``spectra`` order), log10 s - max_{p > 0} T_p(A) / ln 10 in decades
        (SPEC 4): > 0 means p* = 0 and the scale would have to shrink that many decades before
        any p > 0 beats the rank count; NaN for rank 0 or a spectrum beyond float64."""
        if "_adaptive_headroom" not in self.__dict__:
            s, d = self.spectra, self.details
            self.__dict__["_adaptive_headroom"] = adaptive_headrooms(
                [s.singular_values(i) for i in range(len(s))],
                np.minimum(s.rows, s.cols),
                d.log_scale,
                self.spec.hidden_size,
                d.grid,
            )
        return self.__dict__["_adaptive_headroom"]

    @property
    def adaptive_headroom_min(self) -> float:
        """The smallest adaptive headroom over the matrices (the one closest to using its
        spectrum; <= 0: some matrix already does); NaN when a spectrum is beyond float64 or no
        matrix has rank >= 1."""
        if not np.all(np.isfinite(self.spectra.sv_values)):
            return math.nan
        return headroom_min(self.adaptive_headroom)

    def headroom_sentence(self) -> str | None:
        """The headroom in plain words: how far the scale of the matrix closest to using its
        spectrum (and of the farthest) would have to shrink (None when undefined)."""
        return headroom_sentence(self)

    def fixed_index_forms(self) -> dict[str, float]:
        """{``spectrum_adaptive_fixed_p0.5``, ``_p1``, ``_p2``: log10 of sum_A c(A, q) + sqrt(L),
        every matrix held at q (SPEC 10 v5; ``measures.spectrum_adaptive``, any q >= 0)."""
        a = (self.spectra, self.details.log_scale, self.spec.hidden_size, self.spec.num_layers)
        return {name: log10_fixed_index_bound(*a, q) for name, q in FIXED_INDICES}

    def contribution_curves(self) -> np.ndarray:
        """log c(A, p) over the p grid for every matrix, shape (matrices, grid) (SPEC 4); what
        the contribution-vs-p figure draws."""
        s, d = self.spectra, self.details
        k = np.minimum(s.rows, s.cols)
        rows = [
            log_contribution_curve(
                kept_singular_values(s.singular_values(i), int(k[i])),
                float(d.log_scale[i]),
                self.spec.hidden_size,
                d.grid,
            )
            for i in range(len(s))
        ]
        return np.array(rows).reshape(len(s), d.grid.size)

    def diagnostics(self) -> dict[str, float]:
        """The rank-ceiling diagnosis as one flat dict, for every per-model row (summary.json,
        models.csv, track.csv): ``spectrum_adaptive_share_p0``,
        ``spectrum_adaptive_ceiling_gap``, ``log10_spectrum_adaptive_ceiling``,
        ``adaptive_headroom_min``, then the fixed-index forms (``fixed_index_forms``)."""
        return {
            "spectrum_adaptive_share_p0": self.spectrum_adaptive_share_p0,
            "spectrum_adaptive_ceiling_gap": self.spectrum_adaptive_ceiling_gap,
            "log10_spectrum_adaptive_ceiling": self.log10_spectrum_adaptive_ceiling,
            "adaptive_headroom_min": self.adaptive_headroom_min,
            **self.fixed_index_forms(),
        }

    def htsr_fit_summary(self) -> dict[str, float | int | None]:
        """The power-law fits' quality at model level (``measures.powerlaw.fit_summary``): how many
        fits are ``ok``, ``short_tail``, ``poor`` (``htsr_fits_<verdict>``), and the means of
        alpha and alpha log10 lambda_max over the ``ok`` fits only (``htsr_alpha_ok``,
        ``htsr_alpha_weighted_ok``) with the number of fits each used
        (``htsr_alpha_fits_used``, ``htsr_alpha_weighted_fits_used``). The registered
        ``htsr_alpha`` and ``htsr_alpha_weighted`` stay SPEC 9's means over every defined fit."""
        return fit_summary(weight_fits(self.measure_input()))

    def weight_fit_rows(self) -> list[dict[str, Any]]:
        """One dict per raw weight matrix with its fit and verdict: ``tensor``, ``layer``,
        ``role``, ``htsr_alpha``, ``htsr_D``, ``htsr_num_tail``, ``htsr_fit``,
        ``htsr_fit_reason`` (summary.json's ``weight_fits``; NaN/inf cells are None)."""
        if self.weight_spectra is None:
            return []
        cols = self.weight_columns()
        keys = (
            "tensor",
            "layer",
            "role",
            "htsr_alpha",
            "htsr_D",
            "htsr_num_tail",
            "htsr_fit",
            "htsr_fit_reason",
        )
        return [{k: cols[k][i] for k in keys} for i in range(len(cols["tensor"]))]

    def matrix_columns(self) -> dict[str, np.ndarray]:
        """The columns of ``matrices`` as numpy arrays (no pandas needed)."""
        return matrix_columns(self)

    @property
    def matrices(self) -> pd.DataFrame:
        """One row per matrix (columns ``MATRIX_COLUMNS``)."""
        import pandas as pd

        return pd.DataFrame(self.matrix_columns(), columns=MATRIX_COLUMNS)

    def layer_columns(self) -> dict[str, np.ndarray]:
        """The columns of ``layers`` as numpy arrays (no pandas needed)."""
        return layer_columns(self)

    @property
    def layers(self) -> pd.DataFrame:
        """Per-layer alpha, contributions by matrix type, and p* counts."""
        import pandas as pd

        return pd.DataFrame(self.layer_columns())

    def summary(self) -> dict[str, Any]:
        """The content of summary.json: a JSON-safe dict (``json.dumps(..., allow_nan=False)``
        holds). SPEC 6: a value beyond float64 is None (``null``) and its log10 is kept; every
        other float is finite."""
        s = self.spec
        return json_safe(
            {
                "model": self.model,
                "architecture": s.architecture,
                "num_layers": s.num_layers,
                "hidden_size": s.hidden_size,
                "num_heads": s.num_heads,
                "intermediate_size": s.intermediate_size,
                "grid_m": self.grid_m,
                "L_phi": self.l_phi,
                "bounds": {
                    "spectrum_adaptive": self.bounds.spectrum_adaptive.to_dict(),
                    "norm_based": self.bounds.norm_based.to_dict(),
                },
                "measures": self.measures,
                "measure_notes": self.measure_notes,
                **self.diagnostics(),
                **self.htsr_fit_summary(),
                "weight_fits": self.weight_fit_rows(),
                "adaptations": list(self.adaptations),
                "specbound_version": __version__,
            }
        )

    def with_options(self, l_phi: float | None = None, grid_m: int | None = None) -> Analysis:
        """The same spectra with other bound options (no spectral work)."""
        details = compute_bounds(
            self.spectra,
            self.spec.num_layers,
            self.spec.hidden_size,
            self.l_phi if l_phi is None else l_phi,
            grid_m,
        )
        return dataclasses.replace(self, details=details, adaptations=list(self.adaptations))

    def to_dir(self, path: str | Path, extra: Callable[[Path], object] | None = None) -> Path:
        """Write summary.json, matrices.csv, layers.csv, weights.csv (when the raw-weight spectra
        were computed) and spectra.npz through ``io.output_dir`` (atomic; refuses a directory
        specbound did not write, or one that is, lies inside or contains ``inputs``, the
        checkpoint analyzed).

        ``extra(tmp)`` may add files (a report, figures) to the same atomic write. Missing
        (non-finite) cells are written empty; summary.json is strict JSON (no NaN/Infinity).
        """
        summary = json.dumps(self.summary(), indent=2, allow_nan=False) + "\n"
        with output_dir(path, inputs=self.inputs) as tmp:
            (tmp / "summary.json").write_text(summary)
            write_csv(self.matrices, tmp / "matrices.csv")
            write_csv(self.layers, tmp / "layers.csv")
            if self.weight_spectra is not None:  # absent when no chosen measure needed them
                write_csv(self.weights, tmp / "weights.csv")
            self.spectra.save(tmp / "spectra.npz")
            if extra is not None:
                extra(tmp)
        return Path(path)


def _check_no_init_needed(choice: list[str] | None) -> None:
    """Without ``init``, no measure asked for by name may need the initialization weights (an
    empty cell would look like an answer)."""
    needing_init = [n for n in choice or () if get_measure(n).needs_init]
    if needing_init:
        raise SpecboundError(
            f"measure {needing_init[0]} needs the initialization weights; pass ",
            Param("init", ""),
            " (a checkpoint of the same architecture) or drop it from ",
            Param("measures", ""),
        )


@validate_params(
    {
        "l_phi": (None, *L_PHI),
        "grid_m": GRID_M,
        "device": DEVICE,
        "cache": (Boolean(),),
        "progress": (None, IsCallable()),
        "name": (None, Text()),
        "measures": (None, Names(measure_names, what="measure")),
        "prefix": (None, Text(empty=True)),
        "spectra_fn": (None, IsCallable()),
    }
)
def analyze(
    model: Any,
    *,
    config: Any = None,
    l_phi: float | None = None,
    grid_m: int | None = None,
    device: str | None = None,
    cache: bool = True,
    mapping: str | Path | dict | None = None,
    progress: Progress | None = None,
    name: str | None = None,
    measures: str | list[str] | None = None,
    init: Any = None,
    prefix: str | None = None,
    spectra_fn: Callable[..., Any] | None = None,
) -> Analysis:
    """Spectra, both proxies and the SPEC 9 measures of ``model``.

    ``model``: a checkpoint directory, a hub id, an ``nn.Module`` or a state dict (with
    ``config``). ``l_phi`` defaults to the activation's Lipschitz constant, ``grid_m`` to
    ceil(L + ln max(N, 2)). ``device``: None/"numpy" (LAPACK) or a torch device ("cpu",
    "cuda"). ``cache``: reuse spectra stored on disk for an unchanged checkpoint.
    ``measures``: names (list or comma-separated) of the measures in ``Analysis.measures``;
    None = all. ``init``: the initialization weights for ``distance_from_init`` (directory, hub
    id, ``nn.Module`` or state dict of the same architecture). ``prefix``: the tensor-name
    prefix when a checkpoint holds several candidate models. ``spectra_fn(ckpt, adapter,
    device, progress, weights) -> (Spectra, WeightSpectra or None)`` replaces the local block
    loop (``compute_all_spectra``) on a cache miss: the hook engines use (``analyze --engine
    ray`` computes each block in its own task with ``compute_block``); ``weights`` says whether
    the chosen measures need the raw-weight spectra.
    """
    # options are checked first (@validate_params), before any reading or cache lookup
    choice = None if measures is None else resolve_names(measures)
    if init is None:
        _check_no_init_needed(choice)
    ckpt = load_checkpoint(model, config, name=name)
    adapter = adapter_for(ckpt, mapping, **({"prefix": prefix} if prefix is not None else {}))
    spec = adapter.spec()
    init_adapter = init_adapter_for(init, ckpt, spec, mapping, prefix) if init is not None else None
    if l_phi is None:
        l_phi = check_param(spec.l_phi, "l_phi", L_PHI)

    want_weights = needs_weight_spectra(choice)
    key = spectra_cache.cache_key(ckpt, spec, adapter) if cache else None
    cached = None if key is None else spectra_cache.load(key, spec, weights=want_weights)
    from_cache = cached is not None
    if cached is not None:
        spectra, weights = cached
    else:
        if spectra_fn is not None:
            spectra, weights = spectra_fn(ckpt, adapter, device, progress, want_weights)
        else:
            spectra, weights = compute_all_spectra(
                adapter, device=device, progress=progress, weights=want_weights
            )
        if key is not None:
            spectra_cache.store(key, spectra, weights)
    if not want_weights:  # the same outputs whether or not a cache entry holds them
        weights = None
    distance = compute_distance(adapter, init_adapter) if init_adapter is not None else None
    details = compute_bounds(spectra, spec.num_layers, spec.hidden_size, l_phi, grid_m)
    adaptations = list(spec.adaptations) + list(ckpt.notes)
    n_params = sum(int(np.prod(ckpt.source.shape(t), dtype=np.int64)) for t in ckpt.source.names())
    return Analysis(
        ckpt.name,
        spec,
        spectra,
        details,
        adaptations,
        from_cache,
        n_params,
        weights,
        distance,
        choice,
        local_inputs(ckpt.path, init),
    )
