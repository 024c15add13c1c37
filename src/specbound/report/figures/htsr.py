"""WeightWatcher-style views of one analysis: the ESD of raw weight matrices (log-log histogram
of the eigenvalues of W^T W with the fitted power law and x_min) and htsr_alpha per layer. The
fits are those of ``measures.powerlaw.weight_fits`` (the same as htsr_alpha and weights.csv)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import Param, SpecboundError
from ...linalg.spectra import rank_threshold
from ...measures.powerlaw import FIT_OK, HTSR_GOOD, fit_quality, outside_good, weight_fits
from .style import (
    WIDTH,
    Figure,
    axis_label,
    integer_axis,
    legend_below,
    plain_log_axis,
    require_matplotlib,
    save,
    styled,
)

if TYPE_CHECKING:
    from ...analysis import Analysis

ESD_CHOICES = ("all", "worst", "none")
ESD_PER_FIGURE = 12
WORST_K = 4


# --- WeightWatcher-style views --------------------------------------------------------------


def htsr_fits(a: Analysis) -> list[Any]:
    """The power-law fit of every raw weight matrix (``measures.powerlaw.weight_fits``, memoized on
    the Analysis' measure input: the same fits as htsr_alpha and weights.csv)."""
    ws = a.weight_spectra
    if ws is None or len(ws) == 0:
        return []

    return list(weight_fits(a.measure_input()))


def trusted_fits(a: Analysis, fits: list[Any] | None = None) -> list[bool]:
    """Per raw weight row: whether its power-law fit may be presented as a finding: it has an
    alpha and, when weights.csv carries a fit-quality column ``htsr_fit``, that says ``ok``
    (the hook for issue 36 item 1; without the column every fitted alpha counts)."""
    fits = htsr_fits(a) if fits is None else fits
    ok = [f.alpha is not None for f in fits]
    w = getattr(a, "weights", None)
    if w is not None and "htsr_fit" in getattr(w, "columns", ()) and len(w) == len(ok):
        ok = [o and str(q) == "ok" for o, q in zip(ok, w["htsr_fit"], strict=True)]
    return ok


def esd_selection(a: Analysis, esd: str = "worst") -> list[int]:
    """Raw weight rows whose ESD is drawn: ``all`` (every matrix with a fit), ``worst`` (the
    ``WORST_K`` matrices with an ``ok`` fit (a short_tail or poor fit is not an outlier
    finding) outside WeightWatcher's 2..6 range, farthest first; when no ok fit lies outside,
    the ``WORST_K`` largest alphas), ``none``."""
    if esd not in ESD_CHOICES:
        raise SpecboundError(Param("esd"), f" must be one of {', '.join(ESD_CHOICES)}, got {esd!r}")
    if esd == "none":
        return []
    fits = htsr_fits(a)
    fitted = [i for i, f in enumerate(fits) if f.alpha is not None]
    if esd == "all":
        return fitted

    fitted = [i for i in fitted if fit_quality(fits[i])[0] == FIT_OK]

    ok = trusted_fits(a, fits)
    pool = [i for i in fitted if ok[i]] or fitted

    def dist(i: int) -> float:
        al = float(fits[i].alpha)
        return outside_good(al) + 1e-9 * al

    outside = [i for i in pool if outside_good(float(fits[i].alpha)) > 0]
    return sorted(outside or pool, key=lambda i: -dist(i))[:WORST_K]


def _kept_eigenvalues(a: Analysis, i: int) -> np.ndarray:
    ws = a.weight_spectra
    assert ws is not None
    sv = np.asarray(ws.singular_values(i), dtype=np.float64)
    k = int(min(ws.rows[i], ws.cols[i]))
    kept = sv[sv > rank_threshold(k, sv[0])] if sv.size else sv
    return np.sort(kept * kept)


def _weight_name(a: Analysis, i: int) -> str:
    ws = a.weight_spectra
    assert ws is not None
    return f"layer {int(ws.layer[i])} {ws.role_names[i]}"


@styled
def _esd_page(a: Analysis, rows: list[int], fits: list[Any], out_dir: Path, name: str) -> Any:
    plt = require_matplotlib()
    cols = min(len(rows), 2 if len(rows) <= 4 else 3)
    nrows = math.ceil(len(rows) / cols)
    fig, axes = plt.subplots(
        nrows, cols, figsize=(WIDTH, 2.7 * nrows + 1.0), squeeze=False, layout="constrained"
    )
    for ax, i in zip(axes.flat, rows, strict=False):
        lam = _kept_eigenvalues(a, i)
        f = fits[i]
        bins = np.logspace(np.log10(lam[0]), np.log10(lam[-1]), 30)
        dens, edges = np.histogram(lam, bins=bins, density=True)
        mids = np.sqrt(edges[:-1] * edges[1:])
        ok = dens > 0
        ax.step(mids[ok], dens[ok], where="mid", color="#3b6fb6", lw=1.3, label="ESD")
        xmin, al, t = float(f.xmin), float(f.alpha), int(f.num_tail)
        x = np.logspace(np.log10(xmin), np.log10(lam[-1]), 50)
        share = t / lam.size  # the tail holds this share of the eigenvalues
        ax.plot(
            x,
            share * (al - 1.0) / xmin * (x / xmin) ** (-al),
            color="#c0392b",
            lw=1.6,
            ls="--",
            label="power-law fit",
        )
        ax.axvline(xmin, color="#444", lw=1.0, ls=":", label="x_min")
        fit_y = share * (al - 1.0) / xmin * (x / xmin) ** (-al)
        ys = np.concatenate([dens[ok], fit_y[fit_y > 0]])
        plain_log_axis(ax, "x", float(lam[0]), float(lam[-1]), max_ticks=5)
        plain_log_axis(ax, "y", float(ys.min()), float(ys.max()), max_ticks=6)
        verdict = fit_quality(f)[0]
        flag = "" if verdict == FIT_OK else f" [{verdict} fit]"
        ax.set_title(
            f"{_weight_name(a, i)}{flag}\nhtsr_alpha {al:.2f}, x_min {xmin:.3g}, tail {t}",
            fontsize=11,
        )
        ax.grid(True, which="major", alpha=0.3)
    for ax in list(axes.flat)[len(rows) :]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel(axis_label("density", log=True))
    for ax in list(axes.flat)[: len(rows)]:
        ax.set_xlabel(axis_label("eigenvalue of WᵀW", log=True))
    legend_below(fig, list(axes.flat))
    fig.suptitle("Empirical spectral density of raw weights with the HTSR power-law fit")
    return save(
        fig,
        out_dir,
        name,
        "ESD and power-law fit",
        "Log-log histogram (density) of the eigenvalues of WᵀW above the rank threshold; "
        "dashed: the fitted power law p(x) ∝ x^(-alpha) for x >= x_min, scaled to the tail's "
        "share of the eigenvalues; dotted: x_min. Same fit as htsr_alpha (SPEC 9). A title "
        "marked [short_tail fit] or [poor fit] is a fit not to trust (weights.csv htsr_fit).",
    )


def esd_figures(a: Analysis, out_dir: Path, esd: str = "worst", prefix: str = "") -> list[Figure]:
    """ESD figures of ``esd_selection(a, esd)``, ``ESD_PER_FIGURE`` matrices per figure."""
    rows = esd_selection(a, esd)
    if not rows:
        return []
    fits = htsr_fits(a)
    out = []
    chunks = [rows[k : k + ESD_PER_FIGURE] for k in range(0, len(rows), ESD_PER_FIGURE)]
    for n, chunk in enumerate(chunks):
        name = f"{prefix}esd" + (f"_{n + 1}" if len(chunks) > 1 else "")
        fig = _esd_page(a, chunk, fits, out_dir, name)
        if esd == "worst":
            outside = [i for i in chunk if outside_good(float(fits[i].alpha)) > 0]
            if outside:
                fig.title += " (ok fits farthest from alpha 2-6)"
            else:
                fig.title += " (every ok fit lies in alpha 2-6: the largest alphas shown)"
                fig.caption += (
                    " No matrix with an ok fit has alpha outside 2-6: these panels are the "
                    "largest alphas, not outliers."
                )
            failed = _failed_fits(fits)
            if failed:
                fig.caption += (
                    f" {failed} of {len(fits)} fits are short_tail or poor (weights.csv "
                    "htsr_fit) and are left out of this selection: their alpha is not a finding."
                )
        elif len(chunks) > 1:
            fig.title += f" ({n + 1} of {len(chunks)})"
        out.append(fig)
    return out


def _failed_fits(fits: list[Any]) -> int:
    return sum(fit_quality(f)[0] != FIT_OK for f in fits)


@styled
def htsr_layer_figure(a: Analysis, out_dir: Path, prefix: str = "") -> Figure | None:
    """htsr_alpha of every raw weight matrix against its layer, one marker per role."""
    plt = require_matplotlib()
    fits = htsr_fits(a)
    ws = a.weight_spectra
    if ws is None or not any(f.alpha is not None for f in fits):
        return None
    fig, ax = plt.subplots(figsize=(WIDTH, 3.4), layout="constrained")
    ax.axhspan(*HTSR_GOOD, color="#2e7d32", alpha=0.08, lw=0, label="alpha 2-6")
    roles = list(dict.fromkeys(ws.role_names))
    markers = "osD^v<>px*"
    for k, role in enumerate(roles):
        sel = [i for i, f in enumerate(fits) if ws.role_names[i] == role and f.alpha is not None]
        if not sel:
            continue
        x = np.array([int(ws.layer[i]) for i in sel]) + (k - (len(roles) - 1) / 2) * 0.07
        ax.plot(
            x,
            [fits[i].alpha for i in sel],
            markers[k % len(markers)],
            ms=6,
            color=f"C{k % 10}",
            label=str(role),
            ls="-",
            lw=0.8,
        )

    bad = [i for i, f in enumerate(fits) if f.alpha is not None and fit_quality(f)[0] != FIT_OK]
    if bad:
        ax.plot(
            [int(ws.layer[i]) for i in bad],
            [fits[i].alpha for i in bad],
            "o",
            ms=13,
            mfc="none",
            mec="#888",
            mew=1.2,
            ls="",
            label="short_tail / poor fit",
        )
    L = int(np.max(ws.layer)) + 1
    integer_axis(ax, "x", L, max_ticks=16)
    ax.set_xlabel("layer l")
    ax.set_ylabel("htsr_alpha")
    ax.set_title("HTSR alpha per layer (WeightWatcher's exponent)")
    ax.grid(True, alpha=0.3)
    ax.legend(
        frameon=False,
        ncol=min(len(roles) + 1 + bool(bad), 7),
        loc="upper center",
        bbox_to_anchor=(0.5, -0.22),
    )
    return save(
        fig,
        out_dir,
        f"{prefix}htsr_alpha",
        "HTSR alpha per layer",
        "The power-law exponent htsr_alpha of each raw weight matrix (undefined below 20 "
        "eigenvalues); shaded: 2-6, the range WeightWatcher reads as well trained; circled: "
        "short_tail or poor fits (weights.csv htsr_fit), not to be read as findings. Not the "
        "depth_factor.",
    )
