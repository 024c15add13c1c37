"""One study over several correlate folders: the primary table of SPEC 10 protocol v3 as
amended by v4 (independent folders only in the Holm family, verdicts stable over seeds).

``study(folders, replicates=...)`` reads the folders ``specbound correlate`` wrote for the zoos of
a study (standard, fixed-n, replicate and pooled zoos of each task) and returns a
:class:`Study`:

- ``primary``: every primary row (P1-P3, or A1-A3 on tau_arch) of every folder. Protocol v4:
  the Holm family is the primary rows of the *independent* folders only (``independence`` =
  ``family``), with ``p_holm`` recomputed by Holm's step-down adjustment over all of them, the
  Monte Carlo error of that figure (``verdicts.holm_mc_errors``) and the verdict of
  :func:`~specbound.studies.correlate.verdicts.verdict`, recomputed under each bootstrap seed the
  folder recorded (``p_seeds``, ``low_seeds``, ``high_seeds`` of differences.csv):
  ``verdict_stable`` yes when every seed gives the same word, else the verdict is "borderline"
  (empty when a folder recorded one seed only). A folder's "insufficient evidence" and "not
  comparable" stay as they are: more rows never make evidence.
- independence (:func:`independence`): a model is identified by its task, recipe (``max_steps``
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
- replicate groups ``(name, [replicate folders], pooled folder or None)``: each replicate's rows
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
``Study.summary()`` is what ``specbound study --json`` prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Param, SpecboundError, SpecboundTypeError
from ..io import output_dir
from ..io.files import dumps_json, json_safe
from ..validation import PathLike, Paths, Satisfies, Text, validate_params
from . import readback as R
from .correlate.table import split_seeds
from .independence import independence
from .protocol import verdicts as V
from .protocol.adaptivity import ADAPTIVITY, pair_answer
from .protocol.tables import EXPLORATORY_COLUMNS, PRIMARY_COLUMNS

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
        """What ``specbound study --json`` prints, less the output folder the CLI adds: a
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
                    "protocol": 4,
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
            self.primary.to_csv(tmp / "primary.csv", index=False, float_format="%.17g")
            self.exploratory.to_csv(tmp / "exploratory.csv", index=False, float_format="%.17g")
            (tmp / "study.json").write_text(dumps_json(self._study_json(), indent=2) + "\n")
            if extra is not None:
                extra(tmp)
        return Path(path)


def _read(folder: Path) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """correlate.json, differences.csv and models.csv (when there) of ``folder``, through
    their readers (``studies.readback``: a tampered file is one line naming file, row, column)."""
    import pandas as pd

    meta_file, diff_file = folder / "correlate.json", folder / "differences.csv"
    if not (meta_file.is_file() and diff_file.is_file()):
        raise SpecboundError(
            f"{folder} is not a folder written by 'specbound correlate' (no correlate.json and "
            "differences.csv); pass correlate output folders"
        )
    meta = R.read_correlate_json(folder)
    d = R.read_differences_csv(folder, meta)
    if int(meta.get("protocol", 0) or 0) < 3 or "family" not in d:
        raise SpecboundError(
            f"{folder} was written before protocol v3 (no primary rows); re-evaluate it with "
            f"'specbound correlate {folder} --out {folder}'"
        )
    models_file = folder / "models.csv"
    models = R.read_models_csv(folder, meta) if models_file.is_file() else pd.DataFrame()
    return meta, d, models


def _seeds(models: pd.DataFrame) -> set[str]:
    if "seed" not in models.columns:
        return set()
    return {str(s) for s in models["seed"].dropna()}


def _groups_of(value: Any, name: str) -> list[tuple[str, list[Any], Any]]:
    """``replicates`` as a list of ``(name, [folders], pooled folder or None)``."""
    try:
        groups = [tuple(g) for g in value if not isinstance(g, str)]
        ok = len(groups) == len(value) and all(len(g) == 3 for g in groups)
    except TypeError:
        ok = False
    if isinstance(value, str) or not ok:
        raise SpecboundTypeError(
            Param(name), f" must be a list of (name, folders, pooled folder or None), got {value!r}"
        )
    return [
        (
            Text().convert(g, name),
            Paths().convert(f, name),
            None if p is None else PathLike().convert(p, name),
        )
        for g, f, p in groups
    ]


