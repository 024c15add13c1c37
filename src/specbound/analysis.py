"""``analyze``: checkpoint -> spectra (cached) -> both proxies, as an ``Analysis``.

This is the Python API the CLI is a thin layer on. Tables are built lazily so that the
command line does not pay for pandas unless it writes them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._version import __version__
from .bounds import LN10, BoundDetails, Bounds, compute_bounds, logsumexp
from .core import ModelSpec
from .errors import SpecboundError
from .spectra import MATRIX_TYPES, Spectra

if TYPE_CHECKING:
    import pandas as pd

    from .measures import MeasureInput
    from .weights import WeightSpectra

Progress = Callable[[int, int], None]

MATRIX_COLUMNS = [
    "layer",
    "head",
    "matrix_type",
    "rows",
    "cols",
    "spectral_norm",
    "frobenius_norm",
    "nuclear_norm",
    "norm_21",
    "norm_11",
    "rank",
    "stable_rank",
    "alpha",
    "log10_alpha",
    "gamma",
    "log10_gamma",
    "scale",
    "p_star",
    "contribution",
    "log10_scale",
    "log10_contribution",
]

WEIGHT_COLUMNS = [
    "layer",
    "role",
    "tensor",
    "rows",
    "cols",
    "spectral_norm",
    "frobenius_norm",
    "stable_rank",
    "htsr_alpha",
    "htsr_alpha_weighted",
    "htsr_xmin",
    "htsr_D",
    "htsr_num_tail",
]


def pd_int(x: np.ndarray) -> np.ndarray:
    """Integer counts with missing cells: an object array of int or None (CSV: empty)."""
    return np.array([None if not np.isfinite(v) else int(v) for v in x], dtype=object)


def _exp(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.exp(x)


def _missing_if_not_finite(columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Float cells that are inf/NaN (a value beyond float64, the log of 0) become NaN = missing.

    SPEC 6: no inf in outputs. A value column that overflows is missing (written empty); its
    ``log10_`` column always holds the number.
    """
    out = {}
    for k, v in columns.items():
        v = np.asarray(v)
        if v.dtype.kind == "f":
            v = np.where(np.isfinite(v), v, np.nan)
        out[k] = v
    return out


