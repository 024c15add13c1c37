"""Singular values and norms of the canonical matrices (SPEC.md sections 2-3), float64.

QK(l,h) and OV(l,h) are N x N products X Y^T of two N x d_h factors, so their spectra live in a
d_h x d_h core: with thin QR X = Q1 R1, Y = Q2 R2, X Y^T = Q1 (R1 R2^T) Q2^T and the singular
values of X Y^T are those of R1 R2^T (all others are exactly 0). Norms without any N x N SVD:
Frobenius and nuclear from the core values; (2,1) from the d_h x N matrix R1 Y^T, whose column j
has the norm of column j of X Y^T (Q1 has orthonormal columns); (1,1) = sum |x_i . y_j| from one
N x N GEMM per head into a reused, bounded buffer (no closed form exists for it).

FFN matrices: the eigenvalues of the smaller Gram matrix (one SYRK + one symmetric eigensolve,
about 4x cheaper than an SVD) when an a-posteriori guard says they are accurate to ~1e-12
relative, else LAPACK's divide-and-conquer SVD (``gesdd``).

The dense LAPACK calls (gesdd, the Gram route's dsyevd) go through ``lapack``, which releases the
GIL, so the worker threads of ``run_jobs`` (``linalg.pool``) run them on every core at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core import M_IN, M_OUT, MATRIX_TYPES, OV, QK, LayerWeights, ModelSpec
from ..errors import SpecboundError
from . import lapack
from .pool import DEFAULT_PARALLEL, run_jobs  # noqa: F401  (re-exported: old import paths)

#: SPEC.md section 3: s_i counts toward the rank when s_i > RANK_RTOL * k * max(s_1, 1).
RANK_RTOL = 1e-10
#: Gram route accepted when its estimated relative error on every s_i,
#: ``GRAM_ERR_CONST * eps * sqrt(k) * (s_1 / s_min)^2``, is at most this. Measured on the 12
#: all-MiniLM-L6-v2 FFN matrices the true error is <= 0.6 eps (s_1/s_min)^2, so the estimate
#: overstates it ~100x (k = 384); accepted spectra have s_min >= ~0.013 s_1 there.
GRAM_MAX_REL_ERR = 1e-10
GRAM_ERR_CONST = 4.0
#: Entries (float64) of the reused buffer that holds row blocks of an N x N head product.
_CHUNK_ENTRIES = 4 * 1024 * 1024
_EPS = float(np.finfo(np.float64).eps)


def norm2_safe(x: np.ndarray, axis: int | None = None) -> np.ndarray:
    """sqrt(sum x^2) along ``axis`` (None: all), exact to rounding even when x^2 overflows.

    The plain formula is used (and its bits kept) wherever it is finite; where it is not, the
    entries are first divided by their largest magnitude: m sqrt(sum (x/m)^2). A result beyond
    float64 stays inf (SPEC 6: written empty, its log kept where one exists).
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.sqrt(np.sum(x * x, axis=axis))
        if np.all(np.isfinite(out)) or not np.all(np.isfinite(x)):
            return out
        m = np.max(np.abs(x), axis=axis, keepdims=True)
        m = np.where(m > 0, m, 1.0)
        scaled = np.squeeze(m, axis=axis) * np.sqrt(np.sum((x / m) ** 2, axis=axis))
    return np.where(np.isfinite(out), out, scaled)


def rank_threshold(k: int, s1: float) -> float:
    """Singular values at or below this are exact zeros: 1e-10 * k * max(s_1, 1)."""
    return RANK_RTOL * k * max(float(s1), 1.0)


def numerical_rank(sv: np.ndarray, k: int) -> int:
    """#{i : s_i > 1e-10 * k * max(s_1, 1)}, k = min(rows, cols) of the full matrix."""
    if sv.size == 0:
        return 0
    return int(np.count_nonzero(sv > rank_threshold(k, sv[0])))


