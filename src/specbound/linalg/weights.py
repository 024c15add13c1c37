"""The raw weight matrices of SPEC 9 (the set W): singular values and norms, per block.

Per block, in row-vector orientation after any fused split: W_Q (N x H d_h), W_K and W_V (N x H_kv
d_h), W_O (H d_h x N), W_in (N x F, gate and up stacked for gated MLPs, = M_in) and W_out (F x N, =
M_out). Singular values of W_in/W_out are those of M_in/M_out, taken from the block's ``Spectra``;
the four attention projections get their own LAPACK SVD (gesdd, as WeightWatcher uses, through
``lapack.svdvals``, which releases the GIL so the pool runs them in parallel: numpy's and scipy's
own wrappers hold it; trained attention projections are too ill-conditioned for the Gram route's
accuracy guard, so trying it first would only add time). ``distance_from_init`` needs ||W - W0||_F^2
per matrix, computed while the block is in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from ..core import M_IN, M_OUT, WEIGHT_ROLES, LayerWeights
from ..errors import CheckpointError
from .spectra import RaggedSpectra, named_job, norm2_safe, robust_svdvals, run_jobs

#: Roles whose singular values are computed here (the FFN ones come from the block's Spectra).
ATTENTION_ROLES = ("query", "key", "value", "output")


@dataclass
class WeightSpectra(RaggedSpectra):
    """One row per raw weight matrix, in block order and WEIGHT_ROLES order within a block.

    ``role`` indexes ``WEIGHT_ROLES``; ``rows``/``cols`` are the row-vector shape (in, out);
    singular values of row i are ``sv_values[sv_offsets[i]:sv_offsets[i+1]]``, descending.
    """

    layer: np.ndarray
    role: np.ndarray
    tensor: np.ndarray  # str
    rows: np.ndarray
    cols: np.ndarray
    frobenius_norm: np.ndarray
    sv_offsets: np.ndarray
    sv_values: np.ndarray

    _FIELDS = (
        "layer",
        "role",
        "tensor",
        "rows",
        "cols",
        "frobenius_norm",
        "sv_offsets",
        "sv_values",
    )

    @property
    def role_names(self) -> np.ndarray:
        return np.array(WEIGHT_ROLES, dtype=object)[self.role]

    @classmethod
    def empty(cls) -> WeightSpectra:
        z = np.zeros(0, dtype=np.int64)
        return cls(
            z,
            z,
            np.zeros(0, dtype=str),
            z,
            z,
            np.zeros(0),
            np.zeros(1, dtype=np.int64),
            np.zeros(0),
        )

    def arrays(self, prefix: str = "") -> dict[str, np.ndarray]:
        """Fields as plain arrays (for np.savez; ``tensor`` as a unicode array)."""
        d = {f: getattr(self, f) for f in self._FIELDS}
        d["tensor"] = np.asarray(self.tensor, dtype=str)
        return {prefix + k: v for k, v in d.items()}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], prefix: str = "") -> WeightSpectra:
        return cls(**{f: np.asarray(arrays[prefix + f]) for f in cls._FIELDS})


def frobenius(w: np.ndarray) -> float:
    if not w.size:
        return 0.0
    with np.errstate(over="ignore"):
        out = float(np.sqrt(np.einsum("ij,ij->", w, w)))
    return out if np.isfinite(out) else float(norm2_safe(w))  # squares beyond float64


def attention_jobs(w: LayerWeights, tensor_names: dict[str, str] | None = None) -> list:
    """Zero-argument jobs giving the singular values of W_Q, W_K, W_V, W_O (LAPACK gesdd,
    gesvd when it does not converge)."""
    raw, names = w.raw(), tensor_names or {}
    return [
        named_job(
            partial(_svdvals_or_empty, raw[r]),
            f"{names.get(r) or 'W_' + r} (layer {w.index})",
        )
        for r in ATTENTION_ROLES
    ]


def block_weight_spectra(
    w: LayerWeights,
    ffn_sv: tuple[np.ndarray, np.ndarray],
    tensor_names: dict[str, str] | None = None,
    attention_sv: list[np.ndarray] | None = None,
) -> WeightSpectra:
    """Singular values and Frobenius norms of one block's six raw weights.

    ``ffn_sv``: the singular values of M_in and M_out already computed for the block;
    ``attention_sv``: those of W_Q, W_K, W_V, W_O when already computed (``attention_jobs``).
    """
    raw = w.raw()
    names = tensor_names or {}
    att = attention_sv if attention_sv is not None else run_jobs(attention_jobs(w, names))
    svs = [*att, ffn_sv[0], ffn_sv[1]]
    lens = np.array([s.size for s in svs], dtype=np.int64)
    return WeightSpectra(
        layer=np.full(len(WEIGHT_ROLES), w.index, dtype=np.int64),
        role=np.arange(len(WEIGHT_ROLES), dtype=np.int64),
        tensor=np.array([names.get(r, "") for r in WEIGHT_ROLES], dtype=str),
        rows=np.array([raw[r].shape[1] for r in WEIGHT_ROLES], dtype=np.int64),
        cols=np.array([raw[r].shape[0] for r in WEIGHT_ROLES], dtype=np.int64),
        frobenius_norm=np.array([frobenius(raw[r]) for r in WEIGHT_ROLES]),
        sv_offsets=np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
        sv_values=np.concatenate(svs) if svs else np.zeros(0),
    )


def ffn_singular_values(spectra: object) -> tuple[np.ndarray, np.ndarray]:
    """(M_in, M_out) singular values of a one-block ``Spectra``."""
    t = spectra.matrix_type  # type: ignore[attr-defined]
    i_in = int(np.flatnonzero(t == M_IN)[0])
    i_out = int(np.flatnonzero(t == M_OUT)[0])
    return spectra.singular_values(i_in), spectra.singular_values(i_out)  # type: ignore[attr-defined]


def block_distance(
    w: LayerWeights,
    w0: LayerWeights,
    tensor_names: dict[str, str] | None = None,
    where: str = "init",
) -> np.ndarray:
    """||W - W0||_F^2 for the six raw weights of one block (same shapes, else one line)."""
    raw, raw0 = w.raw(), w0.raw()
    out = np.zeros(len(WEIGHT_ROLES))
    for i, r in enumerate(WEIGHT_ROLES):
        a, b = raw[r], raw0[r]
        if a.shape != b.shape:
            name = (tensor_names or {}).get(r) or f"{r} of block {w.index}"
            raise CheckpointError(
                f"tensor '{name}' has shape {tuple(a.shape)} in the model but {tuple(b.shape)} in "
                f"the initialization checkpoint ({where}); pass the same architecture's init"
            )
        d = a - b
        out[i] = float(np.einsum("ij,ij->", d, d)) if d.size else 0.0
    return out


def _svdvals_or_empty(m: np.ndarray) -> np.ndarray:
    """Singular values of ``m``; none for an empty matrix."""
    return robust_svdvals(m) if m.size else np.zeros(0)