@validate_params(
    {
        "folders": (Paths(),),
        "replicates": (Satisfies(_groups_of, "a list of replicate groups", named=True),),
    }
)
def study(
    folders: Sequence[str | Path],
    replicates: Sequence[tuple[str, Sequence[str | Path], str | Path | None]] = (),
) -> Study:
    """The study of ``folders`` (module doc). ``replicates``: ``(name, replicate folders,
    pooled folder or None)``; every folder named there is added to ``folders`` if absent."""
    import pandas as pd

    paths = _paths(folders, replicates)
    read = {p: _read(p) for p in paths}
    role, groups = _groups(replicates, read)
    over = independence(paths, read, role)
    rows, explo = [], []
    for p in paths:
        meta, d, _ = read[p]
        rows.extend(_primary_rows(p, meta, d, role.get(p, ("single", "")), V))
        explo.append(_exploratory_rows(p, meta, d, V))
    primary = _primary_table(rows, over, V)
    _mark_replicated(primary, groups, V)
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
    n_ind = len(paths) - len(secondary)
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
        for p in paths
        if not (read[p][1]["family"] == V.PRIMARY).any()
    ]
    answers = _adaptivity(groups, primary, read)
    notes += [f"protocol v5, {a['group']}: {a['statement']}" for a in answers]
    return Study(primary, exploratory, [str(p) for p in paths], groups, notes, secondary, answers)


def _adaptivity(
    groups: list[dict[str, Any]], primary: pd.DataFrame, read: dict[Path, Any]
) -> list[dict[str, Any]]:
    """Protocol v5's answer (``adaptivity.pair_answer``) of every replicate group of two
    folders whose correlate.json both say ``design: adaptivity``."""
    out = []
    for grp in groups:
        reps = [Path(r) for r in grp.get("replicates", [])]
        if len(reps) != 2 or any(read[r][0].get("design") != ADAPTIVITY for r in reps):
            continue
        shares = {
            str(r): [c["share"] for c in (read[r][0].get("p_switch_share") or {}).get("cells", [])]
            for r in reps
        }
        corr = {str(r): R.read_correlation_csv(r, read[r][0]) for r in reps}
        out.append(pair_answer(grp["group"], [str(r) for r in reps], primary, shares, corr))
    return out


def _paths(
    folders: Sequence[str | Path],
    replicates: Sequence[tuple[str, Sequence[str | Path], str | Path | None]],
) -> list[Path]:
    """``folders``, then every replicate or pooled folder not among them, in order; refuses an
    empty list and a folder listed twice."""
    paths = [Path(f) for f in folders]
    for _, listed, extra in replicates:
        for f in [*listed, *([extra] if extra is not None else [])]:
            if Path(f) not in paths:
                paths.append(Path(f))
    if not paths:
        raise SpecboundError("study needs at least one correlate folder")
    if len({p.resolve() for p in paths}) != len(paths):
        raise SpecboundError("study: a folder is listed twice")
    return paths


def _groups(
    replicates: Sequence[tuple[str, Sequence[str | Path], str | Path | None]],
    read: dict[Path, tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]],
) -> tuple[dict[Path, tuple[str, str]], list[dict[str, Any]]]:
    """The role ``(kind, group)`` of every replicate and pooled folder, and the group records
    of study.json; checks each group (module doc) in the order given."""
    role: dict[Path, tuple[str, str]] = {}
    groups: list[dict[str, Any]] = []
    for name, given, pooled in replicates:
        reps = [Path(r) for r in given]
        _check_group(name, reps, read)
        for r in reps:
            if r in role:
                raise SpecboundError(f"{r} is in two replicate groups")
            role[r] = ("replicate", name)
        if pooled is not None:
            role[Path(pooled)] = ("pooled", name)
        groups.append(
            {
                "group": name,
                "replicates": [str(r) for r in reps],
                "pooled": None if pooled is None else str(pooled),
                "seeds": {str(r): sorted(_seeds(read[r][2]), key=float) for r in reps},
            }
        )
    return role, groups


def _check_group(
    name: str,
    reps: list[Path],
    read: dict[Path, tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]],
) -> None:
    """Refuse a replicate group of fewer than two folders, with shared seeds or other axes."""
    if len(reps) < 2:
        raise SpecboundError(f"replicate group {name}: needs >= 2 replicate folders")
    seen: dict[str, Path] = {}
    for r in reps:
        meta, _, models = read[r]
        for s in _seeds(models):
            if s in seen:
                raise SpecboundError(
                    f"replicate group {name}: {r} and {seen[s]} share seed {s}; replicates "
                    "need disjoint seeds (strata of one zoo retrained are not replicates)"
                )
            seen[s] = r
        if meta.get("axes") != read[reps[0]][0].get("axes"):
            raise SpecboundError(f"replicate group {name}: {r} has other axes than {reps[0]}")


