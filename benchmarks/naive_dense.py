"""The naive dense method, standalone (no specbound import): the yardstick for benchmarks.

For every block it forms each N x N head product QK(l,h) = Wq[hs].T @ Wk[hs] and
OV(l,h) = Wv[hs].T @ Wo[:, hs].T explicitly, takes the full SVD (LAPACK gesdd, singular values
only) of every QK, OV, M_in, M_out, computes every norm from the dense matrices, and then both
proxies of SPEC.md sections 3-5 in log space, written out here from the formulas.

    python benchmarks/naive_dense.py CHECKPOINT_DIR [--l-phi X] [--grid-m M] [--table OUT.csv]

Prints the summary as JSON (both proxies, log10); ``--table`` also writes one row per matrix.
Only BERT-style tensor names (``encoder.layer.{l}...``) and safetensors files are supported.
"""

from __future__ import annotations

import argparse
import json
import math
import mmap
import sys
from pathlib import Path

import numpy as np
import scipy.linalg

_DT = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2"}


class Weights:
    """Every safetensors file of a checkpoint directory (single or sharded), memory-mapped."""

    def __init__(self, directory: Path) -> None:
        files = sorted(directory.glob("*.safetensors"))
        self.where: dict[str, tuple[mmap.mmap, str, tuple[int, ...], int]] = {}
        for f in files:
            with open(f, "rb") as fh:
                n = int.from_bytes(fh.read(8), "little")
                header = json.loads(fh.read(n))
                mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            header.pop("__metadata__", None)
            for name, e in header.items():
                self.where[name] = (mm, e["dtype"], tuple(e["shape"]), 8 + n + e["data_offsets"][0])

    def get(self, name: str) -> np.ndarray:
        mm, dt, shape, off = self.where[name]
        raw = np.frombuffer(mm, dtype=_DT[dt], count=int(np.prod(shape)), offset=off)
        if dt == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        return raw.astype(np.float64).reshape(shape)


def matrix_row(m: np.ndarray) -> dict:
    """Full SVD and every norm of one dense matrix (SPEC.md section 3)."""
    s = scipy.linalg.svdvals(m, check_finite=False)
    k = min(m.shape)
    thr = 1e-10 * k * max(float(s[0]), 1.0)
    kept = s[s > thr]
    s1 = float(s[0])
    fro = float(np.sqrt(np.sum(m * m)))
    return {
        "rows": m.shape[0],
        "cols": m.shape[1],
        "spectral_norm": s1,
        "frobenius_norm": fro,
        "nuclear_norm": float(s.sum()),
        "norm_21": float(np.linalg.norm(m, axis=0).sum()),
        "norm_11": float(np.abs(m).sum()),
        "rank": int(kept.size),
        "stable_rank": fro**2 / s1**2 if s1 > 0 else 0.0,
        "_kept": kept,
    }


def logsumexp(a: list[float]) -> float:
    a = [x for x in a if x != -math.inf]
    if not a:
        return -math.inf
    m = max(a)
    return m + math.log(sum(math.exp(x - m) for x in a))


