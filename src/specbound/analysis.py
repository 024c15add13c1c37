"""``analyze``: checkpoint -> spectra (cached) -> both proxies, as an ``Analysis``.

This is the Python API the CLI is a thin layer on. Tables are built lazily so that the
command line does not pay for pandas unless it writes them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._version import __version__
from .adapters.base import ModelSpec
from .bounds import LN10, BoundDetails, Bounds, compute_bounds
from .spectra import MATRIX_TYPES, Spectra

if TYPE_CHECKING:
    import pandas as pd

Progress = Callable[[int, int], None]

MATRIX_COLUMNS = [
    "layer", "head", "matrix_type", "rows", "cols", "spectral_norm", "frobenius_norm",
    "nuclear_norm", "norm_21", "norm_11", "rank", "stable_rank", "alpha", "log10_alpha",
    "gamma", "scale", "p_star", "contribution", "log10_scale", "log10_contribution",
]


def _exp(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.exp(x)


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
        return {
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
            "scale": _exp(d.log_scale),
            "p_star": d.p_star,
            "contribution": _exp(d.log_contribution),
            "log10_scale": d.log_scale / LN10,
            "log10_contribution": d.log_contribution / LN10,
        }

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
        out["n_p0"] = np.bincount(s.layer[d.p_star == 0], minlength=L)
        out["n_p2"] = np.bincount(s.layer[d.p_star == 2], minlength=L)
        out["mean_p_star"] = np.bincount(s.layer, weights=d.p_star, minlength=L) / np.maximum(
            np.bincount(s.layer, minlength=L), 1
        )
        return out

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
            "adaptations": list(self.adaptations),
            "specbound_version": __version__,
        }

    def with_options(self, l_phi: float | None = None, grid_m: int | None = None) -> Analysis:
        """The same spectra with other bound options (no spectral work)."""
        details = compute_bounds(
            self.spectra, self.spec.num_layers, self.spec.hidden_size,
            self.l_phi if l_phi is None else l_phi, grid_m,
        )
        return Analysis(self.model, self.spec, self.spectra, details, list(self.adaptations),
                        self.from_cache, self.num_parameters)

    def to_dir(self, path: str | Path) -> Path:
        """Write summary.json, matrices.csv, layers.csv and spectra.npz, atomically."""
        from .io import atomic_dir

        with atomic_dir(path) as tmp:
            (tmp / "summary.json").write_text(json.dumps(self.summary(), indent=2) + "\n")
            self.matrices.to_csv(tmp / "matrices.csv", index=False, float_format="%.17g")
            self.layers.to_csv(tmp / "layers.csv", index=False, float_format="%.17g")
            self.spectra.save(tmp / "spectra.npz")
        return Path(path)


def _spectra_function(device: str | None) -> Callable[..., Spectra]:
    if device in (None, "numpy"):
        from .spectra import block_spectra

        return block_spectra
    from .torch_backend import make_block_spectra

    return make_block_spectra(device)


def compute_spectra(adapter: Any, device: str | None = None,
                    progress: Progress | None = None) -> Spectra:
    """Spectra of every block, streaming one block's tensors at a time."""
    spec = adapter.spec()
    fn = _spectra_function(device)
    parts: list[Spectra] = []
    seen: dict[Any, Spectra] = {}
    L = spec.num_layers
    for l in range(L):
        key = adapter.share_key(l)
        if key is not None and key in seen:
            parts.append(seen[key].with_layers(l))
        else:
            part = fn(adapter.layer(l), spec)
            if key is not None:
                seen[key] = part
            parts.append(part)
        if progress is not None:
            progress(l + 1, L)
    return Spectra.concat(parts)


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
) -> Analysis:
    """Spectra and both proxies of ``model``.

    ``model``: a checkpoint directory, a hub id, an ``nn.Module`` or a state dict (with
    ``config``). ``l_phi`` defaults to the activation's Lipschitz constant, ``grid_m`` to
    ceil(L + ln max(N, 2)). ``device``: None/"numpy" (LAPACK) or a torch device ("cpu",
    "cuda"). ``cache``: reuse spectra stored on disk for an unchanged checkpoint.
    """
    from .adapters.registry import adapter_for
    from .checkpoint import load_checkpoint

    ckpt = load_checkpoint(model, config, name=name)
    adapter = adapter_for(ckpt, mapping)
    spec = adapter.spec()
    if l_phi is None:
        l_phi = spec.l_phi
    if not (math.isfinite(l_phi) and l_phi > 0):
        raise ValueError(f"l_phi must be a positive number, got {l_phi}")
    if grid_m is not None and int(grid_m) < 1:
        raise ValueError(f"grid_m must be a positive integer, got {grid_m}")

    spectra: Spectra | None = None
    key = None
    if cache:
        from . import cache as spectra_cache

        key = spectra_cache.cache_key(ckpt, spec, adapter)
        if key is not None:
            spectra = spectra_cache.load(key, spec)
    from_cache = spectra is not None
    if spectra is None:
        spectra = compute_spectra(adapter, device=device, progress=progress)
        if key is not None:
            spectra_cache.store(key, spectra)
    details = compute_bounds(spectra, spec.num_layers, spec.hidden_size, l_phi, grid_m)
    adaptations = list(spec.adaptations) + list(ckpt.notes)
    n_params = sum(int(np.prod(ckpt.source.shape(t), dtype=np.int64)) for t in ckpt.source.names())
    return Analysis(ckpt.name, spec, spectra, details, adaptations, from_cache, n_params)
