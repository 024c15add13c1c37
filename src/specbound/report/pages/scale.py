"""The report page of a scaling study (``scale``, ``reproduce``): the answer first, as the
verdict sentences of ``studies.scale.verdict`` (two-point caveats, residual degrees of freedom,
the rank ceiling, dominance, measures without a fit), then figures, then the tables.
Rendered from templates/scale.html and _scale_answer.html; the numbers (ranges, shares) come
from ``studies.scale.notes``; this module words and formats them. :func:`scale_page` returns
the page (its figures drawn into the folder being written); ``io.files.write_report_page``
writes it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...io.files import write_report_page
from ...measures import measure_names
from ...naming import display_name, display_names, natural_key
from ...studies.scale import notes as N
from ...studies.scale import verdict as V
from ..figures import analysis as FA
from ..figures import scale as FS
from ..figures.style import require_matplotlib, writing_formats
from ..html import (
    figure_html,
    file_link,
    files_html,
    key_columns_first,
    page,
    render,
    scrub_paths,
    sig3,
    table,
)
from ..numbers import percent
from .analysis import PROXY_CAVEAT, shares_text

if TYPE_CHECKING:
    import pandas as pd

    from ...analysis import Analysis
    from ...studies.scale.run import Study
    from ..figures.style import Figure

MATRIX_TYPES = ("QK", "OV", "M_in", "M_out")
GROWTH_FIRST = [
    "proxy",
    "measure",
    "axis",
    "fit",
    "fixed_axis",
    "fixed_value",
    "caveat",
    "exponent",
    "exponent_se",
    "log10_per_unit",
    "log10_per_unit_se",
    "n_points",
    "resid_df",
]


def share_text(share: float) -> str:
    """The one format of a share p* = 0 on every page: a percentage."""
    return percent(share)


def verdict_rows(m: pd.DataFrame, g: pd.DataFrame) -> list[dict[str, str]]:
    """The verdict sentences per axis (``studies.scale.verdict``: growth, interaction, rank
    ceiling), N first, then L; axes with nothing to say are left out."""
    rows = []
    for axis, sym, osym in (("hidden_size", "N", "L"), ("num_layers", "L", "N")):
        v = V.growth_verdict(g, axis)
        said = [] if v is None else [v.sentence, *v.interaction]
        c = V.ceiling_verdict(m, g, axis)
        said += [c] if c else []
        if said:
            rows.append({"sym": sym, "other": osym, "text": " ".join(said)})
    return rows


def study_notes(m: pd.DataFrame, g: pd.DataFrame) -> list[str]:
    """The notes under the verdicts (``studies.scale.notes``: rank ceiling count, training,
    dominance, low residual degrees of freedom, measures)."""
    low = V.low_df_note(g) if not g.empty else None
    lines = (
        N.ceiling_count(m),
        N.training_note(m),
        N.dominance_note(m),
        low,
        *N.measure_notes(m, g),
    )
    return [line for line in lines if line]


def range_sentences(m: pd.DataFrame) -> list[str]:
    """log10 B's range per proxy (``studies.scale.notes.proxy_range``), in words."""
    ranges = []
    for proxy, label in (("spectrum_adaptive", "spectrum-adaptive"), ("norm_based", "norm-based")):
        r = N.proxy_range(m, proxy)
        if r is None:
            continue
        lo, hi, n_undefined = r
        if n_undefined == len(m):
            ranges.append(f"The {label} proxy is beyond float64 (undefined) for every model.")
        else:
            ranges.append(
                f"log10 B of the {label} proxy ranges from {lo:.3f} to {hi:.3f}"
                + (f" ({n_undefined} models beyond float64: undefined)." if n_undefined else ".")
            )
    return ranges


def choice_sentence(m: pd.DataFrame) -> str | None:
    """Which p the matrices picked (``studies.scale.notes.share_p0_range``): every one p* = 0
    (the rank ceiling) or the range of the share p*=0; None without it."""
    sr = N.share_p0_range(m)
    if sr is None:
        return None
    if sr[0] == 1.0:
        return (
            "every matrix of every model picked p* = 0 "
            f"(share p*=0: {share_text(1.0)} in every model), so the spectrum-adaptive "
            "proxy is the rank ceiling: it depends on the ranks only (sum of sqrt(rank x "
            "N)), not on the trained singular values."
        )
    return (
        f"share p*=0 from {share_text(sr[0])} to {share_text(sr[1])} of the matrices per "
        f"model (mean {share_text(sr[2])}); p* = 0 charges a matrix by its rank only."
    )


