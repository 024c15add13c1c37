"""The study over several correlate folders: the primary table of SPEC 10 protocol v3 as
amended by v4 (independent folders only in the Holm family, verdicts stable over seeds).

``study(folders, replicates=...)`` reads the folders ``specbound correlate`` wrote for the zoos of
a study (standard, fixed-n, replicate and pooled zoos of each task) and returns a
:class:`Study`:

- ``primary``: every primary row (P1-P3, or A1-A3 on tau_arch) of every folder. Protocol v4:
  the Holm family is the primary rows of the *independent* folders only (``independence`` =
  ``family``), with ``p_holm`` recomputed by Holm's step-down adjustment over all of them, the
  Monte Carlo error of that figure (``verdicts.holm_mc_errors``) and the verdict of
  :func:`~specbound.studies.protocol.verdicts.verdict`, recomputed under each bootstrap seed the
  folder recorded (``p_seeds``, ``low_seeds``, ``high_seeds`` of differences.csv):
  ``verdict_stable`` yes when every seed gives the same word, else the verdict is "borderline"
  (empty when a folder recorded one seed only). A folder's "insufficient evidence" and "not
  comparable" stay as they are: more rows never make evidence.
- independence (``protocol.independence``; what each folder holds is read by
  ``folders.trained``): a model is identified by its task, recipe (``max_steps``
  and ``target_loss`` of the zoo.json beside the folder's manifest, or ``recipe`` of
  correlate.json; a field unknown on either side does not tell models apart), configuration (its
  hyperparameter columns in models.csv: the axes of every folder and the training-set size) and
  seed, whatever CPU trained it. Folders are taken in a fixed order, a single zoo before a pooled
  folder (``zoos`` of correlate.json lists >= 2, or the pooled folder of a replicate group), then
  the folder with more models, then a replicate before a single folder, then the order given;
  each joins the family when it shares no model with a family member, else it is ``secondary``
  with ``overlaps`` (the family folder it shares most models with) and ``shared_models``: shown
  beside the family with its own folder's ``p_holm`` and verdict, never in the study's Holm
  adjustment or tally.
- replicate groups (:mod:`.replicates`) ``(name, [replicate folders], pooled folder or
  None)``: each replicate's rows
  are labelled ``replicate``, the pooled folder's ``pooled``; a group's ``replicated`` is ``yes``
  for a contrast only when every replicate alone has the same verdict, ``better`` or ``worse``,
  and ``no`` otherwise (SPEC 10 "Replicates"). Replicates must have disjoint seeds: strata of one
  zoo retrained under another preset (the same seeds) are refused as replicates.
- ``exploratory``: every exploratory row of every folder with its own ``q_bh`` (BH over that
  folder's exploratory rows), labelled exploratory: findings to follow up, not verdicts of the
  study.

Output (``Study.to_dir``, with ``report.pages.study.write_report`` as ``extra``):
``primary.csv``, ``exploratory.csv``, ``study.json`` and ``report.html``, whose first table is
the primary one.
``Study.summary()`` is what the ``study`` command prints as JSON.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ....errors import Param, SpecboundError
from ....io import output_dir
from ....io.files import dumps_json, json_safe, write_csv
from ....validation import Paths, Satisfies, validate_params
from ...protocol import verdicts as V
from ...protocol.independence import independence
from ...protocol.registry import PROTOCOL
from ...protocol.tables import EXPLORATORY_COLUMNS, PRIMARY_COLUMNS
from ..table import split_seeds
from .folders import Folder, check_distinct, read_study_folder, trained
from .replicates import Groups, adaptivity, groups_of, mark_replicated, roles

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Study:
    """The tables of one study (module doc)."""

    primary: pd.DataFrame
    exploratory: pd.DataFrame
    folders: list[str]
    groups: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: folders sharing models with a family member: ``folder, overlaps, shared_models``
    secondary: list[dict[str, Any]] = field(default_factory=list)
    #: Protocol v5's answer of each replicate pair of adaptivity zoos
    #: (``adaptivity.pair_answer``); study.json's ``adaptivity`` (absent when empty).
    adaptivity: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """What the ``study`` command prints as JSON, less the output folder it adds: a
        JSON-ready dict (``json.dumps(..., allow_nan=False)`` holds). Keys, in order: the
        content of study.json (``protocol``, ``folders``, ``n_primary``, ``holm_over``,
        ``verdicts``: counts per verdict, ``groups``, ``notes``), then ``primary``: the primary
        table as records (a missing cell None), which primary.csv holds on disk."""
        return {**self._study_json(), "primary": json_safe(self.primary)}

    def _study_json(self) -> dict[str, Any]:
        """study.json: the folders, the replicate groups, counts of verdicts, notes."""
        fam = (
            self.primary[self.primary["independence"] == "family"]
            if len(self.primary)
            else self.primary
        )
        counts = fam["verdict"].value_counts().to_dict() if len(fam) else {}
        independent = sorted(set(fam["folder"])) if len(fam) else []
        extra = {"adaptivity": list(self.adaptivity)} if self.adaptivity else {}
        return dict(
            json_safe(
                {
                    "protocol": PROTOCOL,
                    "folders": list(self.folders),
                    "n_primary": len(self.primary),
                    "n_family": len(fam),
                    "independent_zoos": len(independent),
                    "independent_folders": independent,
                    "secondary": list(self.secondary),
                    "holm_over": "every primary row of the independent folders",
                    "verdicts": {str(k): int(v) for k, v in counts.items()},
                    "groups": list(self.groups),
                    "notes": list(self.notes),
                    **extra,
                }
            )
        )

    def to_dir(self, path: str | Path, extra: Callable[[Path], object] | None = None) -> Path:
        """Write primary.csv, exploratory.csv and study.json (``summary()`` less ``primary``,
        which primary.csv holds) into ``path`` through ``io.output_dir`` (one atomic write;
        refuses a folder specbound did not write, and one that is, lies inside or contains one
        of ``folders``, the correlate folders it read). ``extra(tmp)`` may add files to the same
        write, e.g. ``lambda tmp: report.pages.study.write_report(result, tmp)`` for report.html
        (the CLI does this)."""
        with output_dir(path, inputs=self.folders) as tmp:
            tmp = Path(tmp)
            write_csv(self.primary, tmp / "primary.csv")
            write_csv(self.exploratory, tmp / "exploratory.csv")
            (tmp / "study.json").write_text(dumps_json(self._study_json(), indent=2) + "\n")
            if extra is not None:
                extra(tmp)
        return Path(path)


@validate_params(
    {
        "folders": (Paths(),),
        "replicates": (Satisfies(groups_of, "a list of replicate groups", named=True),),
    }
)
def study(folders: Sequence[str | Path], replicates: Groups = ()) -> Study:
    """The study of ``folders`` (module doc). ``replicates``: ``(name, replicate folders,
    pooled folder or None)``; every folder named there is added to ``folders`` if absent."""
    import pandas as pd

    paths = _paths(folders, replicates)
    read = {p: read_study_folder(p) for p in paths}
    role, groups = roles(replicates, read)
    over = independence(
        {
            p: trained(
                f,
                pooled=role.get(p, ("", ""))[0] == "pooled",
                replicate=role.get(p, ("single", ""))[0] == "replicate",
            )
            for p, f in read.items()
        }
    )
    rows = [
        row
        for p, f in read.items()
        for row in _primary_rows(p, f.meta, f.differences, role.get(p, ("single", "")))
    ]
    explo = [_exploratory_rows(p, f.meta, f.differences) for p, f in read.items()]
    primary = _primary_table(rows, over)
    mark_replicated(primary, groups)
    primary = primary[[*PRIMARY_COLUMNS]]
    exploratory = pd.concat(explo, ignore_index=True) if explo else pd.DataFrame()
    if len(exploratory.columns):  # the registry's columns first, a later version's after
        extra = [c for c in exploratory.columns if c not in EXPLORATORY_COLUMNS]
        exploratory = exploratory.reindex(columns=[*EXPLORATORY_COLUMNS, *extra])
    secondary = [
        {"folder": str(p), "overlaps": str(o[0]), "shared_models": o[1]}
        for p, o in over.items()
        if o is not None
    ]
    answers = adaptivity(groups, primary, read)
    notes = _notes(primary, read, secondary, answers)
    return Study(primary, exploratory, [str(p) for p in paths], groups, notes, secondary, answers)


def _notes(
    primary: pd.DataFrame,
    read: dict[Path, Folder],
    secondary: list[dict[str, Any]],
    answers: list[dict[str, Any]],
) -> list[str]:
    """The study's notes: what p_holm is over, the tally of the family's verdicts, the
    secondary folders, the folders without a primary row, protocol v5's answers."""
    n_ind = len(read) - len(secondary)
    fam = primary[primary["independence"] == "family"]
    notes = [
        f"p_holm: Holm over the {len(fam)} primary rows of {n_ind} independent zoos (folders "
        f"sharing no trained model); {len(secondary)} secondary folders share models with "
        "them and keep their own folder's p_holm and verdict, outside the study's tally; "
        "exploratory rows keep their folder's q_bh and are not verdicts of the study"
    ]
    counts = fam["verdict"].value_counts().to_dict() if len(fam) else {}
    tally = ", ".join(f"{int(v)} {k}" for k, v in sorted(counts.items()))
    notes.append(f"verdicts of the study, resting on {n_ind} independent zoos: {tally or 'none'}")
    for rec in secondary:
        notes.append(
            f"secondary: {rec['folder']} shares {rec['shared_models']} models with "
            f"{rec['overlaps']}"
        )
    notes += [
        f"{p}: no primary row (its measures give no primary contrast); it adds nothing to the "
        "primary table"
        for p, f in read.items()
        if not (f.differences["family"] == V.PRIMARY).any()
    ]
    return notes + [f"protocol v5, {a['group']}: {a['statement']}" for a in answers]