@dataclass
class Analysis:
    """One model's spectra and proxies. ``matrices``/``layers`` are pandas DataFrames."""

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

    def measure_input(self) -> MeasureInput:
        """What the measures read (``specbound.measures``); made once per Analysis, so the
        power-law fits behind the measures and the weights table are computed once."""
        if "_measure_input" not in self.__dict__:
            from .measures import MeasureInput
            from .weights import WeightSpectra

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
            from .measures import compute_measures

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
        from .weights import WeightSpectra

        w = self.weight_spectra or WeightSpectra.empty()
        fits = self.measure_input().fits

        def col(attr: str) -> np.ndarray:
            return np.array(
                [np.nan if getattr(f, attr) is None else float(getattr(f, attr)) for f in fits],
                dtype=np.float64,
            )

        alpha, lmax = col("alpha"), col("lambda_max")
        with np.errstate(divide="ignore", invalid="ignore"):
            weighted = alpha * np.log10(lmax)
        return _missing_if_not_finite(
            {
                "layer": w.layer,
                "role": w.role_names,
                "tensor": np.asarray(w.tensor, dtype=object),
                "rows": w.rows,
                "cols": w.cols,
                "spectral_norm": w.spectral_norm,
                "frobenius_norm": w.frobenius_norm,
                "stable_rank": w.stable_rank,
                "htsr_alpha": alpha,
                "htsr_alpha_weighted": weighted,
                "htsr_xmin": col("xmin"),
                "htsr_D": col("D"),
                "htsr_num_tail": pd_int(col("num_tail")),
            }
        )

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

    def matrix_columns(self) -> dict[str, np.ndarray]:
        """The columns of ``matrices`` as numpy arrays (no pandas needed)."""
        s, d = self.spectra, self.details
        la = d.log_alpha[s.layer]
        return _missing_if_not_finite(
            {
                "layer": s.layer,
                "head": s.head,
                "matrix_type": np.array(MATRIX_TYPES, dtype=object)[s.matrix_type],
                "rows": s.rows,
                "cols": s.cols,
                "spectral_norm": s.spectral_norm,
                "frobenius_norm": s.frobenius_norm,
                "nuclear_norm": s.nuclear_norm,
                "norm_21": s.norm_21,
                "norm_11": s.norm_11,
                "rank": s.rank,
                "stable_rank": s.stable_rank,
                "alpha": _exp(la),
                "log10_alpha": la / LN10,
                "gamma": _exp(d.log_gamma),
                "log10_gamma": d.log_gamma / LN10,
                "scale": _exp(d.log_scale),
                "p_star": d.p_star,
                "contribution": _exp(d.log_contribution),
                "log10_scale": d.log_scale / LN10,
                "log10_contribution": d.log_contribution / LN10,
            }
        )

    @property
    def matrices(self) -> pd.DataFrame:
        """One row per matrix (columns ``MATRIX_COLUMNS``)."""
        import pandas as pd

        return pd.DataFrame(self.matrix_columns(), columns=MATRIX_COLUMNS)

    def layer_columns(self) -> dict[str, np.ndarray]:
        s, d = self.spectra, self.details
        L = self.spec.num_layers
        c = _exp(d.log_contribution)
        out: dict[str, np.ndarray] = {
            "layer": np.arange(L),
            "alpha": _exp(d.log_alpha),
            "log10_alpha": d.log_alpha / LN10,
            "log10_xi": d.log_xi / LN10,
        }
        for t, name in enumerate(MATRIX_TYPES):
            out[f"contribution_{name}"] = np.bincount(
                s.layer[s.matrix_type == t], weights=c[s.matrix_type == t], minlength=L
            )
        out["contribution_total"] = np.bincount(s.layer, weights=c, minlength=L)
        lc = d.log_contribution
        out["log10_contribution_total"] = (
            np.array(
                [
                    float(logsumexp(lc[s.layer == l])) if np.any(s.layer == l) else -np.inf
                    for l in range(L)
                ]
            )
            / LN10
        )
        out["n_p0"] = np.bincount(s.layer[d.p_star == 0], minlength=L)
        out["n_p2"] = np.bincount(s.layer[d.p_star == 2], minlength=L)
        out["mean_p_star"] = np.bincount(s.layer, weights=d.p_star, minlength=L) / np.maximum(
            np.bincount(s.layer, minlength=L), 1
        )
        return _missing_if_not_finite(out)

    @property
    def layers(self) -> pd.DataFrame:
        """Per-layer alpha, contributions by matrix type, and p* counts."""
        import pandas as pd

        return pd.DataFrame(self.layer_columns())

    def summary(self) -> dict[str, Any]:
        """The content of summary.json."""
        s = self.spec
        return {
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
            "adaptations": list(self.adaptations),
            "specbound_version": __version__,
        }

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
        specbound did not write).

        ``extra(tmp)`` may add files (a report, figures) to the same atomic write. Missing
        (non-finite) cells are written empty; summary.json is strict JSON (no NaN/Infinity).
        """
        from .io import output_dir

        summary = json.dumps(self.summary(), indent=2, allow_nan=False) + "\n"
        with output_dir(path) as tmp:
            (tmp / "summary.json").write_text(summary)
            self.matrices.to_csv(tmp / "matrices.csv", index=False, float_format="%.17g")
            self.layers.to_csv(tmp / "layers.csv", index=False, float_format="%.17g")
            if self.weight_spectra is not None:  # absent when no chosen measure needed them
                self.weights.to_csv(tmp / "weights.csv", index=False, float_format="%.17g")
            self.spectra.save(tmp / "spectra.npz")
            if extra is not None:
                extra(tmp)
        return Path(path)


def check_device(device: object) -> None:
    """SpecboundError unless ``device`` is usable: None/"numpy", or a torch device this machine
    has ("cpu", "cuda", "cuda:N"); checked up front, even when the spectra come from the cache."""
    if device is None or device == "numpy":
        return
    if not isinstance(device, str):
        raise SpecboundError(f"device must be a string (numpy, cpu, cuda), got {device!r}")
    from .torch_backend import resolve_device

    resolve_device(device)


def _spectra_function(device: str | None) -> Callable[..., Spectra]:
    if device in (None, "numpy"):
        from .spectra import block_spectra

        return block_spectra
    from .torch_backend import make_block_spectra

    return make_block_spectra(device)


def _tensor_names(adapter: Any, layer: int) -> dict[str, str]:
    """Role -> tensor name(s) of block ``layer`` for weights.csv (gate and up joined by '+')."""
    try:
        roles = adapter.layer_roles(layer).roles
    except Exception:  # an adapter without names: the table says nothing rather than guess
        return {}
    out = {r: "+".join(roles.get(r, [])) for r in ("query", "key", "value", "output", "ffn_out")}
    out["ffn_in"] = "+".join(list(roles.get("ffn_gate", [])) + list(roles.get("ffn_in", [])))
    return out


def compute_spectra(
    adapter: Any, device: str | None = None, progress: Progress | None = None
) -> Spectra:
    """Spectra of every block's canonical matrices, streaming one block at a time."""
    return compute_all_spectra(adapter, device, progress, weights=False)[0]