def dominate_text(study: Study) -> str | None:
    """Which matrix types dominate (``studies.scale.notes.mean_type_shares``), the end of a
    sentence; None without models."""
    shares = N.mean_type_shares(study.analyses)
    if study.analyses and shares is None:
        return ": undefined (every model's contributions are beyond float64)."
    if shares is not None:
        return f" (mean share of the summed contributions): {shares_text(shares)}."
    return None


def answer_context(study: Study) -> dict[str, Any]:
    """What the opening says (templates/_scale_answer.html): the verdict sentences (answer
    first), the notes, the caveat, then the ranges (``studies.scale.notes``)."""
    m, g = study.models, study.growth
    has_fit = bool(len(m)) and not g.empty
    skipped = getattr(study, "skipped", [])
    return {
        "verdicts": verdict_rows(m, g) if has_fit else [],
        "notes": study_notes(m, g) if len(m) else [],
        "no_growth": study.growth.empty,
        "caveat": PROXY_CAVEAT,
        "n_models": len(m),
        "ranges": range_sentences(m) if len(m) else [],
        "choice": choice_sentence(m),
        "dominate": dominate_text(study),
        "missing": list(study.missing),
        "skipped": [scrub_paths(f"{display_name(name)}: {r}") for name, r in skipped],
    }


def study_answer_html(study: Study) -> str:
    """The opening alone (templates/_scale_answer.html with :func:`answer_context`)."""
    return render("_scale_answer.html", a=answer_context(study))


def models_display(study: Study) -> pd.DataFrame:
    """models.csv for the page: names without their shared prefix, natural order, key columns
    (name, L, N, the measures) first; measures undefined on every model dropped."""
    m = study.models.copy()
    if "model" in m.columns and len(m):
        m["model"] = display_names(list(m["model"].astype(str)))
        keys = [c for c in ("num_layers", "hidden_size") if c in m.columns]
        order = sorted(
            range(len(m)),
            key=lambda i: (tuple(m[k].iloc[i] for k in keys), natural_key(m["model"].iloc[i])),
        )
        m = m.iloc[order].reset_index(drop=True)
    names = measure_names()
    measure_cols = [c for n in names for c in (n, f"{n}_log10") if c in m.columns]
    undefined = [c for c in measure_cols if not m[c].notna().any()]  # e.g. no --init given
    m = m.drop(columns=undefined)
    measure_cols = [c for c in measure_cols if c not in undefined]
    a, b = "spectrum_adaptive_share_p0", "share_p0"
    if a in m.columns and b in m.columns and m[a].equals(m[b]):
        m = m.drop(columns=[b])  # the same share twice (one header "share p*=0" twice)
    for c in SHARE_COLUMNS:
        if c in m.columns:  # percentages, as the text says them (share_text)
            m[c] = 100.0 * m[c].astype(float)
    trained = [c for c, _ in N.TRAINING_COLUMNS if c in m.columns]
    return key_columns_first(m, ["model", "num_layers", "hidden_size", *trained, *measure_cols])


#: Share columns of models.csv; the page shows them in percent (SHARE_LABELS).
SHARE_COLUMNS = ("spectrum_adaptive_share_p0", "share_p0", "share_p2")
SHARE_LABELS = {
    "spectrum_adaptive_share_p0": "share p*=0 (%)",
    "share_p0": "share p*=0 (%)",
    "share_p2": "share p*=2 (%)",
}


def detail_model(study: Study) -> Analysis | None:
    """The study's largest model (most layers, then widest), whose spectra the report shows."""
    if not study.analyses:
        return None
    return max(study.analyses, key=lambda a: (a.spec.num_layers, a.spec.hidden_size))


def scale_page(
    study: Study,
    out_dir: str | Path,
    *,
    norm_scaling_layers: int | None = None,
    figure_formats: str | Sequence[str] | None = None,
    siblings: Sequence[tuple[str, str]] | None = None,
) -> str:
    """The page of a study (:func:`scale_html`), its figures drawn into ``out_dir``/figures
    (the folder being written: the ``tmp`` of ``study.to_dir(out, extra=...)``): the text for
    ``out_dir``/report.html, which ``io.files.write_report_page`` writes.

    Figures: growth against N and L with the fitted lines, both proxies per model, and the
    spectral decay and contribution-against-p figures of the largest model (files
    ``L{L}_N{N}_*``); with ``norm_scaling_layers``, also the norms against N at that depth.
    ``figure_formats``: the files of each figure (``"svg"`` by default; e.g. ``"png,pdf"``).
    ``siblings``: (label, relative href) of the pages beside it (``io.siblings.sibling_pages``
    of the final folder; ``out_dir`` is the write's temporary folder); else the benchmark's
    README.md when there is one.
    """
    with writing_formats(figure_formats):
        require_matplotlib()
        figs = study_figures(study, Path(out_dir) / "figures", norm_scaling_layers)
    return scale_html(study, out_dir, figs, siblings)


