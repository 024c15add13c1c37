"""Print the markdown tables of README.md from results/<task>/ (correlate output) and zoos/.

Usage:
    python benchmarks/generalization/tables.py              # the committed tables as they are
    python benchmarks/generalization/tables.py --recompute  # protocol v2 from models.csv
    python benchmarks/generalization/tables.py --check README.md [../../README.md ...]
        # exit 1 unless every measure row of README.md's tables is a row printed here, every
        # claim of claims.csv (ids unique) has its committed row with the verdict it asserts,
        # every tau_arch equals the mean of its per-cell tau-b recomputed here, every verdict
        # sentence of the given texts cites a claim ([C1]) whose verdict it states (negations
        # read as such) and every claim is cited; exit 2 without a text

Reads only; writes nothing. A results folder written by protocol v2 (correlation.csv with
``kendall_tau_low``, differences.csv) is printed as v2 tables: tau, Psi, tau_fixed_n and
psi_fixed_n with their intervals, each psi_i with its groups and pairs, the per-axis sign-errors
with their pairs, the verdict, and the paired differences against the baselines. An older
(protocol v1) folder is printed as it was. ``--recompute`` evaluates protocol v2 on the
committed models.csv (no model is analyzed again: the measures are read from the file), with
the axes of correlate.json less ``seed`` (seeds are replicates).
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


def f(x: float | None, nd: int = 2) -> str:
    """``+0.12``; a value that would round to 0.00 (|x| < 0.005, not 0) keeps 3 significant
    digits, so an endpoint near 0 never reads as 0 (or as the wrong side of it)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if x != 0 and abs(x) < 0.5 * 10**-nd:
        return f"{x:+.3g}"
    return f"{x:+.{nd}f}"


def pv(x: float | None) -> str:
    """A p-value or adjusted figure: 3 significant digits."""
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3g}"


def iv(r: dict, stat: str) -> str:
    """``point [low, high]`` of a statistic."""
    if pd.isna(r.get(stat)):
        return "undefined"
    return f"{f(r[stat])} [{f(r.get(f'{stat}_low'))}, {f(r.get(f'{stat}_high'))}]"


def zoo_of(folder: Path) -> str:
    """The zoo a results folder was computed on: its correlate.json's manifest folder (e.g.
    results/digits-v2-data/ is on zoos/digits-v2), else the folder name up to "-include"."""
    meta = json.loads((folder / "correlate.json").read_text())
    zoos = meta.get("zoos") or []
    if len(zoos) == 1 and (HERE / "zoos" / zoos[0]).is_dir():
        return str(zoos[0])
    manifest = Path(str(meta.get("manifest", "")))
    if manifest.name == "zoo.csv" and (HERE / "zoos" / manifest.parent.name).is_dir():
        return manifest.parent.name
    return folder.name.split("-include")[0]


def zoo_summary(base: str) -> str:
    z = pd.read_csv(HERE / "zoos" / base / "zoo.csv")
    meta = json.loads((HERE / "zoos" / base / "zoo.json").read_text())
    conv = z[z["converged"]]
    gap = conv["train_acc"] - conv["test_acc"]
    return (
        f"{len(z)} of {meta['num_models']} grid models trained, {len(conv)} converged "
        f"(train CE <= {meta['target_loss']}); gap (train - test accuracy) of the converged: "
        f"min {gap.min():.3f}, median {gap.median():.3f}, max {gap.max():.3f}; "
        f"training wall time {z['wall_s'].sum() / 60:.1f} min summed over models"
    )


def table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def correlation_table_v1(c: pd.DataFrame) -> str:
    psi_cols = [k for k in c.columns if k.startswith("psi_") and k not in ("psi_low", "psi_high")]
    head = [
        "measure",
        "n",
        "tau [95%]",
        "Psi [95%]",
        *[k.removeprefix("psi_") for k in psi_cols],
        "CMI (S)",
        "sign-err",
        "robust",
    ]
    rows = []
    for r in c.to_dict("records"):
        rows.append(
            [
                f"`{r['measure']}`",
                str(r["n_models"]),
                f"{f(r['kendall_tau'])} [{f(r['tau_low'])}, {f(r['tau_high'])}]",
                f"{f(r['psi'])} [{f(r['psi_low'])}, {f(r['psi_high'])}]",
                *[f(r[k]) for k in psi_cols],
                f"{r['cmi']:.3f} ({r['cmi_axes'] if isinstance(r['cmi_axes'], str) else '-'})"
                if not pd.isna(r["cmi"])
                else "",
                f"{r['sign_error']:.2f}" if not pd.isna(r["sign_error"]) else "",
                (
                    f"{r['sign_error_robust']:.2f} ({r['sign_error_robust_axis']})"
                    if not pd.isna(r["sign_error_robust"])
                    else ""
                ),
            ]
        )
    return table(head, rows)


