"""The words of a study's answer, from its tables (SPEC 10 protocol v4): what the pages and the
terminal say, decided here so that ``report/`` only renders.

Every word here is read off a table specbound wrote: the ``verdict`` column of primary.csv /
differences.csv (the words of ``studies.protocol.verdicts.VERDICTS``) and the interval columns
of correlation.csv. Nothing is recomputed and no threshold other than the sign of an interval
end is applied:

- :func:`plain_answer`: the one sentence that opens the study page: against the norm-based
  proxy, and against the plain measures (parameter count, norms), in how many independent zoos
  the spectrum-adaptive proxy is better, worse, or not shown to differ. No contrast code, no
  statistic symbol, no adjustment name.
- :func:`comparison_tally`: the family's verdict counts per comparison, each naming the two
  measures compared (never "1 better, 1 worse" over different comparisons).
- :func:`study_rows`: the study's primary rows of one folder (the study folder's primary.csv,
  through the checked CSV reader), and :func:`verdict_note`: why a folder's own verdict differs
  from the study's (each adjusts over its own family).
- :func:`predicts`: a statistic's interval in SPEC 10's words ("predicts the gap" only when the
  interval lies above 0).
- :func:`primary_lead`: a folder's primary rows in one sentence, the opening of its page.
- :func:`verdict_rule`: the primary contrasts and when a row is better or worse, in words, from
  the protocol's own constants (``studies.protocol.verdicts``: alpha, the Monte Carlo margin,
  the bootstrap seeds).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..io.readback import Column, read_table
from . import readback as R
from .protocol.verdicts import ALPHA, BETTER, BORDERLINE_MC_ERRORS, SEEDS, VERDICTS, WORSE

if TYPE_CHECKING:
    import pandas as pd

OWN = "spectrum_adaptive"
NORM = "norm_based"
#: Each measure of a primary contrast in plain words.
MEASURE_WORDS = {
    "spectrum_adaptive": "the spectrum-adaptive proxy",
    "norm_based": "the norm-based proxy",
    "num_parameters": "parameter count",
    "log_spectral_product": "the product of spectral norms",
    "distance_from_init": "the distance from initialization",
    "log_frobenius_product": "the product of Frobenius norms",
    "frobenius_sum": "the sum of Frobenius norms",
    "sample_size_only": "the training-set size alone",
    "spectrum_adaptive_modal": "itself with p fixed per architecture (its modal form)",
}
#: The modal form of protocol v5 (contrast D0): the proxy against itself, not a plain measure.
MODAL = "spectrum_adaptive_modal"
#: The words of a statistic.
STATISTIC_WORDS = {
    "tau_fixed_n": "τ_n (at equal training-set size)",
    "tau_arch": "τ_arch (at equal depth, width and training-set size)",
    "kendall_tau": "τ",
    "psi": "Ψ",
}
#: The verdicts that do not decide a comparison.
UNDECIDED = tuple(v for v in VERDICTS if v not in (BETTER, WORSE))


def words(measure: str) -> str:
    """A measure in plain words (``MEASURE_WORDS``), else its name."""
    return MEASURE_WORDS.get(str(measure), str(measure))


def _zoos(rows: pd.DataFrame, verdict: str) -> int:
    return int(rows.loc[rows["verdict"].astype(str) == verdict, "folder"].nunique())


def family_rows(primary: pd.DataFrame) -> pd.DataFrame:
    """The rows of the study's family: ``independence`` is not ``secondary`` (a table without
    the column, protocol v3, is all family)."""
    if "independence" not in primary.columns:
        return primary
    return primary[primary["independence"].astype(str) != "secondary"]


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _join(items: list[str]) -> str:
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def plain_answer(primary: pd.DataFrame) -> str:
    """The study's answer in one plain sentence, from its family rows (primary.csv): in how many
    independent zoos the spectrum-adaptive proxy ranked the gap better / worse than its own
    modal form (adaptivity zoos, contrast D0), than the norm-based proxy, and than the plain
    measures of its other contrasts; a zoo counts as better (worse) when one of its rows of that
    comparison says so, the rest as "no clear difference". "" without family rows."""
    fam = family_rows(primary)
    if not len(fam):
        return ""
    n = int(fam["folder"].nunique())
    tasks = int(fam["task"].nunique()) if "task" in fam.columns else 0
    own = fam[fam["measure"].astype(str) == OWN]
    vs_norm = own[own["versus"].astype(str) == NORM]
    vs_modal = own[own["versus"].astype(str) == MODAL]
    vs_plain = own[~own["versus"].astype(str).isin([NORM, MODAL])]
    parts = []
    for rows, against in (
        (vs_modal, words(MODAL)),
        (vs_norm, words(NORM)),
        (vs_plain, "plain measures (" + _join(
            [words(v) for v in dict.fromkeys(vs_plain["versus"].astype(str))]) + ")"),
    ):  # fmt: skip
        if not len(rows):
            continue
        k = int(rows["folder"].nunique())
        b, w = _zoos(rows, BETTER), _zoos(rows, WORSE)
        rest = k - len(set(rows.loc[rows["verdict"].isin([BETTER, WORSE]), "folder"]))
        parts.append(
            f"better than {against} in {b} and worse in {w} "
            f"(no clear difference in {'all ' if rest == k and k > 1 else ''}{rest}"
            + (f" of {k}" if k != n else "")
            + ")"
        )
    where = _count(n, "independent zoo") + (f" ({_count(tasks, 'task')})" if tasks else "")
    return (
        f"On {where}, comparing models trained on the same number of examples, the "
        f"spectrum-adaptive proxy ranked the generalization gap {', and '.join(parts)}."
    )


def comparison_tally(primary: pd.DataFrame) -> list[str]:
    """The family's verdict counts, one line per comparison (measure − versus on its
    statistic, in the table's order), naming the two measures compared."""
    fam = family_rows(primary)
    out = []
    keys = ["measure", "versus", "statistic"]
    for (m, v, st), rows in fam.groupby(keys, sort=False):
        counts = rows["verdict"].astype(str).value_counts()
        said = [f"{int(counts[w])} {w}" for w in VERDICTS if w in counts]
        said += [f"{int(c)} {w}" for w, c in counts.items() if w not in VERDICTS]
        codes = "/".join(dict.fromkeys(rows["contrast"].astype(str)))
        out.append(
            f"{words(m)} against {words(v)} ({codes}, {STATISTIC_WORDS.get(str(st), st)}; "
            f"{_count(int(rows['folder'].nunique()), 'zoo')}): {', '.join(said)}"
        )
    return out