def write_study(
    study: Study,
    out_dir: str | Path,
    *,
    norm_scaling_layers: int | None = None,
    figure_formats: str | Sequence[str] | None = None,
    siblings: Sequence[tuple[str, str]] | None = None,
) -> Path:
    """Figures/ and report.html for a study in ``out_dir``: :func:`scale_page`'s text written
    by ``io.files.write_report_page`` (call it inside ``io.output_dir``, e.g.
    ``study.to_dir(out, extra=lambda tmp: write_study(study, tmp))``)."""
    text = scale_page(
        study,
        out_dir,
        norm_scaling_layers=norm_scaling_layers,
        figure_formats=figure_formats,
        siblings=siblings,
    )
    return write_report_page(out_dir, text)


def study_figures(study: Study, fig_dir: Path, norm_scaling_layers: int | None) -> list[Figure]:
    """The figures of :func:`scale_page` (in the formats set around it), drawn into
    ``fig_dir``."""
    figs = FS.study_figures(study, fig_dir)
    big = detail_model(study)
    if big is not None:
        L, N = big.spec.num_layers, big.spec.hidden_size
        figs += [
            FA.spectral_decay_figure(big, fig_dir, prefix=f"L{L}_N{N}_"),
            FA.contribution_figure(big, fig_dir, prefix=f"L{L}_N{N}_"),
        ]
        for f in figs[-2:]:
            f.title += f" of the largest model (L = {L}, N = {N})"
    if norm_scaling_layers is not None:
        nf = FS.norm_scaling_figure(study, fig_dir, num_layers=norm_scaling_layers)
        if nf is not None:
            figs.append(nf)
    return figs


#: Slopes and their SEs on the page: 3 significant digits each, so an SE is never printed
#: next to a slope rounded to "0.000".
SLOPE_COLUMNS = ("exponent", "exponent_se", "log10_per_unit", "log10_per_unit_se")
#: The files of a study folder its page links to (those that exist).
STUDY_FILES = ("models.csv", "growth.csv", "skipped.csv", "study.json", "manifest.json")


def growth_display(growth: pd.DataFrame) -> pd.DataFrame:
    """growth.csv for the page: a ``caveat`` column (fits with fewer than 2 residual degrees
    of freedom flagged, ``studies.scale.verdict.low_df_flag``) next to the key columns."""
    g = growth.copy()
    if len(g):
        g["caveat"] = [V.low_df_flag(r) for _, r in g.iterrows()]
    return key_columns_first(g, GROWTH_FIRST)


def scale_html(
    study: Study,
    out_dir: str | Path,
    figs: Sequence[Figure],
    siblings: Sequence[tuple[str, str]] | None = None,
) -> str:
    """The page of a study (templates/scale.html) whose figures are drawn, for
    ``out_dir``/report.html, linking ``siblings`` (else the benchmark's README.md)."""
    growth = growth_display(study.growth)
    if "fixed_value" in growth.columns and "fit" in growth.columns:
        fixed = [
            ("all" if f == "pooled" else (int(v) if v == v and v is not None else ""))
            for f, v in zip(growth["fit"], growth["fixed_value"], strict=True)
        ]
        growth["fixed_value"] = fixed
    readme = Path(out_dir).absolute().parent.parent / "README.md"
    if siblings is None:
        there = readme.is_file() and "benchmarks" in readme.parts
        siblings = [("README", "../../README.md")] if there else []
    return page(
        study.title,
        siblings=list(siblings),
        docs=("scale", "measures"),
        template="scale.html",
        a=answer_context(study),
        files=files_html(out_dir, STUDY_FILES),
        figures=[figure_html(f) for f in figs],
        link={n.split(".")[0]: file_link(out_dir, n) for n in ("models.csv", "growth.csv")},
        models=table(models_display(study), page_size=50, labels=SHARE_LABELS),
        growth=table(
            growth,
            page_size=50,
            formats=dict.fromkeys(SLOPE_COLUMNS, sig3),
            labels={"caveat": "caveat", "resid_df": "resid df"},
        ),
    )


def write_study_report(
    study: Study,
    out_dir: str | Path,
    figs: Sequence[Figure],
    siblings: Sequence[tuple[str, str]] | None = None,
) -> Path:
    """report.html for a study in ``out_dir`` (figures already written): :func:`scale_html`'s
    text written by ``io.files.write_report_page``."""
    return write_report_page(out_dir, scale_html(study, out_dir, figs, siblings))