def correlation_tables_v2(c: pd.DataFrame, axes: list[str]) -> str:
    """Three tables: rank statistics, psi_i with evidence, sign-errors with pairs + verdict."""
    rank = [
        [
            f"`{r['measure']}`",
            f"{r['n_models']} ({r['n_configurations']})",
            iv(r, "kendall_tau"),
            iv(r, "psi"),
            iv(r, "tau_fixed_n"),
            iv(r, "psi_fixed_n"),
            f"{r['cmi']:.3f} ({r['cmi_axes']})" if not pd.isna(r["cmi"]) else "undefined",
        ]
        for r in c.to_dict("records")
    ]
    out = [
        table(
            ["measure", "models (configs)", "tau", "Psi", "tau_n", "Psi_n", "CMI (S)"],
            rank,
        )
    ]
    psi_rows = [
        [f"`{r['measure']}`"]
        + [
            f"{f(r[f'psi_{a}'])} ({int(r[f'psi_{a}_groups'])} g, {int(r[f'psi_{a}_pairs'])} p)"
            for a in axes
        ]
        for r in c.to_dict("records")
    ]
    out.append(table(["measure", *[f"psi_{a} (groups, pairs)" for a in axes]], psi_rows))
    sign_rows = []
    for r in c.to_dict("records"):
        cells = [f"{iv(r, f'sign_error_{a}')} ({int(r[f'sign_error_{a}_pairs'])} p)" for a in axes]
        robust = (
            f"{r['sign_error_robust']:.2f} ({r['sign_error_robust_axis']})"
            if not pd.isna(r["sign_error_robust"])
            else str(r["sign_error_robust_axis"])
        )
        sign_rows.append([f"`{r['measure']}`", *cells, robust, str(r["verdict"])])
    out.append(
        table(
            ["measure", *[f"sign-err {a} [95%] (pairs)" for a in axes], "robust", "verdict"],
            sign_rows,
        )
    )
    return "\n\n".join(out)


def primary_table(d: pd.DataFrame) -> str:
    """The primary rows (P1-P3) of one folder: delta, p, p_holm over the folder, verdict."""
    rows = [
        [
            str(r["contrast"]),
            f"`{r['measure']}` − `{r['versus']}`",
            str(r["statistic"]),
            f"{f(r['delta'])} [{f(r['low'])}, {f(r['high'])}]",
            pv(r["p"]),
            pv(r["p_holm"]),
            str(r["verdict"]),
        ]
        for r in d[d["family"] == "primary"].to_dict("records")
    ]
    return table(
        ["contrast", "difference", "statistic", "delta [95%]", "p", "p_holm", "verdict"], rows
    )


def study_table(p: pd.DataFrame) -> str:
    """The study's primary table: every primary row (P1-P3 or A1-A3) of every folder; Holm over
    the rows of the independent folders (``family``) only, a ``secondary`` folder's row with its
    own folder's p_holm and verdict and the family folder it shares models with (protocol v4)."""
    v4 = "independence" in p.columns

    def independence(r: dict) -> str:
        if r.get("independence") != "secondary":
            return "family"
        return f"secondary ({Path(str(r['overlaps'])).name}: {int(r['shared_models'])} shared)"

    rows = [
        [
            str(r["contrast"]),
            f"`{Path(str(r['folder'])).name}`",
            str(r["role"]),
            *([independence(r)] if v4 else []),
            f"{f(r['delta'])} [{f(r['low'])}, {f(r['high'])}]",
            pv(r["p"]),
            pv(r["p_holm"]),
            str(r["verdict"]),
            *(
                [str(r["verdict_stable"]) if isinstance(r["verdict_stable"], str) else ""]
                if v4
                else []
            ),
            "" if not isinstance(r["replicated"], str) else r["replicated"],
        ]
        for r in p.to_dict("records")
    ]
    return table(
        [
            "contrast",
            "folder",
            "role",
            *(["independence"] if v4 else []),
            "delta [95%]",
            "p",
            "p_holm (study)",
            "verdict",
            *(["stable (5 seeds)"] if v4 else []),
            "replicated",
        ],
        rows,
    )