#: The columns of a study's primary.csv that a folder page shows (checked on reading).
STUDY_COLUMNS = (
    Column("folder", "text"),
    Column("contrast", "text"),
    Column("verdict", "text", choices=VERDICTS),
    Column("p_holm", "real", empty=True, low=0.0, high=1.0),
    Column("independence", "text", required=False, empty=True),
    Column("overlaps", "text", required=False, empty=True),
)


def study_rows(study_dir: str | Path, folder: str) -> pd.DataFrame | None:
    """The study's primary rows of the folder named ``folder`` (last path component), read from
    ``study_dir``/primary.csv through the checked reader (``io.readback.read_table``); None when
    there is no primary.csv or no row of that folder. A tampered file raises ReadbackError.
    ``attrs["n_family"]``: how many rows the study's Holm family holds."""
    path = Path(study_dir) / "primary.csv"
    if not path.is_file():
        return None
    rows = read_table(path, STUDY_COLUMNS, what="primary.csv")
    mine = rows[[Path(str(f)).name == folder for f in rows["folder"]]].copy()
    mine.attrs["n_family"] = len(family_rows(rows))
    return mine if len(mine) else None


def verdict_note(own: str, study: str, independence: str, n_own: int, n_family: int) -> str:
    """Why a folder page's verdict (``own``, Holm over its own ``n_own`` primary rows) and the
    study's (``study``) are what they are; "same" when they agree."""
    if own == study:
        return "same"
    if independence == "secondary":
        return "re-checked under every bootstrap seed; not in the study's family"
    return f"Holm over the study's {n_family} rows, not this page's {n_own}"


