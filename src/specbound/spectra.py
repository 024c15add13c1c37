"""Singular values and norms of the canonical matrices (SPEC.md sections 2-3), float64.

QK(l,h) and OV(l,h) are N x N products X Y^T of two N x d_h factors, so their spectra live in a
d_h x d_h core: with thin QR X = Q1 R1, Y = Q2 R2, X Y^T = Q1 (R1 R2^T) Q2^T and the singular
values of X Y^T are those of R1 R2^T (all others are exactly 0). FFN matrices use LAPACK's
divide-and-conquer SVD, or the eigenvalues of the smaller Gram matrix when the spectrum is well
conditioned enough for that to be accurate to ~1e-12 relative.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .adapters.base import LayerWeights, ModelSpec

MATRIX_TYPES = ("QK", "OV", "M_in", "M_out")
QK, OV, M_IN, M_OUT = range(4)

#: SPEC.md section 3: s_i counts toward the rank when s_i > RANK_RTOL * k * max(s_1, 1).
RANK_RTOL = 1e-10
#: Gram route only when s_min / s_1 >= this (relative error ~ eps * (s_1/s_min)^2 < 1e-12).
GRAM_MIN_RATIO = 0.02
#: Work in chunks of at most this many float64 entries when forming N x N products.
_CHUNK_ENTRIES = 8 * 1024 * 1024


def rank_threshold(k: int, s1: float) -> float:
    """Singular values at or below this are exact zeros: 1e-10 * k * max(s_1, 1)."""
    return RANK_RTOL * k * max(float(s1), 1.0)


def numerical_rank(sv: np.ndarray, k: int) -> int:
    """#{i : s_i > 1e-10 * k * max(s_1, 1)}, k = min(rows, cols) of the full matrix."""
    if sv.size == 0:
        return 0
    return int(np.count_nonzero(sv > rank_threshold(k, sv[0])))