def differences_table(d: pd.DataFrame, statistic: str) -> str:
    """Paired differences of one statistic: delta [low, high] and whether it is shown
    (protocol v3 folders: the exploratory rows with q_bh and their verdict)."""
    sub = d[d["statistic"] == statistic]
    if "family" in sub.columns:
        sub = sub[sub["family"] == "exploratory"]
        rows3 = [
            [
                f"`{r['measure']}`",
                f"`{r['versus']}`",
                f"{f(r['delta'])} [{f(r['low'])}, {f(r['high'])}]",
                pv(r["q_bh"]),
                str(r["verdict"]),
            ]
            for r in sub.to_dict("records")
            if not pd.isna(r["delta"])
        ]
        return table(
            ["measure", "versus", f"delta {statistic} [95%]", "q_bh", "verdict (exploratory)"],
            rows3,
        )
    rows = []
    for r in sub.to_dict("records"):
        if pd.isna(r["delta"]):
            continue
        shown = (
            str(r["verdict"])
            if "verdict" in r and isinstance(r["verdict"], str)
            else "better"
            if r["low"] > 0
            else "worse"
            if r["high"] < 0
            else "not shown"
        )
        rows.append(
            [
                f"`{r['measure']}`",
                f"`{r['versus']}`",
                f"{f(r['delta'])} [{f(r['low'])}, {f(r['high'])}]",
                shown,
            ]
        )
    return table(["measure", "versus", f"delta {statistic} [95%]", "difference"], rows)


def recompute(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, list[str], dict]:
    """Protocol v2 on the committed models.csv (axes of correlate.json less seed)."""
    from specbound.studies.correlate import ceiling
    from specbound.studies.correlate import table as T

    meta = json.loads((folder / "correlate.json").read_text())
    models = pd.read_csv(folder / "models.csv")
    axes = [a for a in meta["axes"] if a != "seed"]
    tabs = T.correlation_study(models, meta["measures"], axes, bootstrap=meta["bootstrap"])
    return tabs.correlation, tabs.differences, axes, ceiling.rank_ceiling(models)


def measure_names() -> set[str]:
    """Every measure of every committed correlation.csv, and the primary contrasts' names
    (the first cell of a primary row)."""
    names: set[str] = {"P1", "P2", "P3", "A1", "A2", "A3"}
    for c in (HERE / "results").glob("*/correlation.csv"):
        names |= set(pd.read_csv(c)["measure"])
    return names


def unbacked_rows(readme: str, printed: str) -> list[str]:
    """The table rows of ``readme`` that name a measure in their first cell (``| `name` |``) and
    are not, character for character, a row of ``printed`` (this script's output)."""
    rows = set(printed.splitlines())
    names = measure_names()
    out = []
    for line in readme.splitlines():
        cells = line.split("|")
        if len(cells) > 2 and cells[1].strip().strip("`") in names and line not in rows:
            out.append(line)
    return out


# --- claims as data ---------------------------------------------------------------------------

CLAIMS = HERE / "claims.csv"
CLAIM_COLUMNS = ["claim", "folder", "measure", "versus", "statistic", "verdict"]
#: A sentence holding one of these words states a verdict: it must cite a claim ([C1]).
VERDICT_WORDS = re.compile(
    r"\b(better|worse|beats?|outperforms?|predicts?|replicated|borderline|undetermined|"
    r"not shown|insufficient evidence|not comparable)\b",
    re.IGNORECASE,
)
TAG = re.compile(r"\[(C\d+)\]")
#: The verdicts a sentence can assert for a claim, each with the words that say it (tried after
#: the negations below are taken out of the sentence).
SAYS = {
    "better": r"\b(better|beats?|outperforms?)\b",
    "worse": r"\bworse\b",
    "undetermined": r"\bundetermined\b",
    "borderline": r"\bborderline\b",
    "insufficient evidence": r"\binsufficient evidence\b",
    "not comparable": r"\bnot comparable\b",
}
#: A negated comparison ("is not shown to be worse than", "no better than", "never shown to
#: beat", "not shown to differ") or a bare "not shown": it asserts that no verdict was reached,
#: so it fits a claim of any verdict but "better" and "worse".
NEGATED = re.compile(
    r"\b(?:not|never|no)\s+(?:(?:shown|found)\s+(?:to\s+(?:be\s+)?)?)?"
    r"(?:(?:significantly|detectably|reliably)\s+)?"
    r"(?:better|worse|beats?|outperforms?|differ(?:ent)?)\b|\bnot shown\b",
    re.IGNORECASE,
)
#: What a negation asserts (``stated`` returns it as one of the asserted words).
NO_VERDICT = "no verdict"