def predicts(low: Any, high: Any) -> str:
    """SPEC 10's words for a statistic's interval: "predicts the gap" only when it lies above 0,
    "ranks the gap the wrong way" when below 0, otherwise undetermined (an interval that holds
    0 shows neither that it predicts nor that it does not)."""
    try:
        lo, hi = float(low), float(high)
    except (TypeError, ValueError):
        lo = hi = math.nan
    if math.isnan(lo) or math.isnan(hi):
        return "is undetermined (no interval)"
    if lo > 0:
        return "predicts the gap here"
    if hi < 0:
        return "ranks the gap the wrong way here"
    return "is undetermined here: not shown to predict the gap, its interval holds 0"


def primary_lead(rows: list[dict[str, Any]]) -> str:
    """A folder's primary rows in one sentence (each: ``measure``, ``versus``, ``statistic``,
    ``verdict``): the opening of its page, before any single measure's statistic."""
    if not rows:
        return ""
    said = [f"{words(r['measure'])} against {words(r['versus'])}: {r['verdict']}" for r in rows]
    st = {str(r["statistic"]) for r in rows}
    on = STATISTIC_WORDS.get(st.pop(), "") if len(st) == 1 else ""
    return "Primary contrasts" + (f" on {on}" if on else "") + ": " + "; ".join(said)


def secondary_lines(primary: pd.DataFrame) -> list[str]:
    """Every decided row (better or worse) of the secondary folders, favourable and adverse
    alike, one line per verdict word: ``better: FOLDER (A against B), ...``; none when no
    secondary row is decided. Secondary rows are shown, never counted."""
    if "independence" not in primary.columns:
        return []
    sec = primary[primary["independence"].astype(str) == "secondary"]
    out = []
    for word in (BETTER, WORSE):
        rows = sec[sec["verdict"].astype(str) == word]
        said = [
            f"{Path(str(r['folder'])).name} ({words(r['measure'])} against {words(r['versus'])})"
            for r in rows.to_dict("records")
        ]
        if said:
            out.append(f"{word} in {len(said)}: {'; '.join(said)}")
    return out


#: The statistics of :func:`proxy_statistics`, each with its interval columns.
PROXY_STATISTICS = ("kendall_tau", "tau_fixed_n", "tau_arch")


def proxy_statistics(folders: list[str], measures: tuple[str, ...] = (OWN, NORM)) -> pd.DataFrame:
    """Each measure's own rank statistics in each folder (correlation.csv, read through the
    checked reader): one row per (measure, folder) with ``kendall_tau``, ``tau_fixed_n`` and
    ``tau_arch`` and their ``_low`` / ``_high`` (NaN when the folder has none)."""
    import pandas as pd

    rows = []
    for m in measures:
        for f in folders:
            meta = R.read_correlate_json(f)
            c = R.read_correlation_csv(f, meta)
            hit = c[c["measure"] == m].to_dict("records")
            r = hit[0] if hit else {}
            row: dict[str, Any] = {"measure": m, "folder": Path(str(f)).name}
            for st in PROXY_STATISTICS:
                for suffix in ("", "_low", "_high"):
                    row[st + suffix] = r.get(st + suffix, math.nan)
            rows.append(row)
    return pd.DataFrame(rows)


def verdict_rule() -> str:
    """The primary contrasts and the rule of their verdict words (protocol v4), with the
    protocol's own numbers (``verdicts.ALPHA``, ``BORDERLINE_MC_ERRORS``, ``SEEDS``)."""
    return (
        "Primary contrasts P1 spectrum_adaptive − norm_based, P2 spectrum_adaptive − "
        "num_parameters, P3 norm_based − num_parameters (or A1-A3 on τ_arch for a zoo designed "
        f"for it). A row is better or worse only when its p_holm is below {ALPHA:g}, its 95% "
        f"interval excludes 0, p_holm is not within {BORDERLINE_MC_ERRORS:g} Monte Carlo errors "
        f"of {ALPHA:g} and the verdict is the same under {SEEDS} bootstrap seeds "
        "(verdict_stable)."
    )