def log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("--l-phi", type=float, default=None)
    ap.add_argument("--grid-m", type=int, default=None)
    ap.add_argument("--table", type=Path, default=None)
    a = ap.parse_args(argv)

    cfg = json.loads((a.checkpoint / "config.json").read_text())
    L, N = cfg["num_hidden_layers"], cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    d = N // H
    act = cfg.get("hidden_act", "gelu")
    l_phi = a.l_phi if a.l_phi is not None else (1.0 if act == "relu" else 1.13)
    w = Weights(a.checkpoint)
    anchor = "encoder.layer.0.attention.self.query.weight"
    prefix = next(n[: -len(anchor)] for n in w.where if n.endswith(anchor))

    rows: list[dict] = []
    for l in range(L):
        p = f"{prefix}encoder.layer.{l}."
        wq, wk, wv = (w.get(p + f"attention.self.{r}.weight") for r in ("query", "key", "value"))
        wo = w.get(p + "attention.output.dense.weight")
        for h in range(H):
            hs = slice(h * d, (h + 1) * d)
            rows.append(
                {"layer": l, "head": h, "matrix_type": "QK", **matrix_row(wq[hs, :].T @ wk[hs, :])}
            )
        for h in range(H):
            hs = slice(h * d, (h + 1) * d)
            rows.append(
                {
                    "layer": l,
                    "head": h,
                    "matrix_type": "OV",
                    **matrix_row(wv[hs, :].T @ wo[:, hs].T),
                }
            )
        rows.append(
            {
                "layer": l,
                "head": -1,
                "matrix_type": "M_in",
                **matrix_row(w.get(p + "intermediate.dense.weight").T),
            }
        )
        rows.append(
            {
                "layer": l,
                "head": -1,
                "matrix_type": "M_out",
                **matrix_row(w.get(p + "output.dense.weight").T),
            }
        )

    def c2(l: int, t: str, h: int = -1) -> float:
        return next(
            r["spectral_norm"]
            for r in rows
            if r["layer"] == l and r["matrix_type"] == t and r["head"] == h
        )

    # alpha(l) = prod_{k=l+1}^{L-1} L_phi C2(M_in(k)) C2(M_out(k)) sum_h C2(OV)(1 + 4 C2(QK))
    factor = [
        log(l_phi)
        + log(c2(k, "M_in"))
        + log(c2(k, "M_out"))
        + log(sum(c2(k, "OV", h) * (1 + 4 * c2(k, "QK", h)) for h in range(H)))
        for k in range(L)
    ]
    log_alpha = [sum(factor[l + 1 :]) for l in range(L)]
    m = a.grid_m if a.grid_m is not None else math.ceil(L + math.log(max(N, 2)))
    grid = [i / m for i in range(2 * m + 1)]
    tiny = float(np.finfo(np.float64).tiny)

    log_c_all, xi_terms = [], [[] for _ in range(L)]
    for r in rows:
        l, t, h = r["layer"], r["matrix_type"], r["head"]
        lin, lout = log(c2(l, "M_in")), log(c2(l, "M_out"))
        if t == "QK":
            lg = math.log(2) + log(c2(l, "OV", h)) + lout + lin
            xi = (lout + lin + log(c2(l, "OV", h)) + log(r["norm_21"])) * 2 / 3
        elif t == "OV":
            lg, xi = lout + lin, (lout + lin + log(r["norm_21"])) * 2 / 3
        elif t == "M_in":
            lg, xi = lout, (lout + log(r["norm_21"])) * 2 / 3
        else:
            lg, xi = 0.0, log(r["norm_21"]) * 2 / 3
        xi_terms[l].append(xi)
        log_s = max(lg + log_alpha[l] + math.log(L), math.log(tiny))
        logk = np.log(r.pop("_kept"))
        best, best_p = math.inf, 0.0
        for p in grid:
            if logk.size == 0:
                lsp = -math.inf
            elif p == 0:
                lsp = math.log(logk.size)
            else:
                lsp = logsumexp(list(p * logk))
            lc = (lsp + p * log_s + (p + 1) * math.log(N)) / (p + 2)
            if lc < best:
                best, best_p = lc, p
        r.update(
            log10_alpha=log_alpha[l] / math.log(10),
            p_star=best_p,
            log10_scale=log_s / math.log(10),
            log10_contribution=best / math.log(10),
        )
        log_c_all.append(best)
    log_sa = logsumexp([*log_c_all, 0.5 * math.log(L)])
    log_xi = [logsumexp(x) for x in xi_terms]
    terms = [la * 2 / 3 + lx for la, lx in zip(log_alpha, log_xi, strict=True)]
    log_nb = 1.5 * logsumexp([0.0, *terms])

    if a.table is not None:
        cols = list(rows[0])
        with open(a.table, "w") as fh:
            fh.write(",".join(cols) + "\n")
            for r in rows:
                fh.write(
                    ",".join(repr(r[c]) if isinstance(r[c], float) else str(r[c]) for c in cols)
                    + "\n"
                )
    out = {
        "grid_m": m,
        "L_phi": l_phi,
        "bounds": {
            "spectrum_adaptive": {"log10": log_sa / math.log(10)},
            "norm_based": {"log10": log_nb / math.log(10)},
        },
    }
    sys.stdout.write(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