def lowrank_cores(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(R1, R2) of thin QRs x = Q1 R1, y = Q2 R2 for stacks of shape (..., N, d)."""
    # mode="r" returns the R factor alone (numpy's stubs type every mode as QRResult)
    return np.linalg.qr(x, mode="r"), np.linalg.qr(y, mode="r")  # type: ignore[return-value]


def lowrank_svdvals(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Singular values (descending) of x @ y^T for stacks x, y of shape (..., N, d).

    They are the singular values of the small core R1 R2^T; x @ y^T has no others but zeros.
    """
    r1, r2 = lowrank_cores(x, y)
    return robust_svdvals(r1 @ np.swapaxes(r2, -1, -2))


def lowrank_norm_21(r1: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(2,1) norm of x @ y^T = sum_j ||x y_j||_2 = sum_j ||R1 y_j||_2 (y_j: row j of y)."""
    z = r1 @ np.swapaxes(y, -1, -2)  # (..., d, N)
    with np.errstate(over="ignore"):
        cols = np.sqrt(np.einsum("...ij,...ij->...j", z, z))
    if not np.all(np.isfinite(cols)):  # squares beyond float64: the scaled formula
        cols = norm2_safe(z, axis=-2)
    return cols.sum(axis=-1)


def lowrank_norm_11(
    x: np.ndarray, y: np.ndarray, chunk_entries: int = _CHUNK_ENTRIES
) -> np.ndarray:
    """(1,1) norm sum_ij |(x[h] @ y[h]^T)_ij| per head, by row blocks in one reused buffer."""
    heads, n, _ = x.shape
    m = y.shape[1]
    rows = max(1, min(n, chunk_entries // max(m, 1)))
    buf = np.empty((rows, m))
    out = np.empty(heads)
    for h in range(heads):
        total = 0.0
        yt = y[h].T
        for r0 in range(0, n, rows):
            b = buf[: min(rows, n - r0)]
            np.matmul(x[h, r0 : r0 + rows], yt, out=b)
            np.abs(b, out=b)
            total += float(b.sum())
        out[h] = total
    return out


def gram_is_accurate(sv: np.ndarray, k: int) -> bool:
    """Whether Gram-eigenvalue singular values are trusted: every s_i far above round-off.

    An eigenvalue of the Gram matrix carries an absolute error ~ c eps s_1^2, so s_i = sqrt(l_i)
    has relative error ~ c eps (s_1/s_i)^2 / 2. Accept only when the estimate for the smallest
    s_i is <= GRAM_MAX_REL_ERR; that keeps every s_i many orders above the rank threshold, so
    rank-deficient or nearly so matrices always go to the SVD.
    """
    if sv.size == 0 or not sv[0] > 0 or not sv[-1] > 0:
        return False
    ratio = sv[0] / sv[-1]
    return GRAM_ERR_CONST * _EPS * np.sqrt(k) * ratio * ratio <= GRAM_MAX_REL_ERR


def gram_svdvals(m: np.ndarray) -> np.ndarray:
    """sqrt of the eigenvalues (descending, clipped at 0) of the smaller Gram matrix of m."""
    with np.errstate(over="ignore", invalid="ignore"):
        g = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    if not np.all(np.isfinite(g)):  # entries beyond float64 squared: the SVD route instead
        raise np.linalg.LinAlgError("Gram matrix overflows float64")
    ev = lapack.eigvalsh(g)[::-1]
    return np.sqrt(np.clip(ev, 0.0, None))


def lapack_svdvals(m: np.ndarray) -> np.ndarray:
    """Singular values (descending) of a 2-D matrix by LAPACK gesdd (``lapack.svdvals``: the GIL
    is released, so pool threads run in parallel), gesvd (scipy) when gesdd does not converge."""
    return robust_svdvals(m)


def robust_svdvals(m: np.ndarray) -> np.ndarray:
    """Singular values (descending) of a matrix or a stack (..., r, c) by LAPACK gesdd (a matrix:
    ``lapack.svdvals``; a stack: numpy), retried matrix by matrix with LAPACK gesvd (scipy) when
    gesdd does not converge (LinAlgError)."""
    try:
        return lapack.svdvals(m) if m.ndim == 2 else np.linalg.svd(m, compute_uv=False)
    except np.linalg.LinAlgError:
        import scipy.linalg

        flat = m.reshape(-1, *m.shape[-2:])
        out = [
            scipy.linalg.svd(a, compute_uv=False, check_finite=False, lapack_driver="gesvd")
            for a in flat
        ]
        return np.stack(out).reshape(*m.shape[:-2], -1)


def named_job(job: Callable[[], Any], what: str) -> Callable[[], Any]:
    """``job`` whose LinAlgError (no convergence even after the gesvd retry) becomes a one-line
    SpecboundError naming ``what`` (the matrices and layer)."""

    def run() -> Any:
        try:
            return job()
        except np.linalg.LinAlgError as exc:
            raise SpecboundError(
                f"the singular values of {what} did not converge ({exc}), even with LAPACK "
                "gesvd; check these weights for extreme or degenerate values"
            ) from None

    return run


def dense_svdvals(m: np.ndarray, method: str = "auto") -> np.ndarray:
    """Singular values (descending) of a dense matrix.

    ``method``: "svd" (LAPACK gesdd), "gram" (eigvalsh of the smaller Gram matrix) or "auto":
    Gram, falling back to gesdd unless ``gram_is_accurate``.
    """
    if method not in ("auto", "gram", "svd"):
        raise ValueError(f"unknown SVD method {method!r}; use auto, gram or svd")
    if m.size == 0:
        return np.zeros(0)
    if method in ("auto", "gram"):
        try:
            sv = gram_svdvals(m)
        except np.linalg.LinAlgError:  # eigvalsh did not converge: the SVD below
            sv = None
        if sv is not None and (method == "gram" or gram_is_accurate(sv, min(m.shape))):
            return sv
    return lapack_svdvals(m)


def _row_norm_sum(w: np.ndarray) -> float:
    """sum_i ||w[i, :]||_2: the (2,1) norm of w.T (its columns are the rows of w)."""
    with np.errstate(over="ignore"):
        rows = np.sqrt(np.einsum("ij,ij->i", w, w))
    if not np.all(np.isfinite(rows)):  # squares beyond float64: the scaled formula
        rows = norm2_safe(w, axis=1)
    return float(rows.sum())


class RaggedSpectra:
    """Rows of matrices with their singular values in one flat array (``sv_offsets``,
    ``sv_values``): the table mechanics shared by ``Spectra`` and ``weights.WeightSpectra``.
    Subclasses are dataclasses listing their fields in ``_FIELDS``."""

    _FIELDS: tuple[str, ...] = ()
    layer: np.ndarray
    frobenius_norm: np.ndarray
    sv_offsets: np.ndarray
    sv_values: np.ndarray

    def __len__(self) -> int:
        return int(self.layer.size)

    def singular_values(self, i: int) -> np.ndarray:
        return self.sv_values[self.sv_offsets[i] : self.sv_offsets[i + 1]]

    @property
    def spectral_norm(self) -> np.ndarray:
        """C2 = s_1 = sigma_max, the largest singular value (0 for an empty spectrum).

        Not WeightWatcher's ``spectral_norm``, which is lambda_max = sigma_max^2 (the largest
        eigenvalue of W^T W); specbound's lambda_max appears only in ``htsr_alpha_weighted``.
        """
        lens = np.diff(self.sv_offsets)
        out = np.zeros(len(self))
        nz = lens > 0
        out[nz] = self.sv_values[self.sv_offsets[:-1][nz]]
        return out

    @property
    def stable_rank(self) -> np.ndarray:
        """||A||_F^2 / ||A||_2^2 (0 for the zero matrix; NaN where s_1 is undefined, a product
        beyond float64)."""
        s1 = self.spectral_norm
        out = np.where(np.isnan(s1), np.nan, 0.0)
        nz = s1 > 0
        with np.errstate(over="ignore", invalid="ignore"):
            out[nz] = self.frobenius_norm[nz] ** 2 / s1[nz] ** 2
            bad = nz & ~np.isfinite(out)
            out[bad] = (self.frobenius_norm[bad] / s1[bad]) ** 2  # squares beyond float64
        return out

    def with_layers(self, layer: int) -> Any:
        """A copy with every row's layer set to ``layer`` (reuse of a shared block)."""
        d = {f: getattr(self, f) for f in self._FIELDS}
        d["layer"] = np.full_like(self.layer, layer)
        return type(self)(**d)

    @classmethod
    def concat(cls, parts: Sequence[Any]) -> Any:
        d = {
            f: np.concatenate([getattr(p, f) for p in parts])
            for f in cls._FIELDS
            if f != "sv_offsets"
        }
        lens = np.concatenate([np.diff(p.sv_offsets) for p in parts])
        d["sv_offsets"] = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        return cls(**d)


@dataclass
class Spectra(RaggedSpectra):
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
        "layer",
        "head",
        "matrix_type",
        "rows",
        "cols",
        "frobenius_norm",
        "nuclear_norm",
        "norm_21",
        "norm_11",
        "sv_offsets",
        "sv_values",
    )

    def find(self, layer: int, matrix_type: str, head: int = -1) -> int:
        """Row index of one matrix."""
        t = MATRIX_TYPES.index(matrix_type)
        hit = np.flatnonzero((self.layer == layer) & (self.matrix_type == t) & (self.head == head))
        if hit.size != 1:
            raise KeyError(f"no matrix {matrix_type} layer {layer} head {head}")
        return int(hit[0])

    @property
    def rank(self) -> np.ndarray:
        k = np.minimum(self.rows, self.cols)
        return np.array(
            [numerical_rank(self.singular_values(i), int(k[i])) for i in range(len(self))],
            dtype=np.int64,
        )

    def save(self, path: str | Path) -> None:
        np.savez(path, **{f: getattr(self, f) for f in self._FIELDS})

    @classmethod
    def load(cls, path: str | Path) -> Spectra:
        with np.load(path, allow_pickle=False) as z:
            return cls(**{f: z[f] for f in cls._FIELDS})


