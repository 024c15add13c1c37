"""The terminal summary of an Analysis (rich tables)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .analysis import Analysis
from .spectra import MATRIX_TYPES


def _fmt_bound(b) -> str:  # noqa: ANN001
    v = b.value
    return f"{v:.6g}" if v is not None else "> 1.8e308"


def explain_p(p_star: np.ndarray) -> str:
    """One sentence on what the chosen p say."""
    share0 = float(np.mean(p_star == 0)) if p_star.size else 0.0
    share2 = float(np.mean(p_star == 2)) if p_star.size else 0.0
    if share0 == 1.0:
        return ("Every matrix picked p = 0: the depth factor alpha is so large that the proxy is "
                "a rank count, sum sqrt(rank * N).")
    if share2 == 1.0:
        return "Every matrix picked p = 2: the proxy is driven by Frobenius norms."
    return (f"{share0:.0%} of matrices picked p = 0 (rank-dominated), {share2:.0%} p = 2 "
            "(Frobenius-dominated); the rest sit in between, trading rank against norm.")


def print_summary(a: Analysis, out: Path | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    s = a.spec
    console.print(
        f"[bold]{a.model}[/bold]  {s.architecture}  L={s.num_layers} N={s.hidden_size} "
        f"H={s.num_heads} d_h={s.head_dim} F={s.intermediate_size}  grid m={a.grid_m} "
        f"L_phi={a.l_phi:g}" + ("  (spectra from cache)" if a.from_cache else "")
    )
    cols = a.layer_columns()
    mats = a.matrix_columns()
    t = Table(title="per layer", title_justify="left")
    for c in ["layer", "log10 alpha", *MATRIX_TYPES, "total", "p*=0", "p*=2"]:
        t.add_column(c, justify="right")
    for l in range(s.num_layers):
        t.add_row(
            str(l), f"{cols['log10_alpha'][l]:.3f}",
            *[f"{cols[f'contribution_{m}'][l]:.4g}" for m in MATRIX_TYPES],
            f"{cols['contribution_total'][l]:.4g}", str(cols["n_p0"][l]), str(cols["n_p2"][l]),
        )
    console.print(t)

    grid = a.details.grid
    used = np.unique(a.details.p_star)
    pt = Table(title="p* picked, by matrix type (count)", title_justify="left")
    pt.add_column("matrix_type")
    for p in used:
        pt.add_column(f"p={p:.3g}", justify="right")
    for m in MATRIX_TYPES:
        sel = mats["matrix_type"] == m
        pt.add_row(m, *[str(int(np.sum(a.details.p_star[sel] == p))) for p in used])
    console.print(pt)
    console.print(explain_p(a.details.p_star) + f" Grid: {grid.size} points in [0, 2].")

    order = np.argsort(-a.details.log_contribution, kind="stable")[:5]
    tt = Table(title="largest contributions", title_justify="left")
    for c in ["layer", "head", "matrix_type", "rank", "spectral_norm", "p*", "contribution"]:
        tt.add_column(c, justify="right")
    for i in order:
        tt.add_row(str(mats["layer"][i]), str(mats["head"][i]), mats["matrix_type"][i],
                   str(mats["rank"][i]), f"{mats['spectral_norm'][i]:.4g}",
                   f"{mats['p_star'][i]:.3g}", f"{mats['contribution'][i]:.4g}")
    console.print(tt)

    b = a.bounds
    bt = Table(title="bounds", title_justify="left")
    for c in ["proxy", "value", "log10"]:
        bt.add_column(c, justify="right")
    bt.add_row("spectrum_adaptive", _fmt_bound(b.spectrum_adaptive),
               f"{b.spectrum_adaptive.log10:.4f}")
    bt.add_row("norm_based", _fmt_bound(b.norm_based), f"{b.norm_based.log10:.4f}")
    console.print(bt)
    for note in a.adaptations:
        console.print(f"[yellow]adaptation:[/yellow] {note}")
    if out is not None:
        console.print(f"wrote {out}/summary.json, matrices.csv, layers.csv, spectra.npz")