def _paths(folders: Sequence[str | Path], replicates: Groups) -> list[Path]:
    """``folders``, then every replicate or pooled folder not among them, in order; refuses an
    empty list and a folder listed twice."""
    paths = [Path(f) for f in folders]
    for _, listed, extra in replicates:
        for f in [*listed, *([extra] if extra is not None else [])]:
            if Path(f) not in paths:
                paths.append(Path(f))
    if not paths:
        raise SpecboundError(
            "study needs at least one correlate folder in ", Param("folders"), " or ",
            Param("replicates"),
        )  # fmt: skip
    check_distinct(paths, "the study would count its rows twice: pass each folder once")
    return paths


def _primary_rows(
    p: Path, meta: dict[str, Any], d: pd.DataFrame, kind_group: tuple[str, str]
) -> list[dict[str, Any]]:
    """The primary rows of one folder, as study rows (before the study's Holm and verdict)."""
    zoos = meta.get("zoos") or [Path(str(meta.get("manifest", ""))).parent.name]
    kind, g = kind_group
    prim = d[d["family"] == V.PRIMARY]
    return [
        {
            "folder": str(p),
            "task": meta.get("task"),
            "zoos": "+".join(map(str, zoos)),
            "role": kind,
            "group": g,
            "contrast": rec.get("contrast"),
            "measure": rec["measure"],
            "versus": rec["versus"],
            "statistic": rec["statistic"],
            "delta": rec["delta"],
            "low": rec["low"],
            "high": rec["high"],
            "B": rec["B"],
            "p": rec["p"],
            "p_holm_folder": rec.get("p_holm"),
            "folder_verdict": rec["verdict"],
            "folder_stable": rec.get("verdict_stable"),
            "p_seeds": rec.get("p_seeds"),
            "low_seeds": rec.get("low_seeds"),
            "high_seeds": rec.get("high_seeds"),
            "evidence": rec.get("evidence"),
            "n_configurations": meta.get("n_configurations", 0),
        }
        for rec in prim.to_dict("records")
    ]


