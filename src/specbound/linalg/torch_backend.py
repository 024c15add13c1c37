"""Optional torch backend (``device="cpu"|"cuda"``; the CLI's ``--device``): the same spectra
as ``spectra.block_spectra``.

The same factored algorithm, as batched ``torch.linalg`` calls in float64 on the chosen device:
thin QR of every head's N x d_h factors at once, singular values of the d_h x d_h cores
R1 R2^T, (2,1) norms from R1 Y^T, (1,1) norms from bounded batches of explicit head products,
and for M_in/M_out the Gram eigenvalues behind the same accuracy guard
(``spectra.gram_is_accurate``), falling back to ``torch.linalg.svdvals``. Results agree with the
numpy path to ~1e-13 relative (tested to 1e-10). torch is imported only here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import extras
from ..core import LayerWeights, ModelSpec
from ..errors import Param, SpecboundError
from .spectra import Spectra, build_block, gram_is_accurate

#: float64 entries per batch of explicit head products (bounds device memory: 256 MiB).
CHUNK_ENTRIES = 32 * 1024 * 1024


def _import_torch() -> Any:
    return extras.torch(
        "the torch backend (device='cpu' or 'cuda') needs PyTorch (or use the default numpy "
        f"backend, device='numpy'); install it with {extras.install_hint('torch')}"
    )


def resolve_device(device: str) -> Any:
    """The torch.device for ``device`` ("cpu", "cuda", "cuda:1"); SpecboundError if unusable."""
    torch = _import_torch()
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise SpecboundError(
            "unknown ", Param("device", repr(device)), "; use numpy (default), cpu or cuda"
        ) from None
    if dev.type == "cpu":
        return dev
    if dev.type != "cuda":
        raise SpecboundError(
            Param("device", repr(device)),
            " is not supported (spectra need float64); use numpy, cpu or cuda",
        )
    if not torch.cuda.is_available():
        raise SpecboundError(
            Param("device", repr(device)),
            f" requested but no CUDA GPU is available to torch {torch.__version__}; use ",
            Param("device", "cpu"),
            " or numpy",
        )
    if dev.index is not None and dev.index >= torch.cuda.device_count():
        raise SpecboundError(
            f"device '{device}' does not exist: torch sees {torch.cuda.device_count()} CUDA "
            "device(s)"
        )
    return dev


def make_block_spectra(device: str) -> Callable[[LayerWeights, ModelSpec], Spectra]:
    """A drop-in for ``spectra.block_spectra`` that runs on torch device ``device``."""
    torch = _import_torch()
    dev = resolve_device(device)
    f64 = torch.float64

    def tensor(a: np.ndarray) -> Any:
        return torch.as_tensor(np.ascontiguousarray(a, dtype=np.float64)).to(dev, f64)

    def numpy(t: Any) -> np.ndarray:
        return t.detach().to("cpu").numpy().astype(np.float64, copy=False)

    def norm_11(x: Any, y: Any) -> Any:
        heads, n, _ = x.shape
        m = y.shape[1]
        out = torch.empty(heads, dtype=f64, device=dev)
        per = CHUNK_ENTRIES // max(n * m, 1)
        if per >= 1:  # whole heads per batch
            for h0 in range(0, heads, per):
                prod = torch.bmm(x[h0 : h0 + per], y[h0 : h0 + per].mT)
                out[h0 : h0 + per] = prod.abs_().sum(dim=(-1, -2))
            return out
        rows = max(1, CHUNK_ENTRIES // max(m, 1))  # row blocks of one head
        for h in range(heads):
            acc = torch.zeros((), dtype=f64, device=dev)
            for r0 in range(0, n, rows):
                acc += (x[h, r0 : r0 + rows] @ y[h].mT).abs_().sum()
            out[h] = acc
        return out

    def attention(x: Any, y: Any) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        r1 = torch.linalg.qr(x, mode="r").R
        r2 = torch.linalg.qr(y, mode="r").R
        sv = numpy(torch.linalg.svdvals(r1 @ r2.mT))
        z = r1 @ y.mT  # (H, d, N): column j has the norm of column j of x y^T
        n21 = numpy(torch.linalg.vector_norm(z, dim=-2).sum(dim=-1))
        return list(sv), n21, numpy(norm_11(x, y))

    def ffn(w: Any, method: str) -> tuple[np.ndarray, float, float]:
        k = min(w.shape)
        sv = None
        if method in ("auto", "gram") and w.numel():
            g = w.mT @ w if w.shape[0] >= w.shape[1] else w @ w.mT
            ev = numpy(torch.linalg.eigvalsh(g))[::-1]
            sv = np.sqrt(np.clip(ev, 0.0, None))
            if method != "gram" and not gram_is_accurate(sv, k):
                sv = None
        if sv is None:
            sv = numpy(torch.linalg.svdvals(w)) if w.numel() else np.zeros(0)
        n21 = float(torch.linalg.vector_norm(w, dim=1).sum())
        return sv, n21, float(w.abs().sum())

    def block_spectra(w: LayerWeights, spec: ModelSpec, ffn_method: str = "auto") -> Spectra:
        """Spectra of one block on ``device`` (see ``spectra.block_spectra``)."""
        if ffn_method not in ("auto", "gram", "svd"):
            raise ValueError(f"unknown SVD method {ffn_method!r}; use auto, gram or svd")
        h, d, n, kv = spec.num_heads, spec.head_dim, spec.hidden_size, spec.kv_heads
        group = torch.arange(h, device=dev) // (h // kv)
        with torch.no_grad():
            q = tensor(w.wq).view(h, d, n).mT
            k = tensor(w.wk).view(kv, d, n).mT[group]
            v = tensor(w.wv).view(kv, d, n).mT[group]
            o = tensor(w.wo).view(n, h, d).permute(1, 0, 2)
            qk_sv, qk21, qk11 = attention(q, k)
            ov_sv, ov21, ov11 = attention(v, o.contiguous())
            del q, k, v, o
            in_sv, in21, in11 = ffn(tensor(w.w_in), ffn_method)
            out_sv, out21, out11 = ffn(tensor(w.w_out), ffn_method)
        rows_cols = [(n, n)] * (2 * h) + [w.w_in.shape[::-1], w.w_out.shape[::-1]]
        return build_block(
            w.index,
            spec,
            rows_cols,
            [*qk_sv, *ov_sv, in_sv, out_sv],
            [*qk21, *ov21, in21, out21],
            [*qk11, *ov11, in11, out11],
        )

    return block_spectra
