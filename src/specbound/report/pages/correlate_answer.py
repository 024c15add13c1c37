"""The opening of the ``specbound correlate`` page (templates/_correlate_answer.html): the
answer in SPEC 10's words, every word read off the folder's tables or decided in ``studies``.

The primary contrasts first (``studies.answer.primary_lead``, with the study's verdict of each
row when the study's folder sits beside it), then what the tool's own proxy does here
("undetermined here: not shown to predict the gap" when its tau interval includes 0) and its
rank, how far sample size alone goes, each measure's verdict (correlation.csv's ``verdict``),
which differences between measures are established (differences.csv's ``verdict``: "better" only
when the paired interval excludes 0), the rank-ceiling diagnosis and the zoo's counts. The page
around it: :mod:`.correlate`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ...studies import answer as answer_words
from ...studies.correlate.rules import BASELINES, better_word, verdict
from ..html import interval, render
from ..numbers import as_float, spec
from .compact import cell_text, sig_text

if TYPE_CHECKING:
    import pandas as pd

    from ...studies.correlate.result import Correlation

OWN = "spectrum_adaptive"


def _stat(row: dict[str, Any], st: str, name: str) -> str:
    v = as_float(row.get(st))
    if math.isnan(v):
        return f"{name} n/a"
    v = round(v, 2) + 0.0  # never "-0.00"
    return f"{name} {v:.2f} {interval(row.get(f'{st}_low'), row.get(f'{st}_high'))}"


def predicts(row: dict[str, Any], st: str = "kendall_tau") -> str:
    """SPEC 10's words for one statistic's interval (``studies.answer.predicts``)."""
    return answer_words.predicts(row.get(f"{st}_low"), row.get(f"{st}_high"))


def _verdict(row: dict[str, Any], axes: list[str]) -> str:
    v = row.get("verdict")
    if isinstance(v, str) and v:
        return v

    return verdict(row, axes)


def primary_rows(result: Correlation, study: pd.DataFrame | None = None) -> list[dict[str, str]]:
    """The primary contrasts (differences.csv family primary) as the page shows them: text
    cells, numbers formatted, the interval "[lo, hi]" or "no interval", ``verdict_stable``;
    with ``study`` (the study's rows of this folder, ``studies.answer.study_rows``) the
    study's verdict of each row and why it differs from this page's (``study_note``)."""
    d = result.differences
    if d is None or "family" not in d.columns:
        return []
    prim = d[d["family"] == "primary"].to_dict("records")
    theirs: dict[str, dict[str, Any]] = {}
    n_family = 0
    if study is not None:
        theirs = {str(r["contrast"]): r for r in study.to_dict("records")}
        n_family = int(study.attrs.get("n_family", 0))
    out = []
    for r in prim:
        row = {
            **{k: str(r[k]) for k in ("contrast", "measure", "versus", "statistic")},
            **{k: sig_text(r[k]) for k in ("delta", "p", "p_holm")},
            "interval": interval(r["low"], r["high"], 3),
            "verdict": str(r["verdict"]),
            "verdict_stable": cell_text(r.get("verdict_stable")),
            "evidence": str(r["evidence"]),
            "study_verdict": "",
            "study_p_holm": "",
            "study_note": "",
        }
        s_row = theirs.get(row["contrast"])
        if s_row is not None:
            row["study_verdict"] = str(s_row["verdict"])
            row["study_p_holm"] = sig_text(s_row.get("p_holm"))
            row["study_note"] = answer_words.verdict_note(
                row["verdict"],
                row["study_verdict"],
                str(s_row.get("independence", "") or ""),
                len(prim),
                n_family,
            )
        out.append(row)
    return out


def differences_sentences(result: Correlation, measure: str) -> list[str]:
    """differences.csv rows of ``measure`` in words: protocol v3's ``verdict`` column (or, for
    a table without it, "better" only when low > 0)."""
    d = result.differences
    if d is None or d.empty:
        return []
    out = []
    for r in d[d["measure"] == measure].to_dict("records"):
        lo, hi, delta = as_float(r["low"]), as_float(r["high"]), as_float(r["delta"])
        if math.isnan(delta):
            continue
        if isinstance(r.get("verdict"), str) and r["verdict"]:
            word = str(r["verdict"])
        else:
            word = better_word(lo, hi) if not (math.isnan(lo) or math.isnan(hi)) else "not shown"
        iv = interval(lo, hi, 3)
        out.append(f"vs {r['versus']} on {r['statistic']}: delta {sig_text(delta)} {iv}: {word}")
    return out


def lead_clause(said: list[str]) -> str:
    """What the paired differences (:func:`differences_sentences`) allow of a "best" measure:
    its lead is established only over the measures it is "better" than (SPEC 10); "" when it
    is better than every one compared."""
    open_ = [x.split(" on ", 1)[0][3:] for x in said if not x.endswith(": better")]
    if not said or len(open_) == len(said):
        return "; its lead over the others is not established"
    if open_:  # better than some, not all: the crown is not established
        return f"; its lead over {', '.join(open_)} is not established"
    return ""


def confound_sentence(result: Correlation, rows: dict[str, Any]) -> str:
    """The opening sentence: how far sample size alone goes, so no measure is read as a
    predictor on the strength of n."""
    if "sample_size_only" not in rows:
        return (
            "The training-set size n is the same for every model (or unknown), so sample size "
            "cannot explain the ranking; τ at fixed n is undefined and τ is the statistic."
        )
    ss = as_float(rows["sample_size_only"].get("kendall_tau"))
    weight = {
        k: as_float(r.get("kendall_tau"))
        for k, r in rows.items()
        if k not in BASELINES and not k.endswith("sqrt_n")
    }
    weight = {k: v for k, v in weight.items() if not math.isnan(v)}
    best = max(weight, key=lambda k: weight[k]) if weight else None
    text = f"Sample size alone (sample_size_only) ranks the gap with τ {spec(ss, '+.3g')}"
    if best is not None:
        text += (
            f"; the best measure of the weights or data, {best}, has τ {spec(weight[best], '+.3g')}"
        )
    return text + ": n varies, so read each measure beyond n (τ_n, within strata of equal n)."


def scope_sentence(result: Correlation) -> str:
    """What every verdict of a folder page is: this zoo alone (Holm over its own primary
    rows, SPEC 10 protocol v4); the study's verdict is the answer about several zoos."""
    n = len(primary_rows(result))
    return (
        f"this zoo alone (Holm over its own {n} primary rows); the study's verdict is the "
        "answer about several zoos"
    )


