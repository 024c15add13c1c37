"""Independent brute-force implementation of SPEC.md (no specbound import).

Dense float64 N x N products, full LAPACK SVD of each, linear-space arithmetic (fine for models
whose alpha fits a float64, such as MiniLM-L6 and its scaled copies).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from tests.support.safetensors_np import load_file


def _stats(a: np.ndarray) -> dict:
    s = np.linalg.svd(a, compute_uv=False)
    k = min(a.shape)
    tol = 1e-10 * k * max(s[0], 1.0)
    kept = [float(x) for x in s if x > tol]
    return {
        "rows": a.shape[0],
        "cols": a.shape[1],
        "sv": s,
        "kept": kept,
        "spectral_norm": float(s[0]),
        "frobenius_norm": float(np.sqrt((a * a).sum())),
        "nuclear_norm": float(s.sum()),
        "norm_21": float(sum(np.linalg.norm(a[:, j]) for j in range(a.shape[1]))),
        "norm_11": float(np.abs(a).sum()),
        "rank": len(kept),
        "stable_rank": float((a * a).sum() / s[0] ** 2) if s[0] > 0 else 0.0,
    }


def reference(directory: str | Path, l_phi: float = 1.13) -> dict:
    """The reference for a BERT-layout safetensors directory."""
    directory = Path(directory)
    cfg = json.loads((directory / "config.json").read_text())
    raw = load_file(str(directory / "model.safetensors"))
    sd = {k: v.astype(np.float64) for k, v in raw.items()}
    blocks = []
    for l in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{l}."
        blocks.append(
            {
                "wq": sd[p + "attention.self.query.weight"],
                "wk": sd[p + "attention.self.key.weight"],
                "wv": sd[p + "attention.self.value.weight"],
                "wo": sd[p + "attention.output.dense.weight"],
                "w_in": sd[p + "intermediate.dense.weight"],
                "w_out": sd[p + "output.dense.weight"],
            }
        )
    return reference_blocks(blocks, cfg["hidden_size"], cfg["num_attention_heads"], l_phi=l_phi)


def reference_blocks(
    blocks: list[dict], N: int, H: int, l_phi: float = 1.13, kv: int | None = None
) -> dict:
    """The reference from per-block float64 weights in the nn.Linear (out, in) layout: ``wq``
    (H d, N), ``wk``/``wv`` (kv d, N), ``wo`` (N, H d), ``w_in`` (F or 2F stacked, N), ``w_out``
    (N, F). Query head h reads key/value head h // (H / kv) (grouped-query attention)."""
    L = len(blocks)
    kv = kv or H
    d = blocks[0]["wq"].shape[0] // H
    rows = []  # (layer, head, type, stats)
    for l, b in enumerate(blocks):
        wq, wk, wv, wo = b["wq"], b["wk"], b["wv"], b["wo"]
        for h in range(H):
            hs = slice(h * d, (h + 1) * d)
            g = h // (H // kv)
            ks = slice(g * d, (g + 1) * d)
            rows.append((l, h, "QK", _stats(wq[hs, :].T @ wk[ks, :])))
        for h in range(H):
            hs = slice(h * d, (h + 1) * d)
            g = h // (H // kv)
            ks = slice(g * d, (g + 1) * d)
            rows.append((l, h, "OV", _stats(wv[ks, :].T @ wo[:, hs].T)))
        rows.append((l, -1, "M_in", _stats(b["w_in"].T)))
        rows.append((l, -1, "M_out", _stats(b["w_out"].T)))

    def c2(l, t, h=-1):
        return next(r[3]["spectral_norm"] for r in rows if r[0] == l and r[2] == t and r[1] == h)

    alpha = []
    for l in range(L):
        prod = 1.0
        for k in range(l + 1, L):
            heads = sum(c2(k, "OV", h) * (1 + 4 * c2(k, "QK", h)) for h in range(H))
            prod *= l_phi * c2(k, "M_in") * c2(k, "M_out") * heads
        alpha.append(prod)
    m = math.ceil(L + math.log(max(N, 2)))
    grid = [j / m for j in range(2 * m + 1)]
    out_rows = []
    total = 0.0
    for l, h, t, st in rows:
        if t == "QK":
            gamma = 2 * c2(l, "OV", h) * c2(l, "M_out") * c2(l, "M_in")
        elif t == "OV":
            gamma = c2(l, "M_out") * c2(l, "M_in")
        elif t == "M_in":
            gamma = c2(l, "M_out")
        else:
            gamma = 1.0
        s = gamma * alpha[l] * L
        best_p, best_c = None, None
        for p in grid:
            sp = float(len(st["kept"])) if p == 0 else math.fsum(x**p for x in st["kept"])
            c = sp ** (1 / (p + 2)) * s ** (p / (p + 2)) * N ** ((p + 1) / (p + 2))
            if best_c is None or c < best_c:
                best_p, best_c = p, c
        total += best_c
        out_rows.append(
            {
                "layer": l,
                "head": h,
                "matrix_type": t,
                **st,
                "alpha": alpha[l],
                "gamma": gamma,
                "scale": s,
                "p_star": best_p,
                "contribution": best_c,
            }
        )
    sa = total + math.sqrt(L)
    inner = 1.0
    for l in range(L):
        co, ci = c2(l, "M_out"), c2(l, "M_in")
        xi = 0.0
        for r in out_rows:
            if r["layer"] != l:
                continue
            if r["matrix_type"] == "QK":
                xi += (co * ci * c2(l, "OV", r["head"]) * r["norm_21"]) ** (2 / 3)
            elif r["matrix_type"] == "OV":
                xi += (co * ci * r["norm_21"]) ** (2 / 3)
            elif r["matrix_type"] == "M_in":
                xi += (co * r["norm_21"]) ** (2 / 3)
            else:
                xi += r["norm_21"] ** (2 / 3)
        inner += alpha[l] ** (2 / 3) * xi
    return {"rows": out_rows, "spectrum_adaptive": sa, "norm_based": inner**1.5, "grid_m": m}