def compute_all_spectra(
    adapter: Any,
    device: str | None = None,
    progress: Progress | None = None,
    weights: bool = True,
) -> tuple[Spectra, WeightSpectra | None]:
    """Spectra of the canonical matrices and (``weights``) of SPEC 9's raw weight matrices.

    One block's tensors are in memory at a time; a shared block (ALBERT) is computed once.
    """
    from .weights import WeightSpectra

    spec = adapter.spec()
    parts: list[Spectra] = []
    wparts: list[WeightSpectra] = []
    seen: dict[Any, tuple[Spectra, WeightSpectra | None]] = {}
    L = spec.num_layers
    for l in range(L):
        key = adapter.share_key(l)
        if key is not None and key in seen:
            part, wpart = seen[key]
            part = part.with_layers(l)
            wpart = wpart.with_layers(l) if wpart is not None else None
        else:
            part, wpart = compute_block(adapter, l, device, weights)
            if key is not None:
                seen[key] = (part, wpart)
        parts.append(part)
        if wpart is not None:
            wparts.append(wpart)
        if progress is not None:
            progress(l + 1, L)
    return Spectra.concat(parts), (WeightSpectra.concat(wparts) if weights else None)


def compute_block(
    adapter: Any, layer: int, device: str | None = None, weights: bool = True
) -> tuple[Spectra, WeightSpectra | None]:
    """Block ``layer``'s part of ``compute_all_spectra`` (what one engine task computes)."""
    from .spectra import block_spectra_with
    from .weights import attention_jobs, block_weight_spectra, ffn_singular_values

    block = adapter.layer(layer)
    names = _tensor_names(adapter, layer) if weights else {}
    att = None
    if device in (None, "numpy"):  # the raw-weight SVDs join the block's pool round
        part, att = block_spectra_with(
            block, adapter.spec(), attention_jobs(block, names) if weights else ()
        )
    else:
        part = _spectra_function(device)(block, adapter.spec())
    wpart = (
        block_weight_spectra(block, ffn_singular_values(part), names, att or None)
        if weights
        else None
    )
    return part, wpart


def compute_distance(adapter: Any, init_adapter: Any, where: str = "--init") -> np.ndarray:
    """||W - W0||_F^2 for every raw weight, W0 from ``init_adapter`` (same layout), in the row
    order of ``WeightSpectra``."""
    from .weights import block_distance

    L = adapter.spec().num_layers
    return (
        np.concatenate(
            [
                block_distance(
                    adapter.layer(l), init_adapter.layer(l), _tensor_names(adapter, l), where
                )
                for l in range(L)
            ]
        )
        if L
        else np.zeros(0)
    )


def _init_adapter(init: Any, ckpt: Any, spec: ModelSpec, mapping: Any, prefix: Any) -> Any:
    """The adapter of the initialization checkpoint, checked to match ``spec``."""
    from .adapters.registry import adapter_for
    from .checkpoint import load_checkpoint
    from .errors import ConfigError

    is_path = isinstance(init, (str, Path))
    try:  # say which of the two checkpoints is wrong
        init_ckpt = load_checkpoint(
            init, None if is_path else ckpt.config, name=str(init) if is_path else "init state dict"
        )
        kw = {"prefix": prefix} if prefix is not None else {}
        init_adapter = adapter_for(init_ckpt, mapping, **kw)
        ispec = init_adapter.spec()
    except SpecboundError as exc:
        raise type(exc)(f"--init {init if is_path else 'state dict'}: {exc}") from None
    for f in (
        "architecture",
        "num_layers",
        "hidden_size",
        "num_heads",
        "head_dim",
        "intermediate_size",
        "num_kv_heads",
    ):
        if getattr(ispec, f) != getattr(spec, f):
            raise ConfigError(
                f"--init {init_ckpt.name} has {f} = {getattr(ispec, f)} but the model has "
                f"{getattr(spec, f)}; distance_from_init needs the same architecture and shapes"
            )
    return init_adapter


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
    from .adapters.registry import adapter_for
    from .bounds import check_grid_m, check_l_phi
    from .checkpoint import load_checkpoint
    from .measures import needs_weight_spectra, resolve_names

    # options first (SpecboundError), before any reading or cache lookup
    grid_m = check_grid_m(grid_m)
    if l_phi is not None:
        l_phi = check_l_phi(l_phi)
    check_device(device)
    choice = None if measures is None else resolve_names(measures)
    if choice is not None and "distance_from_init" in choice and init is None:
        # asked for by name: an empty cell would look like an answer
        raise SpecboundError(
            "measure distance_from_init needs the initialization weights; "
            "pass --init CHECKPOINT (init= from Python) or drop it from "
            "--measures"
        )
    ckpt = load_checkpoint(model, config, name=name)
    adapter = adapter_for(ckpt, mapping, **({"prefix": prefix} if prefix is not None else {}))
    spec = adapter.spec()
    init_adapter = _init_adapter(init, ckpt, spec, mapping, prefix) if init is not None else None
    if l_phi is None:
        l_phi = check_l_phi(spec.l_phi)

    want_weights = needs_weight_spectra(choice)
    cached = None
    key = None
    if cache:
        from . import cache as spectra_cache

        key = spectra_cache.cache_key(ckpt, spec, adapter)
        if key is not None:
            cached = spectra_cache.load(key, spec)
        if cached is not None and want_weights and cached[1] is None:
            cached = None  # stored by a run that skipped the raw weights: recompute both
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
    )