def _rank(rows: dict[str, Any], name: str, st: str = "kendall_tau") -> str:
    """``3rd of 14 measures by τ`` (ties share the better place); "" when undefined."""
    vals = {k: as_float(r.get(st)) for k, r in rows.items()}
    vals = {k: v for k, v in vals.items() if not math.isnan(v)}
    if name not in vals:
        return ""
    place = 1 + sum(1 for v in vals.values() if v > vals[name])
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(place if place < 20 else place % 10, "th")
    return f"{place}{suffix} of {len(vals)} measures by τ"


def own_lead(rows: dict[str, Any]) -> str | None:
    """The tool's own proxy in SPEC 10's words: its τ interval (:func:`predicts`), its rank
    among the measures and, with several n, τ at fixed n; None when it was not measured."""
    if OWN not in rows:
        return None
    r = rows[OWN]
    lead = f"{OWN} {predicts(r)} ({_stat(r, 'kendall_tau', 'τ')}"
    rank = _rank(rows, OWN)
    lead += f", {rank})" if rank else ")"
    if math.isnan(as_float(r.get("tau_fixed_n"))):
        return lead + "; τ at fixed n is n/a (one n)"
    lead += f"; at fixed n it {predicts(r, 'tau_fixed_n').replace(' here', '')} "
    return lead + f"({_stat(r, 'tau_fixed_n', 'τ_n')})"