def stated(text: str) -> set[str]:
    """The verdicts a piece of a sentence asserts: :data:`NO_VERDICT` for each negation (see
    :data:`NEGATED`), then every verdict of :data:`SAYS` whose words remain once the negations
    and "not comparable" are taken out ("worse" inside "is not shown to be worse" is no
    assertion of "worse")."""
    out = set()
    rest = text
    m = re.search(SAYS["not comparable"], rest, re.IGNORECASE)
    if m:
        out.add("not comparable")
        rest = re.sub(SAYS["not comparable"], " ", rest, flags=re.IGNORECASE)
    if NEGATED.search(rest):
        out.add(NO_VERDICT)
        rest = NEGATED.sub(" ", rest)
    for word, pattern in SAYS.items():
        if word != "not comparable" and re.search(pattern, rest, re.IGNORECASE):
            out.add(word)
    return out


def fits(verdict: str, asserted: set[str]) -> bool:
    """True when every assertion of a sentence piece fits the claim's ``verdict`` (a negation
    fits every verdict but "better" and "worse"); an empty set fits nothing."""
    if not asserted:
        return False
    return all(
        (verdict not in ("better", "worse")) if a == NO_VERDICT else a == verdict for a in asserted
    )


def tagged_pieces(sentence: str) -> list[tuple[str, str]]:
    """(claim id, the words that assert its verdict) for each tag of ``sentence``: the clause
    (after the last ":" or ";") of the text between the previous tag (or the sentence start) and
    this tag, or that whole text when its last clause asserts nothing; a piece that still
    asserts nothing ("... worse on digits [C22], modular addition [C23]") carries the last piece
    before it that does, or, with none before it, the first after it ("In the zoos of digits
    [C19] and modular addition [C20] the proxies are not shown to differ.")."""
    tags = list(TAG.finditer(sentence))
    own: list[str] = []
    start = 0
    for m in tags:
        piece = sentence[start : m.start()]
        clause = re.split(r"[:;]", piece)[-1]
        own.append(clause if stated(clause) else piece)
        start = m.end()
    out, last = [], ""
    for k, m in enumerate(tags):
        if stated(own[k]):
            last = own[k]
        elif not last:
            after = [own[j] for j in range(k + 1, len(tags)) if stated(own[j])]
            out.append((m.group(1), after[0] if after else sentence[tags[-1].end() :]))
            continue
        out.append((m.group(1), last))
    return out


def claim_row(c: dict) -> dict | None:
    """The committed row a claim rests on: ``folder`` is a results folder (its differences.csv)
    or ``study/<folder>`` (the study's primary.csv row of that folder)."""
    folder = str(c["folder"])
    if folder.startswith("study/"):
        path = HERE / "results" / "study" / "primary.csv"
        if not path.is_file():
            return None
        d = pd.read_csv(path)
        d = d[d["folder"].map(lambda x: Path(str(x)).name) == folder.removeprefix("study/")]
    else:
        path = HERE / "results" / folder / "differences.csv"
        if not path.is_file():
            return None
        d = pd.read_csv(path)
    hit = d[(d["measure"] == c["measure"]) & (d["versus"] == c["versus"])]
    hit = hit[hit["statistic"] == c["statistic"]]
    return None if hit.empty else hit.iloc[0].to_dict()