def lowrank_svdvals(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Singular values (descending) of x @ y^T for stacks x, y of shape (..., N, d)."""
    r1 = np.linalg.qr(x, mode="r")
    r2 = np.linalg.qr(y, mode="r")
    return np.linalg.svd(r1 @ np.swapaxes(r2, -1, -2), compute_uv=False)


def lowrank_entry_norms(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(2,1) and (1,1) norms of each x[h] @ y[h]^T, formed explicitly in bounded chunks."""
    heads, n, _ = x.shape
    per = max(1, _CHUNK_ENTRIES // (n * n))
    n21 = np.empty(heads)
    n11 = np.empty(heads)
    for start in range(0, heads, per):
        a = np.matmul(x[start : start + per], np.swapaxes(y[start : start + per], -1, -2))
        n21[start : start + per] = np.sqrt(np.einsum("hij,hij->hj", a, a)).sum(axis=-1)
        n11[start : start + per] = np.abs(a).sum(axis=(-1, -2))
    return n21, n11


def dense_svdvals(m: np.ndarray, method: str = "auto") -> np.ndarray:
    """Singular values (descending) of a dense matrix.

    ``method``: "svd" (LAPACK gesdd), "gram" (eigvalsh of the smaller Gram matrix) or "auto":
    Gram, falling back to gesdd unless every s_i >= GRAM_MIN_RATIO * s_1.
    """
    if m.size == 0:
        return np.zeros(0)
    if method in ("auto", "gram"):
        g = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
        ev = np.linalg.eigvalsh(g)[::-1]
        sv = np.sqrt(np.clip(ev, 0.0, None))
        if method == "gram" or (sv[0] > 0 and sv[-1] >= GRAM_MIN_RATIO * sv[0]):
            return sv
    import scipy.linalg

    return scipy.linalg.svdvals(m, overwrite_a=False, check_finite=False)


def _column_norm_sum(m: np.ndarray) -> float:
    return float(np.sqrt(np.einsum("ij,ij->j", m, m)).sum())


@dataclass
class Spectra:
    """Singular values and norms of every canonical matrix of a model, one row per matrix.

    Row order within a block: QK heads 0..H-1, OV heads 0..H-1, M_in, M_out. ``head`` is -1
    for M_in/M_out; ``matrix_type`` indexes ``MATRIX_TYPES``. Singular values of row i are
    ``sv_values[sv_offsets[i]:sv_offsets[i+1]]`` (descending; QK/OV keep their d_h core values).
    """

    layer: np.ndarray
    head: np.ndarray
    matrix_type: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    frobenius_norm: np.ndarray
    nuclear_norm: np.ndarray
    norm_21: np.ndarray
    norm_11: np.ndarray
    sv_offsets: np.ndarray
    sv_values: np.ndarray

    _FIELDS = (
        "layer", "head", "matrix_type", "rows", "cols", "frobenius_norm", "nuclear_norm",
        "norm_21", "norm_11", "sv_offsets", "sv_values",
    )

    def __len__(self) -> int:
        return int(self.layer.size)

    def singular_values(self, i: int) -> np.ndarray:
        return self.sv_values[self.sv_offsets[i] : self.sv_offsets[i + 1]]

    def find(self, layer: int, matrix_type: str, head: int = -1) -> int:
        """Row index of one matrix."""
        t = MATRIX_TYPES.index(matrix_type)
        hit = np.flatnonzero((self.layer == layer) & (self.matrix_type == t) & (self.head == head))
        if hit.size != 1:
            raise KeyError(f"no matrix {matrix_type} layer {layer} head {head}")
        return int(hit[0])

    @property
    def spectral_norm(self) -> np.ndarray:
        """C2 = s_1 (0 for an empty spectrum)."""
        lens = np.diff(self.sv_offsets)
        out = np.zeros(len(self))
        nz = lens > 0
        out[nz] = self.sv_values[self.sv_offsets[:-1][nz]]
        return out

    @property
    def rank(self) -> np.ndarray:
        k = np.minimum(self.rows, self.cols)
        return np.array([numerical_rank(self.singular_values(i), int(k[i]))
                         for i in range(len(self))], dtype=np.int64)

    @property
    def stable_rank(self) -> np.ndarray:
        s1 = self.spectral_norm
        out = np.zeros(len(self))
        nz = s1 > 0
        out[nz] = self.frobenius_norm[nz] ** 2 / s1[nz] ** 2
        return out

    def with_layers(self, layer: int) -> Spectra:
        """A copy with every row's layer set to ``layer`` (reuse of a shared block)."""
        d = {f: getattr(self, f) for f in self._FIELDS}
        d["layer"] = np.full_like(self.layer, layer)
        return Spectra(**d)

    @classmethod
    def concat(cls, parts: Sequence[Spectra]) -> Spectra:
        d = {f: np.concatenate([getattr(p, f) for p in parts]) for f in cls._FIELDS
             if f != "sv_offsets"}
        lens = np.concatenate([np.diff(p.sv_offsets) for p in parts])
        d["sv_offsets"] = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        return cls(**d)

    def save(self, path: str | Path) -> None:
        np.savez(path, **{f: getattr(self, f) for f in self._FIELDS})

    @classmethod
    def load(cls, path: str | Path) -> Spectra:
        with np.load(path, allow_pickle=False) as z:
            return cls(**{f: z[f] for f in cls._FIELDS})


def head_factors(w: LayerWeights, spec: ModelSpec) -> dict[str, np.ndarray]:
    """The N x d_h factors X, Y with QK = X Y^T and OV = X Y^T, stacked over query heads."""
    h, d, n = spec.num_heads, spec.head_dim, spec.hidden_size
    kv = spec.kv_heads
    group = np.arange(h) // (h // kv)

    def split(wt: np.ndarray, heads: int) -> np.ndarray:  # (heads*d, N) -> (heads, N, d)
        return np.ascontiguousarray(wt.reshape(heads, d, n).transpose(0, 2, 1))

    return {
        "q": split(w.wq, h),
        "k": split(w.wk, kv)[group],
        "v": split(w.wv, kv)[group],
        "o": np.ascontiguousarray(w.wo.reshape(n, h, d).transpose(1, 0, 2)),
    }


def _build(layer: int, spec: ModelSpec, rows_cols: list[tuple[int, int]], svs: list[np.ndarray],
           n21: list[float], n11: list[float]) -> Spectra:
    h = spec.num_heads
    lens = np.array([s.size for s in svs], dtype=np.int64)
    sv_values = np.concatenate(svs) if svs else np.zeros(0)
    return Spectra(
        layer=np.full(2 * h + 2, layer, dtype=np.int64),
        head=np.concatenate([np.arange(h), np.arange(h), [-1, -1]]).astype(np.int64),
        matrix_type=np.array([QK] * h + [OV] * h + [M_IN, M_OUT], dtype=np.int64),
        rows=np.array([r for r, _ in rows_cols], dtype=np.int64),
        cols=np.array([c for _, c in rows_cols], dtype=np.int64),
        frobenius_norm=np.array([np.sqrt(np.sum(s * s)) for s in svs]),
        nuclear_norm=np.array([np.sum(s) for s in svs]),
        norm_21=np.asarray(n21, dtype=np.float64),
        norm_11=np.asarray(n11, dtype=np.float64),
        sv_offsets=np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
        sv_values=sv_values,
    )


def block_spectra(w: LayerWeights, spec: ModelSpec, ffn_method: str = "auto") -> Spectra:
    """Spectra of one block's 2H + 2 canonical matrices (numpy/LAPACK backend)."""
    n = spec.hidden_size
    f = factors = head_factors(w, spec)
    qk_sv = lowrank_svdvals(f["q"], f["k"])
    ov_sv = lowrank_svdvals(f["v"], f["o"])
    qk21, qk11 = lowrank_entry_norms(factors["q"], factors["k"])
    ov21, ov11 = lowrank_entry_norms(factors["v"], factors["o"])
    m_in = w.w_in.T
    m_out = w.w_out.T
    svs = [*qk_sv, *ov_sv, dense_svdvals(m_in, ffn_method), dense_svdvals(m_out, ffn_method)]
    h = spec.num_heads
    rows_cols = [(n, n)] * (2 * h) + [m_in.shape, m_out.shape]
    n21 = [*qk21, *ov21, _column_norm_sum(m_in), _column_norm_sum(m_out)]
    n11 = [*qk11, *ov11, float(np.abs(m_in).sum()), float(np.abs(m_out).sum())]
    return _build(w.index, spec, rows_cols, svs, n21, n11)
