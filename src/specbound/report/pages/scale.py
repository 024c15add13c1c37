"""The report page of a scaling study (``scale``, ``reproduce``): the answer first, as the
verdict sentences of ``studies.scale.verdict`` (two-point caveats, residual degrees of freedom,
the rank ceiling, dominance, measures without a fit), then figures, then the tables."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...naming import display_name, display_names, natural_key
from ..html import (
    escape,
    figure_html,
    file_link,
    files_html,
    key_columns_first,
    page,
    scrub_paths,
    sig3,
    table,
)
from .analysis import PROXY_CAVEAT

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


def _defined(column: Any) -> Any:
    """The finite values of a column (an empty cell is a value beyond float64: undefined)."""
    import pandas as pd

    v = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
    return v[np.isfinite(v)]


def _proxy_col(models: pd.DataFrame, proxy: str) -> str | None:
    for c in (f"{proxy}_log10", proxy):
        if c in models.columns:
            return c
    return None


def share_text(share: float) -> str:
    """The one format of a share p* = 0 on every page: a percentage."""
    return f"{100 * share:.0f}%"


def study_answer_html(study: Study) -> str:
    """The opening: the verdict sentences (answer first), the caveat, then the ranges."""
    from ...studies.scale import notes as N
    from ...studies.scale import verdict as V

    m, g = study.models, study.growth
    lines = ['<div class="answer">']
    first = True
    if len(m) and not g.empty:
        for axis, sym, osym in (("hidden_size", "N", "L"), ("num_layers", "L", "N")):
            v = V.growth_verdict(g, axis)
            said = [] if v is None else [v.sentence, *v.interaction]
            c = V.ceiling_verdict(m, g, axis)
            said += [c] if c else []
            if not said:
                continue
            text = escape(" ".join(said))
            lines.append(
                f"<p{' class=lead' if first else ''}><b>Against {sym}</b> (at fixed {osym}): "
                + (f"<b>{text}</b>" if first else text)
                + "</p>"
            )
            first = False
    if len(m):
        low = V.low_df_note(g) if not g.empty else None
        for line in (N.ceiling_count(m), N.dominance_note(m), low, *N.measure_notes(m, g)):
            if line:
                lines.append(f"<p>{escape(line)}</p>")
    if study.growth.empty:
        lines.append("<p>No growth fit: no two models differ in only one of N and L.</p>")
    lines.append(f"<p>{escape(PROXY_CAVEAT)}</p><p>{len(m):,} models analyzed.")
    for proxy, label in (("spectrum_adaptive", "spectrum-adaptive"), ("norm_based", "norm-based")):
        col = _proxy_col(m, proxy)
        vals = _defined(m[col]) if col is not None else np.array([])
        if vals.size:
            lines.append(
                f" log10 B of the {label} proxy ranges from {vals.min():.3f} to {vals.max():.3f}"
                + (
                    f" ({len(m) - vals.size} models beyond float64: undefined)."
                    if vals.size < len(m)
                    else "."
                )
            )
        elif col is not None and len(m):
            lines.append(f" The {label} proxy is beyond float64 (undefined) for every model.")
    lines.append("</p>")
    share_col = next(
        (c for c in ("spectrum_adaptive_share_p0", "share_p0") if c in m.columns), None
    )
    s = _defined(m[share_col]) if share_col is not None else np.array([])
    if s.size:
        if float(np.nanmin(s)) == 1.0:
            lines.append(
                "<p><b>Which p they chose:</b> every matrix of every model picked p* = 0 "
                f"(share p*=0: {share_text(1.0)} in every model), so the spectrum-adaptive "
                "proxy is the rank ceiling: it depends on the ranks only (sum of sqrt(rank x "
                "N)), not on the trained singular values.</p>"
            )
        else:
            lines.append(
                f"<p><b>Which p they chose:</b> share p*=0 from {share_text(np.nanmin(s))} to "
                f"{share_text(np.nanmax(s))} of the matrices per model (mean "
                f"{share_text(float(np.nanmean(s)))}); p* = 0 charges a matrix by its rank "
                "only.</p>"
            )
    defined = [
        a
        for a in study.analyses
        if np.isfinite(np.max(a.details.log_contribution, initial=-np.inf))
    ]
    if study.analyses and not defined:
        lines.append(
            "<p><b>Which matrices dominate:</b> undefined (every model's contributions are "
            "beyond float64).</p>"
        )
    if defined:
        sa_share: dict[str, float] = dict.fromkeys(MATRIX_TYPES, 0.0)
        for a in defined:
            c = np.exp(a.details.log_contribution - np.max(a.details.log_contribution))
            tot = float(np.nansum(c)) or 1.0
            for t, name in enumerate(MATRIX_TYPES):
                sa_share[name] += float(np.nansum(c[a.spectra.matrix_type == t])) / tot
        n = len(defined)
        ranked = sorted(sa_share.items(), key=lambda kv: -kv[1])
        lines.append(
            "<p><b>Which matrices dominate</b> (mean share of the summed "
            "contributions): " + escape(", ".join(f"{k} {v / n:.0%}" for k, v in ranked)) + ".</p>"
        )
    if study.missing:
        lines.append(
            f'<p class="note">Missing ({len(study.missing)}), not analyzed: '
            + escape(", ".join(study.missing))
            + "</p>"
        )
    skipped = getattr(study, "skipped", [])
    if skipped:
        lines.append(
            f'<p class="note">Skipped ({len(skipped)}), could not be analyzed '
            "(skipped.csv): "
            + escape(scrub_paths("; ".join(f"{display_name(m)}: {r}" for m, r in skipped)))
            + "</p>"
        )
    lines.append("</div>")
    return "".join(lines)


def models_display(study: Study) -> pd.DataFrame:
    """models.csv for the page: names without their shared prefix, natural order, key columns
    (name, L, N, the measures) first; measures undefined on every model dropped."""
    from ...measures import measure_names

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
    return key_columns_first(m, ["model", "num_layers", "hidden_size", *measure_cols])


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


def write_study(
    study: Study,
    out_dir: str | Path,
    *,
    norm_scaling_layers: int | None = None,
    figure_formats: str | Sequence[str] | None = None,
) -> Path:
    """Write figures/ and report.html for a study into ``out_dir`` (call it inside
    ``io.output_dir``, e.g. ``study.to_dir(out, extra=lambda tmp: write_study(study, tmp))``).

    Figures: growth against N and L with the fitted lines, both proxies per model, and the
    spectral decay and contribution-against-p figures of the largest model (files
    ``L{L}_N{N}_*``); with ``norm_scaling_layers``, also the norms against N at that depth.
    ``figure_formats``: the files of each figure (``"svg"`` by default; e.g. ``"png,pdf"``).
    """
    from ..figures.style import require_matplotlib, writing_formats

    with writing_formats(figure_formats):
        require_matplotlib()
        return _write_study(study, Path(out_dir), norm_scaling_layers)


def _write_study(study: Study, out_dir: Path, norm_scaling_layers: int | None) -> Path:
    """The figures of :func:`write_study` (in the formats set around it), then the page."""
    from ..figures import analysis as FA
    from ..figures import scale as FS

    fig_dir = out_dir / "figures"
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
    return write_study_report(study, out_dir, figs)


#: Slopes and their SEs on the page: 3 significant digits each, so an SE is never printed
#: next to a slope rounded to "0.000".
SLOPE_COLUMNS = ("exponent", "exponent_se", "log10_per_unit", "log10_per_unit_se")
#: The files of a study folder its page links to (those that exist).
STUDY_FILES = ("models.csv", "growth.csv", "skipped.csv", "study.json", "manifest.json")


def growth_display(growth: pd.DataFrame) -> pd.DataFrame:
    """growth.csv for the page: a ``caveat`` column (fits with fewer than 2 residual degrees
    of freedom flagged, ``studies.scale.verdict.low_df_flag``) next to the key columns."""
    from ...studies.scale import verdict as V

    g = growth.copy()
    if len(g):
        g["caveat"] = [V.low_df_flag(r) for _, r in g.iterrows()]
    return key_columns_first(g, GROWTH_FIRST)


def write_study_report(study: Study, out_dir: str | Path, figs: Sequence[Figure]) -> Path:
    """Write report.html for a study into ``out_dir`` (figures already written)."""
    growth = growth_display(study.growth)
    if "fixed_value" in growth.columns and "fit" in growth.columns:
        fixed = [
            ("all" if f == "pooled" else (int(v) if v == v and v is not None else ""))
            for f, v in zip(growth["fit"], growth["fixed_value"], strict=True)
        ]
        growth["fixed_value"] = fixed
    sections = [
        study_answer_html(study) + files_html(out_dir, STUDY_FILES),
        "<h2>Figures</h2>" + "".join(figure_html(f) for f in figs),
        f"<h2>Models ({file_link(out_dir, 'models.csv')})</h2>"
        + table(models_display(study), page_size=50, labels=SHARE_LABELS),
        f"<h2>Growth fits ({file_link(out_dir, 'growth.csv')})</h2>"
        '<p class="note">exponent: slope of log10 of the measure (B for the bounds) on log10 of '
        "the axis; log10 per unit: slope of log10 of the measure on the axis value. per_fixed: "
        "one fit per value of the other axis; "
        "pooled: common slope, one intercept per value of the other axis. Standard errors: OLS "
        "(undefined when there are no residual degrees of freedom: resid df 0, e.g. a line "
        "through two points). Two slopes are called different only when they differ by more "
        "than max(2, t_0.975(df)) combined standard errors; never without residual degrees of "
        "freedom. Slopes and SEs: 3 significant digits. caveat: a fit with fewer than 2 "
        "residual degrees of freedom (too few points to check its line; at df 1 its SE rests "
        "on one residual, at df 0 there is none).</p>"
        + table(
            growth,
            page_size=50,
            formats=dict.fromkeys(SLOPE_COLUMNS, sig3),
            labels={"caveat": "caveat", "resid_df": "resid df"},
        ),
    ]
    path = Path(out_dir) / "report.html"
    path.write_text(page(study.title, sections, docs=("scale", "measures")), encoding="utf-8")
    return path