def _exploratory_rows(p: Path, meta: dict[str, Any], d: pd.DataFrame) -> pd.DataFrame:
    """The exploratory rows of one folder, with its folder and task in front."""
    ex = d[d["family"] == V.EXPLORATORY].copy()
    ex.insert(0, "folder", str(p))
    ex.insert(1, "task", meta.get("task"))
    return ex


def _primary_table(
    rows: list[dict[str, Any]], over: dict[Path, tuple[Path, int] | None]
) -> pd.DataFrame:
    """The primary rows with ``independence``; the family rows with the study's ``p_holm``
    (Holm over the family), verdict and ``verdict_stable`` (module doc, :func:`_family`), the
    secondary rows with their folder's; an empty ``replicated`` column; an empty table with
    every column when there are none."""
    import pandas as pd

    primary = pd.DataFrame(rows)
    if not len(primary):
        primary = pd.DataFrame(columns=[*PRIMARY_COLUMNS, "folder_verdict", "n_configurations"])
        primary["replicated"] = ""
        return primary
    o = [over[Path(f)] for f in primary["folder"]]
    primary["independence"] = ["family" if x is None else "secondary" for x in o]
    primary["overlaps"] = ["" if x is None else str(x[0]) for x in o]
    primary["shared_models"] = [0 if x is None else int(x[1]) for x in o]
    recs = primary.to_dict("records")
    p_holm = pd.to_numeric(primary["p_holm_folder"], errors="coerce").to_numpy(float, copy=True)
    verdict = [str(r["folder_verdict"]) for r in recs]
    stable = ["" if pd.isna(r["folder_stable"]) else str(r["folder_stable"]) for r in recs]
    evidence = [str(r["evidence"]) + _overlap_note(x) for r, x in zip(recs, o, strict=True)]
    fam = [i for i, x in enumerate(o) if x is None]
    if fam:
        p = pd.to_numeric(primary["p"], errors="coerce").to_numpy(float)
        b = pd.to_numeric(primary["B"].iloc[fam], errors="coerce").to_numpy(float)
        holm, words, ok, notes = _family([recs[i] for i in fam], p[fam], b)
        p_holm[fam] = holm
        for k, i in enumerate(fam):
            verdict[i], stable[i] = words[k], ok[k]
            evidence[i] += notes[k]
    primary["p_holm"], primary["verdict"] = p_holm, verdict
    primary["verdict_stable"], primary["evidence"] = stable, evidence
    primary["replicated"] = ""
    return primary