def head_factors(w: LayerWeights, spec: ModelSpec) -> dict[str, np.ndarray]:
    """The N x d_h factors X, Y with QK = X Y^T and OV = X Y^T, stacked over query heads.

    Strided views of the weights (no copy) unless grouped-query attention repeats kv heads:
    q[h] = wq[hs].T, k[h] = wk[kv(h)s].T, v[h] = wv[kv(h)s].T, o[h] = wo[:, hs].
    """
    h, d, n = spec.num_heads, spec.head_dim, spec.hidden_size
    kv = spec.kv_heads
    group = np.arange(h) // (h // kv)

    def split(wt: np.ndarray, heads: int) -> np.ndarray:  # (heads*d, N) -> (heads, N, d)
        return wt.reshape(heads, d, n).transpose(0, 2, 1)

    def expand(wt: np.ndarray) -> np.ndarray:
        return split(wt, kv) if kv == h else split(wt, kv)[group]

    return {
        "q": split(w.wq, h),
        "k": expand(w.wk),
        "v": expand(w.wv),
        "o": w.wo.reshape(n, h, d).transpose(1, 0, 2),
    }


def build_block(
    layer: int,
    spec: ModelSpec,
    rows_cols: list[tuple[int, int]],
    svs: list[np.ndarray],
    n21: list[float],
    n11: list[float],
) -> Spectra:
    """Block ``layer``'s :class:`Spectra` from its 2H+2 matrices in the order QK heads, OV
    heads, M_in, M_out: shapes ``rows_cols``, singular values ``svs``, the (2,1)
    and (1,1) norms ``n21``, ``n11``; Frobenius and nuclear norms from ``svs``."""
    h = spec.num_heads
    lens = np.array([s.size for s in svs], dtype=np.int64)
    sv_values = np.concatenate(svs) if svs else np.zeros(0)
    with np.errstate(over="ignore"):  # a sum beyond float64 is inf: undefined downstream
        nuclear = np.array([np.sum(s) for s in svs], dtype=np.float64)
    return Spectra(
        layer=np.full(2 * h + 2, layer, dtype=np.int64),
        head=np.concatenate([np.arange(h), np.arange(h), [-1, -1]]).astype(np.int64),
        matrix_type=np.array([QK] * h + [OV] * h + [M_IN, M_OUT], dtype=np.int64),
        rows=np.array([r for r, _ in rows_cols], dtype=np.int64),
        cols=np.array([c for _, c in rows_cols], dtype=np.int64),
        frobenius_norm=np.array([norm2_safe(s) for s in svs], dtype=np.float64),
        nuclear_norm=nuclear,
        norm_21=np.asarray(n21, dtype=np.float64),
        norm_11=np.asarray(n11, dtype=np.float64),
        sv_offsets=np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
        sv_values=sv_values,
    )