def _primary_rows(
    p: Path, meta: dict[str, Any], d: pd.DataFrame, kind_group: tuple[str, str], V: Any
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


def _exploratory_rows(p: Path, meta: dict[str, Any], d: pd.DataFrame, V: Any) -> pd.DataFrame:
    """The exploratory rows of one folder, with its folder and task in front."""
    ex = d[d["family"] == V.EXPLORATORY].copy()
    ex.insert(0, "folder", str(p))
    ex.insert(1, "task", meta.get("task"))
    return ex


def _primary_table(
    rows: list[dict[str, Any]], over: dict[Path, tuple[Path, int] | None], V: Any
) -> pd.DataFrame:
    """The primary rows with ``independence``; the family rows with the study's ``p_holm``
    (Holm over the family), verdict and ``verdict_stable`` (module doc), the secondary rows with
    their folder's; an empty ``replicated`` column; an empty table with every column when there
    are none."""
    import numpy as np
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
    fam = np.flatnonzero((primary["independence"] == "family").to_numpy()).tolist()
    recs = primary.to_dict("records")
    p = pd.to_numeric(primary["p"], errors="coerce").to_numpy(float)
    p_holm = pd.to_numeric(primary["p_holm_folder"], errors="coerce").to_numpy(float, copy=True)
    verdict = [str(r["folder_verdict"]) for r in recs]
    stable = ["" if pd.isna(r["folder_stable"]) else str(r["folder_stable"]) for r in recs]
    evidence = [str(r["evidence"]) for r in recs]
    for i, x in enumerate(o):
        if x is not None:
            evidence[i] += (
                f"; secondary: shares {x[1]} models with {x[0]}, not in the study's family"
            )
    if fam:
        seeds = [[split_seeds(recs[i].get(c)) for c in ("p_seeds", "low_seeds", "high_seeds")]
                 for i in fam]  # fmt: skip
        n_seeds = min(len(s[0]) for s in seeds)
        runs = []
        for s in range(max(n_seeds, 1)):
            ps = np.array([seeds[k][0][s] if n_seeds else p[i] for k, i in enumerate(fam)])
            b = pd.to_numeric(primary["B"].iloc[fam], errors="coerce").to_numpy(float)
            hs, mcs = V.holm(ps), V.holm_mc_errors(ps, b)
            if s == 0:
                p_holm[fam] = hs
            runs.append(
                [
                    _verdict(
                        recs[i],
                        V,
                        p=float(ps[k]),
                        p_holm=float(hs[k]),
                        mc=float(mcs[k]),
                        low=seeds[k][1][s] if n_seeds else None,
                        high=seeds[k][2][s] if n_seeds else None,
                    )
                    for k, i in enumerate(fam)
                ]
            )
        final, ok = V.stable_verdicts(runs)
        for k, i in enumerate(fam):
            verdict[i] = final[k]
            stable[i] = ("yes" if ok[k] else "no") if n_seeds else ""
            if not ok[k]:
                evidence[i] += "; verdict differs between bootstrap seeds: " + ", ".join(
                    run[k] for run in runs
                )
    primary["p_holm"], primary["verdict"] = p_holm, verdict
    primary["verdict_stable"], primary["evidence"] = stable, evidence
    primary["replicated"] = ""
    return primary


def _mark_replicated(primary: pd.DataFrame, groups: list[dict[str, Any]], V: Any) -> None:
    """Set ``replicated`` (yes/no, module doc) per contrast of each group, in ``primary`` (its
    rows of the group) and in the group's record, in place."""
    for grp in groups:
        reps = grp["replicates"]
        for c in sorted(set(primary.loc[primary["group"] == grp["group"], "contrast"].dropna())):
            words = [
                primary.loc[(primary["folder"] == r) & (primary["contrast"] == c), "verdict"]
                for r in reps
            ]
            same = [w.iloc[0] if len(w) else "" for w in words]
            ok = same[0] in (V.BETTER, V.WORSE) and all(w == same[0] for w in same)
            grp.setdefault("replicated", {})[c] = "yes" if ok else "no"
            sel = (primary["group"] == grp["group"]) & (primary["contrast"] == c)
            primary.loc[sel, "replicated"] = "yes" if ok else "no"


def _verdict(
    r: dict[str, Any],
    V: Any,
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
    import math

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