def _overlap_note(x: tuple[Path, int] | None) -> str:
    """What a secondary row's evidence adds: the family folder it shares models with."""
    if x is None:
        return ""
    return f"; secondary: shares {x[1]} models with {x[0]}, not in the study's family"


def _family(
    recs: list[dict[str, Any]], p: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, list[str], list[str], list[str]]:
    """The family rows under each bootstrap seed their folders recorded (``verdicts.over_seeds``;
    the reported p alone when a folder recorded no seeds): seed 0's Holm figures, the verdicts,
    ``verdict_stable`` (yes, no; empty without seeds) and what to add to each row's evidence."""
    seeds = [[split_seeds(r.get(c)) for c in ("p_seeds", "low_seeds", "high_seeds")] for r in recs]
    n_seeds = min(len(s[0]) for s in seeds)
    per_seed = [
        [seeds[k][0][s] if n_seeds else p[k] for k in range(len(recs))]
        for s in range(max(n_seeds, 1))
    ]

    def word(s: int, k: int, p_s: float, p_holm: float, mc: float) -> str:
        return _verdict(
            recs[k],
            p=p_s,
            p_holm=p_holm,
            mc=mc,
            low=seeds[k][1][s] if n_seeds else None,
            high=seeds[k][2][s] if n_seeds else None,
        )

    holm, runs = V.over_seeds(per_seed, b, word)
    final, ok = V.stable_verdicts(runs)
    stable = [("yes" if x else "no") if n_seeds else "" for x in ok]
    notes = ["" if x else f"; {V.seeds_differ(runs, k)}" for k, x in enumerate(ok)]
    return holm, final, stable, notes


def _verdict(
    r: dict[str, Any],
    *,
    p: float,
    p_holm: float,
    mc: float,
    low: float | None = None,
    high: float | None = None,
) -> str:
    """The study verdict of one primary row under one bootstrap seed (its ``p``, the study's
    ``p_holm`` and that figure's Monte Carlo error ``mc``, the seed's interval; default the
    row's): the folder's "insufficient evidence" and "not comparable" stand; otherwise the
    verdict rules."""
    if r["folder_verdict"] in (V.INSUFFICIENT, V.NOT_COMPARABLE):
        return str(r["folder_verdict"])
    lo = r["low"] if low is None else low
    hi = r["high"] if high is None else high
    vals = [r["delta"], lo, hi, p, p_holm]
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in vals):
        return V.INSUFFICIENT
    return str(
        V.verdict(
            estimate=float(r["delta"]),
            low=float(lo),
            high=float(hi),
            p_adj=float(p_holm),
            B=int(r["B"]),
            n_configurations=int(r["n_configurations"]),
            n_strata_ok=V.MIN_STRATA,  # the folder's own verdict already passed the strata rule
            statistic=str(r["statistic"]),
            p=float(p),
            mc=mc,
        )
    )