def _abs_sum(w: np.ndarray, chunk_entries: int = _CHUNK_ENTRIES) -> float:
    """sum |w_ij|, by row blocks (no full-size temporary)."""
    if w.size == 0:
        return 0.0
    rows = max(1, chunk_entries // max(w.shape[1], 1))
    return float(sum(np.abs(w[r : r + rows]).sum() for r in range(0, w.shape[0], rows)))


def attention_spectra(
    x: np.ndarray, y: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Core singular values, (2,1) and (1,1) norms of every x[h] @ y[h]^T (no N x N SVD)."""
    r1, r2 = lowrank_cores(x, y)
    with np.errstate(over="ignore", invalid="ignore"):
        core = r1 @ np.swapaxes(r2, -1, -2)
    finite = np.all(np.isfinite(core), axis=(-2, -1))
    if np.all(finite):
        sv = robust_svdvals(core)
    else:  # a product beyond float64 (weights ~1e154 and up): its values are undefined (NaN)
        sv = np.full(core.shape[:-1], np.nan)
        if np.any(finite):
            sv[finite] = robust_svdvals(core[finite])
    with np.errstate(over="ignore", invalid="ignore"):
        return list(sv), lowrank_norm_21(r1, y), lowrank_norm_11(x, y)


def ffn_spectra(w: np.ndarray, method: str = "auto") -> tuple[np.ndarray, float, float]:
    """Singular values, (2,1) and (1,1) norms of the row-vector matrix w.T (w: nn.Linear layout).

    The columns of w.T are the rows of w, so its (2,1) norm is the sum of w's row norms.
    """
    return dense_svdvals(w, method), _row_norm_sum(w), _abs_sum(w)


def block_spectra(w: LayerWeights, spec: ModelSpec, ffn_method: str = "auto") -> Spectra:
    """Spectra of one block's 2H + 2 canonical matrices (numpy/LAPACK backend).

    QK/OV from d_h x d_h cores (``attention_spectra``), M_in = w_in.T and M_out = w_out.T by
    ``ffn_spectra`` (singular values of w and w.T coincide). The four jobs go to ``run_jobs``.
    """
    return block_spectra_with(w, spec, (), ffn_method)[0]


def block_spectra_with(
    w: LayerWeights, spec: ModelSpec, extra: Sequence[Callable[[], Any]], ffn_method: str = "auto"
) -> tuple[Spectra, list[Any]]:
    """``block_spectra`` and the results of the ``extra`` jobs, run in the same ``run_jobs``
    call (one pool round per block keeps both cores busy: the raw-weight SVDs of SPEC 9 go here).
    """
    n = spec.hidden_size
    f = head_factors(w, spec)
    results = run_jobs(
        [  # largest first: the pool takes jobs in order
            named_job(lambda: ffn_spectra(w.w_in, ffn_method), f"M_in of layer {w.index}"),
            named_job(lambda: ffn_spectra(w.w_out, ffn_method), f"M_out of layer {w.index}"),
            *extra,
            named_job(lambda: attention_spectra(f["q"], f["k"]), f"QK of layer {w.index}"),
            named_job(lambda: attention_spectra(f["v"], f["o"]), f"OV of layer {w.index}"),
        ]
    )
    (in_sv, in21, in11), (out_sv, out21, out11) = results[:2]
    (qk_sv, qk21, qk11), (ov_sv, ov21, ov11) = results[-2:]
    h = spec.num_heads
    rows_cols = [(n, n)] * (2 * h) + [w.w_in.shape[::-1], w.w_out.shape[::-1]]
    svs = [*qk_sv, *ov_sv, in_sv, out_sv]
    n21 = [*qk21, *ov21, in21, out21]
    n11 = [*qk11, *ov11, in11, out11]
    return build_block(w.index, spec, rows_cols, svs, n21, n11), results[2:-2]