def read_claims(path: Path) -> tuple[pd.DataFrame, list[str]]:
    """claims.csv and its problems: wrong columns, a duplicate or empty id."""
    if not path.is_file():
        return pd.DataFrame(columns=CLAIM_COLUMNS), [f"{path.name}: no such file"]
    claims = pd.read_csv(path, dtype=str, keep_default_na=False)
    if list(claims.columns) != CLAIM_COLUMNS:
        return claims, [f"{path.name}: columns must be {','.join(CLAIM_COLUMNS)}"]
    bad = []
    ids = claims["claim"].str.strip()
    for cid in sorted(set(ids[ids.duplicated()])):
        bad.append(f"{path.name}: claim id {cid} is listed {int((ids == cid).sum())} times")
    if (ids == "").any():
        bad.append(f"{path.name}: {int((ids == '').sum())} rows have no claim id")
    return claims, bad


def claim_problems(texts: dict[str, str]) -> list[str]:
    """Every way the claims table and the README texts disagree (empty: they agree): a
    duplicate claim id, a claim with no row, a claim whose row's verdict differs, a tag naming no
    claim, a tag whose piece of sentence asserts another verdict (negations read as such: "is
    not shown to be worse than" asserts no verdict, never "worse"), a verdict sentence that cites
    no claim, and, when texts are given, a claim that no sentence cites."""
    claims, bad = read_claims(CLAIMS)
    if bad and list(claims.columns) != CLAIM_COLUMNS:
        return bad
    by_id = {}
    for c in claims.to_dict("records"):
        by_id[c["claim"]] = c
        row = claim_row(c)
        if row is None:
            bad.append(
                f"claim {c['claim']}: no committed row ({c['folder']}: {c['measure']} - "
                f"{c['versus']} on {c['statistic']})"
            )
        elif str(row["verdict"]) != c["verdict"]:
            bad.append(
                f"claim {c['claim']}: asserts {c['verdict']!r}, its row says {row['verdict']!r}"
            )
    cited: set[str] = set()
    for name, text in texts.items():
        for sentence in verdict_sentences(text):
            pieces = tagged_pieces(sentence)
            if not pieces:
                bad.append(f"{name}: a verdict sentence cites no claim: {sentence[:160]}")
            for t, piece in pieces:
                cited.add(t)
                c = by_id.get(t)
                if c is None:
                    bad.append(f"{name}: [{t}] is not in {CLAIMS.name}")
                elif not fits(c["verdict"], stated(piece)):
                    said = ", ".join(sorted(stated(piece))) or "nothing"
                    bad.append(
                        f"{name}: [{t}] asserts {c['verdict']!r} but its sentence says "
                        f"{said}: {sentence[:160]}"
                    )
    if texts:
        for cid in by_id:
            if cid not in cited:
                bad.append(f"claim {cid}: no sentence of {', '.join(texts)} cites it")
    return bad


#: Lines that open and close a block of definitions (what the verdict words mean): its
#: sentences use the words without stating a verdict.
DEFINITIONS = "<!-- definitions -->"
END_DEFINITIONS = "<!-- /definitions -->"


def verdict_sentences(text: str) -> list[str]:
    """The prose sentences of a markdown text that hold a verdict word (code blocks, tables,
    headings and definition blocks left out)."""
    prose, fenced, defining = [], False, False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
            continue
        if line.strip() in (DEFINITIONS, END_DEFINITIONS):
            defining = line.strip() == DEFINITIONS
            prose.append("")
            continue
        if fenced or defining or line.lstrip().startswith(("|", "#")):
            prose.append("")
            continue
        prose.append(line)
    out = []
    for para in "\n".join(prose).split("\n\n"):
        flat = " ".join(para.split())
        for sentence in re.split(r"(?<=[.!?;])\s+(?=[A-Z*(`\[])", flat):
            if VERDICT_WORDS.search(sentence):
                out.append(sentence)
    return out


def folder_tables(folder: Path) -> list[str]:
    """The tables of one correlate folder, as printed."""
    meta = json.loads((folder / "correlate.json").read_text())
    return tables_of(
        pd.read_csv(folder / "correlation.csv"),
        pd.read_csv(folder / "differences.csv"),
        list(meta["axes"]),
        meta.get("rank_ceiling", {}),
    )


def tables_of(c: pd.DataFrame, d: pd.DataFrame, axes: list[str], ceil: dict) -> list[str]:
    """Primary rows, correlation tables, rank ceiling and differences, as printed."""
    parts = []
    if "family" in d.columns:
        parts.append(primary_table(d) + "\n")
    parts.append(correlation_tables_v2(c, axes) + "\n")
    if ceil.get("statement"):
        parts.append(f"Rank ceiling: {ceil['statement']}\n")
    for st in ("tau_fixed_n", "psi_fixed_n", "kendall_tau", "psi"):
        parts.append(differences_table(d, st) + "\n")
    return parts