def best_rows(result: Correlation, rows: dict[str, Any]) -> list[dict[str, str]]:
    """The measure with the largest Ψ and the one with the largest τ, each with its
    exploratory paired differences and what they establish (:func:`lead_clause`), and whether
    it holds sample size."""
    c = result.correlation
    out = []
    for st, label in (("psi", "granulated Kendall Ψ"), ("kendall_tau", "Kendall τ")):
        if st not in c.columns or not c[st].map(as_float).notna().any():
            continue
        best = str(c.loc[c[st].map(as_float).idxmax(), "measure"])
        said = [x for x in differences_sentences(result, best) if f" on {st}:" in x]
        text = f"{_stat(rows[best], st, label.split()[-1])}; the largest point value"
        if said:
            text += "; exploratory paired differences (BH q-values): " + "; ".join(said)
        text += lead_clause(said) + sample_size_clause(best)
        out.append({"label": label, "measure": best, "text": text})
    return out


def sample_size_clause(measure: str) -> str:
    """What a measure holding sample size adds to its rank ("" for the others)."""
    if measure == "sample_size_only":
        return "; it is sample size alone, not a property of the weights"
    if measure.endswith("sqrt_n"):
        return "; it contains sample size (a -1/2 log10 n term), so part of its rank is n's"
    return ""


def zoo_sentence(result: Correlation) -> str:
    """The zoo's counts: models used, failed and unconverged, configurations, the gap, the
    axes."""
    used, listed = len(result.models), result.n_listed
    failed = len(result.skipped) - result.n_unconverged
    conv = "kept" if result.include_unconverged else "excluded"
    return (
        f"{used:,} of {listed:,} models used ({failed:,} failed or had no metrics; "
        f"{result.n_unconverged:,} unconverged, {conv}); "
        f"{getattr(result, 'n_configurations', 0) or 'unknown'} configurations; gap = "
        + (
            "train accuracy − test accuracy"
            if result.gap == "accuracy"
            else "test loss − train loss"
        )
        + f"; axes: {', '.join(result.axes) or 'none'} (seed is a replicate unless named)."
    )


def answer_context(
    result: Correlation, study_href: str | None = None, study: pd.DataFrame | None = None
) -> dict[str, Any]:
    """What the opening says (templates/_correlate_answer.html): the primary contrasts first
    (``studies.answer.primary_lead``, the bold lead), with the study's verdict of each row when
    ``study`` (its rows of this folder) is given; then the tool's own proxy (its interval in
    SPEC 10's words and its rank among the measures), every measure's verdict, established
    differences, the rank ceiling, the zoo's counts."""
    rows = {str(r["measure"]): r for r in result.correlation.to_dict("records")}
    prim = primary_rows(result, study)
    rc = getattr(result, "rank_ceiling", None) or {}
    measures = [
        (
            name,
            _verdict(r, result.axes),
            f"{_stat(r, 'kendall_tau', 'τ')}; {_stat(r, 'psi', 'Ψ')}",
        )
        for name, r in rows.items()
    ]
    return {
        "scope": scope_sentence(result),
        "study_href": study_href,
        "confound": confound_sentence(result, rows),
        "lead": own_lead(rows),
        "primary_lead": answer_words.primary_lead(prim),
        "primary": prim,
        "study_shown": study is not None and bool(prim),
        "differ": sum(1 for r in prim if r["study_verdict"] and r["study_note"] != "same"),
        "missing": [str(m) for m in getattr(result, "missing", []) or []],
        "rank_ceiling": rc.get("statement"),
        "measures": measures,
        "best": best_rows(result, rows),
        "zoo": zoo_sentence(result),
        "unconverged": result.n_unconverged if not result.include_unconverged else 0,
    }


def answer_html(result: Correlation) -> str:
    """The opening alone (templates/_correlate_answer.html with :func:`answer_context`)."""
    return render("_correlate_answer.html", a=answer_context(result))
