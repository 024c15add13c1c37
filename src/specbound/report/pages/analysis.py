"""The report page of one analysis (``analyze --report``): the answer first, in plain words with
its caveats (rank ceiling, proxies are not bounds), then the figures, then the tables.

Rendered from templates/analysis.html (the body: analysis_body.html, the answer:
_analysis_answer.html), which escape every user-derived string; tables through ``html.table``.
The numbers come from the analysis (``tables.type_shares``, ``tables.p_star_counts``,
``tables.largest_terms``); this module words and formats them. :func:`analysis_page` returns
the page; ``io.files.write_report_page`` writes it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import Param, SpecboundError
from ...io.files import write_report_page
from ...measures import MEASURES
from ...naming import display_name
from ...tables import largest_terms, p_star_counts, type_shares
from ..figures import analysis as F
from ..figures.analysis import head_grids, heatmap_summary
from ..figures.htsr import ESD_CHOICES
from ..figures.style import figure_formats as check_formats
from ..figures.style import require_matplotlib, writing_formats
from ..html import (
    NOT_APPLICABLE,
    figure_html,
    file_link,
    files_html,
    page,
    render,
    scrub_paths,
    table,
)
from ..numbers import BEYOND, UNDEFINED, percent, spec
from ..terminal import explain_p, htsr_fit_sentence

if TYPE_CHECKING:
    import pandas as pd

    from ...analysis import Analysis
    from ..figures.style import Figure

MATRIX_TYPES = ("QK", "OV", "M_in", "M_out")
MATRIX_FIRST = ["layer", "head", "matrix_type", "p_star", "contribution", "log10_contribution"]
LAYER_FIRST = [
    "layer",
    "log10_depth_factor",
    "contribution_total",
    "mean_p_star",
    "n_p0",
    "n_p2",
]
#: CSV names of the depth factor -> the names every page shows (SPEC: alpha(l)).
DEPTH_RENAME = {"alpha": "depth_factor", "log10_alpha": "log10_depth_factor"}
#: The caveat every page with a proxy states.
PROXY_CAVEAT = (
    "Both numbers are proxies: leading factors of the two bounds with their constants dropped, "
    "not bounds on the test error. Compare how they grow across models, not their values."
)
#: What p = 0 and p = 2 charge, in words (SPEC 4), shared by the analysis and scale pages.
P_MEANING = (
    "At p = 0 a matrix is charged c(A, 0) = sqrt(rank x N): its rank only, whatever its "
    "singular values and its scale s = gamma x depth_factor x L. At p = 2 it is charged "
    "c(A, 2) = (||A||_F x s)^(1/2) x N^(3/4). In between, large singular values weigh more "
    "than small ones. p = 0 wins when the scale is large: roughly when s times the matrix's "
    "typical singular value exceeds sqrt(rank / N), which is at most 1."
)


def bound_text(b: Any) -> str:
    """``value (log10 x.xxx)``; a value beyond float64 is written so (its log10 kept)."""
    value = BEYOND if b.value is None else spec(b.value, ".4g")
    return f"{value} (log10 {spec(b.log10, '.3f')})"


def ceiling_sentence(a: Analysis) -> str:
    """The plain-words answer about the rank ceiling (SPEC 10's diagnosis)."""
    n = len(a.spectra)
    share = a.spectrum_adaptive_share_p0
    gap = a.spectrum_adaptive_ceiling_gap
    L, N = a.spec.num_layers, a.spec.hidden_size
    if n and share == 1.0:
        return (
            f"All {n:,} matrices picked p* = 0: the spectrum-adaptive value is the rank "
            f"ceiling sum sqrt(r N) + sqrt(L), the same for any full-rank checkpoint of this "
            f"shape (L = {L}, N = {N}); it does not see the trained singular values."
        )
    n0 = int(np.sum(a.details.p_star == 0))
    return (
        f"{n0:,} of {n:,} matrices picked p* = 0; the spectrum-adaptive proxy lies "
        f"{gap:.3g} orders of magnitude (log10) below its rank ceiling sum sqrt(r N) + sqrt(L), "
        "so the trained singular values, not only the ranks, set it."
    )


def measures_table(a: Analysis) -> pd.DataFrame | None:
    """name, value, description, note of every measure of ``a`` (None when it has none)."""
    import pandas as pd

    registry: Any = MEASURES
    values = getattr(a, "measures", None)
    if not values:
        return None
    notes = getattr(a, "measure_notes", {}) or {}
    rows = []
    for name, v in values.items():
        m = registry.get(name)
        rows.append(
            {
                "measure": name,
                "value": None if v is None else float(v),  # a number: right-aligned by table()
                "description": m.description if m is not None else "",
                "note": notes.get(name, ""),
            }
        )
    return pd.DataFrame(rows, columns=["measure", "value", "description", "note"])


def _where(a: Analysis, i: int) -> str:
    s = a.spectra
    head = int(s.head[i])
    return f"layer {int(s.layer[i])}" + (f", head {head}" if head >= 0 else "")


def largest_term_sentence(a: Analysis) -> str:
    """Which single matrix contributes most, or, when several tie for the largest c*
    (``tables.largest_terms``), how many tie at which value and of which types: a tie-break
    is not a finding."""
    d, s = a.details, a.spectra
    logc = np.asarray(d.log_contribution, dtype=float)
    largest = largest_terms(a)
    if largest is None:
        return ""
    top, tied = largest
    if tied.size > 1:
        types = sorted({MATRIX_TYPES[int(s.matrix_type[i])] for i in tied}, key=MATRIX_TYPES.index)
        ps = sorted({float(d.p_star[i]) for i in tied})
        p_text = ", ".join(f"{p:.3g}" for p in ps)
        return (
            f"No single matrix has the largest term: {tied.size:,} matrices tie at c* = "
            f"{_c_text(logc[top])} ({', '.join(types)}; p* = {p_text})."
        )
    text = (
        f"The largest single term is {MATRIX_TYPES[int(s.matrix_type[top])]} "
        f"({_where(a, top)}), c* = {_c_text(logc[top])}, p* = {d.p_star[top]:.3g}"
    )
    if logc.size > 1:
        text += f"; the next largest is {_c_text(np.sort(logc)[-2])}"
    return text + "."


def _c_text(log_c: float) -> str:
    """A contribution from its natural log: 4 significant digits, or 10^x beyond float64."""
    v = float(np.exp(log_c)) if log_c < 709 else math.inf
    return f"{v:.4g}" if math.isfinite(v) else f"10^{log_c / math.log(10):.4g}"


def shares_text(shares: dict[str, float] | None) -> str:
    """``QK 62%, OV 30%, ...``, largest first (``tables.type_shares``); undefined when None."""
    if shares is None:
        return UNDEFINED
    ranked = sorted(shares.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{name} {percent(share)}" for name, share in ranked)


def answer_context(a: Analysis) -> dict[str, Any]:
    """What the opening says (templates/_analysis_answer.html): the answer in plain words (rank
    ceiling or not), the caveat, both proxies, which matrices dominate and which p they chose.
    A caller may append sentences to ``extra`` (a paragraph each, before the adaptations)."""
    d, s = a.details, a.spectra
    sa, nb = a.bounds.spectrum_adaptive, a.bounds.norm_based
    dist = ", ".join(f"p* = {p:.3g}: {n:,}" for p, n in p_star_counts(a))
    depth0 = float(d.log_alpha[0] / np.log(10.0)) if d.log_alpha.size else 0.0
    params = "" if a.num_parameters is None else f", {a.num_parameters:,} parameters"
    return {
        "ceiling": ceiling_sentence(a),
        "caveat": PROXY_CAVEAT,
        "bounds": [("spectrum-adaptive", bound_text(sa)), ("norm-based", bound_text(nb))],
        "orders": (
            f"The spectrum-adaptive proxy is {abs(nb.log10 - sa.log10):.2f} orders of magnitude "
            f"{'below' if sa.log10 <= nb.log10 else 'above'} the norm-based one (different "
            "dropped constants: this is not a tighter bound)."
        ),
        "shares": shares_text(type_shares(a)),
        "largest": largest_term_sentence(a) if len(s) else "",
        "p_dist": dist,
        "n_matrices": len(s),
        "grid_m": a.grid_m,
        "explain_p": explain_p(d.p_star, a),
        "p_meaning": P_MEANING,
        "model": (
            f"log10_depth_factor of layer 0 = {depth0:.2f}. Model: {a.spec.architecture}, "
            f"L = {a.spec.num_layers}, N = {a.spec.hidden_size:,}, H = {a.spec.num_heads}, "
            f"F = {a.spec.intermediate_size:,}{params}."
        ),
        "extra": [t for t in (a.headroom_sentence(),) if t],
        "adaptations": [scrub_paths(note) for note in a.adaptations],
    }


def answer_html(a: Analysis) -> str:
    """The opening alone (templates/_analysis_answer.html with :func:`answer_context`)."""
    return render("_analysis_answer.html", a=answer_context(a))


#: The files of an analysis folder that its page links to (those that exist).
ANALYSIS_FILES = ("summary.json", "matrices.csv", "layers.csv", "weights.csv", "spectra.npz")


def analysis_context(
    a: Analysis,
    figs: Sequence[Figure],
    notes: Sequence[str] = (),
    out_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Everything templates/analysis_body.html shows for one model: the answer
    (:func:`answer_context`), figures, tables; headings link to the CSVs in ``out_dir`` (the
    page's folder) when they are there."""
    mats = a.matrices.sort_values("log10_contribution", ascending=False, kind="stable")
    mats = mats.assign(head=mats["head"].where(mats["head"] >= 0))  # M_in/M_out: n/a
    mats = mats.rename(columns=DEPTH_RENAME)
    mt = measures_table(a)
    constant = heatmap_summary(head_grids(a))[2]
    weights = getattr(a, "weights", None)
    has_weights = weights is not None and len(weights)
    return {
        "a": answer_context(a),
        "files": files_html(out_dir, ANALYSIS_FILES),
        "link": {
            n.split(".")[0]: file_link(out_dir, n)
            for n in ("summary.json", "layers.csv", "matrices.csv", "weights.csv")
        },
        "measures": table(mt) if mt is not None else None,
        "fit_words": htsr_fit_sentence(a) if mt is not None else None,
        "figure_notes": [*notes, *([constant] if constant else [])],
        "figures": [figure_html(f) for f in figs],
        "layers": table(a.layers.rename(columns=DEPTH_RENAME), first=LAYER_FIRST),
        "matrices": table(mats, page_size=50, first=MATRIX_FIRST, missing={"head": NOT_APPLICABLE}),
        "weights": (
            table(weights, page_size=50, first=["layer", "role", "tensor"]) if has_weights else None
        ),
    }


def analysis_sections(
    a: Analysis,
    figs: Sequence[Figure],
    notes: Sequence[str] = (),
    out_dir: str | Path | None = None,
) -> list[str]:
    """The body of the page for one model (templates/analysis_body.html rendered with
    :func:`analysis_context`), as one section."""
    return [render("analysis_body.html", **analysis_context(a, figs, notes, out_dir))]


def analysis_page(
    analysis: Analysis,
    out_dir: str | Path,
    esd: str = "worst",
    *,
    figure_formats: str | Sequence[str] | None = None,
) -> str:
    """The page of one model (templates/analysis.html), its figures drawn into
    ``out_dir``/figures (the folder being written, e.g. the ``tmp`` of ``Analysis.to_dir(out,
    extra=...)``; the page links the files beside it): the text for ``out_dir``/report.html,
    which ``io.files.write_report_page`` writes. ``esd``: ``all`` | ``worst`` | ``none``: the
    raw weights whose ESD with its power-law fit is drawn (``none`` also drops the
    HTSR-alpha-per-layer plot). ``figure_formats``: the files of each figure (``"svg"`` by
    default; e.g. ``"png,pdf"``)."""
    if esd not in ESD_CHOICES:
        raise SpecboundError(Param("esd"), f" must be one of {', '.join(ESD_CHOICES)}, got {esd!r}")
    formats = check_formats(figure_formats)
    require_matplotlib()
    out_dir = Path(out_dir)
    with writing_formats(formats):
        figs = F.analysis_figures(analysis, out_dir / "figures", esd=esd)
    notes = []
    if esd != "none" and not any(f.name.startswith("esd") for f in figs):
        notes.append("No ESD figure: no raw weight matrix has the 20 eigenvalues a fit needs.")
    return page(
        f"specbound report: {display_name(analysis.model)}",
        docs=("analyze", "measures", "weightwatcher"),
        template="analysis.html",
        **analysis_context(analysis, figs, notes, out_dir),
    )


def write_analysis_report(
    analysis: Analysis,
    out_dir: str | Path,
    esd: str = "worst",
    *,
    figure_formats: str | Sequence[str] | None = None,
) -> Path:
    """Figures/ and report.html for one model in ``out_dir``: :func:`analysis_page`'s text
    written by ``io.files.write_report_page`` (what ``analyze --report`` does inside
    ``Analysis.to_dir(out, extra=...)``, so that the report and the CSVs are one atomic
    write)."""
    return write_report_page(
        out_dir, analysis_page(analysis, out_dir, esd, figure_formats=figure_formats)
    )