def proxy_table(folders: list[Path], measures: tuple[str, ...]) -> str:
    """Each measure's own rank statistics in each folder, one row per (measure, folder): tau,
    tau_n and tau_arch with their intervals (undefined where the folder has no strata of n, or no
    cell of several configurations), and the cells tau_arch used."""
    rows = []
    for name in measures:
        for folder in folders:
            c = pd.read_csv(folder / "correlation.csv").set_index("measure")
            if name not in c.index:
                continue
            r = c.loc[name].to_dict()
            arch = iv(r, "tau_arch") if "tau_arch" in r else "undefined"
            cells = r.get("tau_arch_cells")
            rows.append(
                [
                    f"`{name}`",
                    f"`{folder.name}`",
                    iv(r, "kendall_tau"),
                    iv(r, "tau_fixed_n"),
                    arch + (f" ({int(cells)} cells)" if not pd.isna(cells) and cells else ""),
                ]
            )
    return table(["measure", "folder", "tau [95%]", "tau_n [95%]", "tau_arch [95%]"], rows)


# --- the zoos designed for tau_arch: every cell, recomputed here -------------------------------

#: The measures of the A1-A3 contrasts, in the order of the cell table.
ARCH_MEASURES = ("spectrum_adaptive", "norm_based", "log_spectral_product", "distance_from_init")
CELL = ("depth", "width", "train_size")


def tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b by brute force over all pairs (shares no code with specbound):
    sum sign(dx) sign(dy) / sqrt(pairs untied in x * pairs untied in y); NaN when either
    count is 0 (a measure constant in the cell)."""
    i, j = np.triu_indices(len(x), 1)
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    nx, ny = int(np.count_nonzero(dx)), int(np.count_nonzero(dy))
    if nx == 0 or ny == 0:
        return math.nan
    return float(np.sum(dx * dy) / math.sqrt(nx * ny))


def is_arch(folder: Path) -> bool:
    """True for a folder whose primary statistic is tau_arch (A1-A3)."""
    meta = json.loads((folder / "correlate.json").read_text())
    return meta.get("primary_statistic") == "tau_arch"


def arch_cells(folder: Path) -> pd.DataFrame:
    """One row per depth x width x n cell: Kendall tau-b of each A1-A3 measure with the gap over
    the cell's models, and the cell's diagnostics (share of matrices at p* = 0, ceiling gap,
    adaptive headroom, steps, test accuracy)."""
    m = pd.read_csv(folder / "models.csv")
    m = m[m["converged"].astype(str).str.lower() == "true"] if "converged" in m else m
    rows = []
    for key, g in m.groupby(list(CELL)):
        r = dict(zip(CELL, key, strict=True), models=len(g))
        gap = g["gap"].to_numpy(float)
        for name in ARCH_MEASURES:
            r[name] = tau_b(g[name].to_numpy(float), gap)
        r["share_p0"] = float(g["spectrum_adaptive_share_p0"].mean())
        r["ceiling_gap"] = float(g["spectrum_adaptive_ceiling_gap"].mean())
        head = g["adaptive_headroom_min"] if "adaptive_headroom_min" in g else pd.Series(math.nan)
        r["headroom_median"] = float(head.median())
        r["at_ceiling"] = int((g["spectrum_adaptive_ceiling_gap"] < 1e-3).sum())
        r["steps_min"], r["steps_max"] = int(g["steps"].min()), int(g["steps"].max())
        r["test_acc"] = float(g["test_acc"].mean())
        rows.append(r)
    return pd.DataFrame(rows)


def arch_tables(folder: Path) -> str:
    """Per-cell tau of each A1-A3 measure (rows: measures; the last column their mean, which is
    the committed tau_arch when they agree) and the per-cell diagnostics."""
    cells = arch_cells(folder)
    names = [f"d{int(r['depth'])} w{int(r['width'])}" for r in cells.to_dict("records")]
    rows = [
        [f"`{k}`", *[f(x) for x in cells[k]], f(float(np.nanmean(cells[k])))] for k in ARCH_MEASURES
    ]
    t1 = table(["measure", *names, "mean (tau_arch)"], rows)
    t2 = table(
        [
            "depth",
            "width",
            "models",
            "at ceiling",
            "share p*=0",
            "ceiling gap",
            "headroom (median)",
            "steps",
            "test acc",
        ],
        [
            [
                str(int(r["depth"])),
                str(int(r["width"])),
                str(r["models"]),
                str(r["at_ceiling"]),
                f"{r['share_p0']:.3f}",
                f"{r['ceiling_gap']:.3g}",
                f"{r['headroom_median']:+.3g}",
                f"{r['steps_min']}-{r['steps_max']}",
                f"{r['test_acc']:.3f}",
            ]
            for r in cells.to_dict("records")
        ],
    )
    return t1 + "\n\n" + t2


def arch_problems() -> list[str]:
    """Each tau_arch zoo's A1-A3 measure whose committed tau_arch differs from the mean of the
    per-cell tau-b recomputed here (1e-12)."""
    bad = []
    for folder in sorted(p for p in (HERE / "results").iterdir() if p.is_dir()):
        if not (folder / "correlate.json").is_file() or not is_arch(folder):
            continue
        cells = arch_cells(folder)
        c = pd.read_csv(folder / "correlation.csv").set_index("measure")
        for name in ARCH_MEASURES:
            mine, theirs = float(np.nanmean(cells[name])), float(c.loc[name, "tau_arch"])
            if not abs(mine - theirs) <= 1e-12:
                bad.append(f"{folder.name}: tau_arch of {name} is {theirs!r}, recomputed {mine!r}")
    return bad


def summary_of(folder: Path) -> str:
    meta = json.loads((folder / "correlate.json").read_text())
    zoos = [z for z in meta.get("zoos") or [] if (HERE / "zoos" / z).is_dir()]
    if len(zoos) > 1:
        return "\n".join(f"- `{z}`: {zoo_summary(z)}" for z in zoos)
    return zoo_summary(zoo_of(folder))


def render(again: bool = False) -> str:
    """Every table, as printed: the committed statistics, or (``again``) recomputed from the
    committed models.csv."""
    parts = []
    for folder in sorted(p for p in (HERE / "results").iterdir() if p.is_dir()):
        if not (folder / "correlation.csv").is_file():
            continue
        parts.append(f"## {folder.name}\n\n{summary_of(folder)}\n")
        if again:
            parts.append("(recomputed from the committed models.csv)\n")
            parts += tables_of(*recompute(folder))
            continue
        parts += folder_tables(folder)
        if is_arch(folder):
            parts.append(f"Per cell (recomputed from models.csv):\n\n{arch_tables(folder)}\n")
    study = HERE / "results" / "study" / "primary.csv"
    if study.is_file():
        folders = list(dict.fromkeys(Path(str(x)).name for x in pd.read_csv(study)["folder"]))
        parts.append("## each proxy in each folder of the study\n")
        parts.append(
            proxy_table(
                [HERE / "results" / x for x in folders], ("spectrum_adaptive", "norm_based")
            )
            + "\n"
        )
        parts.append("## study (every primary row, Holm over the independent folders' rows)\n")
        parts.append(study_table(pd.read_csv(study)) + "\n")
    ladder = HERE / "results" / "digits-ladder" / "growth.csv"
    if ladder.is_file():
        from ladder import ladder_tables

        parts.append("## digits-ladder (specbound scale over the size ladder)\n")
        parts.append(ladder_tables(ladder.parent) + "\n")
    return "\n".join(parts)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--check"]:
        if len(argv) < 2:
            print("error: --check needs the texts to check (e.g. README.md)", file=sys.stderr)
            sys.exit(2)
        missing = [a for a in argv[1:] if not Path(a).is_file()]
        if missing:
            print(f"error: --check: no such file: {missing[0]}", file=sys.stderr)
            sys.exit(2)
        printed = render()
        texts = {a: Path(a).read_text() for a in argv[1:]}
        bad = [
            f"not in the committed tables: {line}"
            for line in unbacked_rows(texts[argv[1]], printed)
        ]
        bad += claim_problems(texts)
        bad += arch_problems()
        for line in bad:
            print(line, file=sys.stderr)
        sys.exit(1 if bad else 0)
    print(render(again="--recompute" in argv))


if __name__ == "__main__":
    main(sys.argv[1:])
