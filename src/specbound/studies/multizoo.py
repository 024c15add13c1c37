"""One study over several correlate folders: the primary table of SPEC 10 protocol v3.

``study(folders, replicates=...)`` reads the folders ``specbound correlate`` wrote for the zoos of
a study (standard, fixed-n, replicate and pooled zoos of each task) and returns a
:class:`Study`:

- ``primary``: every primary row (P1-P3) of every folder, with ``p_holm`` recomputed by Holm's
  step-down adjustment over **all** of them (the whole study is one family), and the verdict of
  :func:`~specbound.studies.correlate.verdicts.verdict` with that figure. A folder's
  "insufficient evidence" and "not comparable" stay as they are: more rows never make evidence.
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

from ..errors import SpecboundError

if TYPE_CHECKING:
    import pandas as pd

PRIMARY_COLUMNS = (
    "folder",
    "task",
    "zoos",
    "role",
    "group",
    "contrast",
    "measure",
    "versus",
    "statistic",
    "delta",
    "low",
    "high",
    "B",
    "p",
    "p_holm_folder",
    "p_holm",
    "verdict",
    "evidence",
    "replicated",
)


@dataclass
class Study:
    """The tables of one study (module doc)."""

    primary: pd.DataFrame
    exploratory: pd.DataFrame
    folders: list[str]
    groups: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """What ``specbound study --json`` prints, less the output folder the CLI adds: a
        JSON-ready dict (``json.dumps(..., allow_nan=False)`` holds). Keys, in order: the
        content of study.json (``protocol``, ``folders``, ``n_primary``, ``holm_over``,
        ``verdicts``: counts per verdict, ``groups``, ``notes``), then ``primary``: the primary
        table as records (a missing cell None), which primary.csv holds on disk."""
        from ..io.files import json_safe

        return {**self._study_json(), "primary": json_safe(self.primary)}

    def _study_json(self) -> dict[str, Any]:
        """study.json: the folders, the replicate groups, counts of verdicts, notes."""
        from ..io.files import json_safe

        counts = self.primary["verdict"].value_counts().to_dict() if len(self.primary) else {}
        return dict(
            json_safe(
                {
                    "protocol": 3,
                    "folders": list(self.folders),
                    "n_primary": len(self.primary),
                    "holm_over": "every primary row of every folder",
                    "verdicts": {str(k): int(v) for k, v in counts.items()},
                    "groups": list(self.groups),
                    "notes": list(self.notes),
                }
            )
        )

    def to_dir(self, path: str | Path, extra: Callable[[Path], object] | None = None) -> Path:
        """Write primary.csv, exploratory.csv and study.json (``summary()`` less ``primary``,
        which primary.csv holds) into ``path`` through ``io.output_dir`` (one atomic write;
        refuses a folder specbound did not write). ``extra(tmp)`` may add files to the same
        write, e.g. ``lambda tmp: report.pages.study.write_report(result, tmp)`` for report.html
        (the CLI does this)."""
        from ..io import output_dir
        from ..io.files import dumps_json

        with output_dir(path) as tmp:
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

    from . import readback as R

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


def study(
    folders: Sequence[str | Path],
    replicates: Sequence[tuple[str, Sequence[str | Path], str | Path | None]] = (),
) -> Study:
    """The study of ``folders`` (module doc). ``replicates``: ``(name, replicate folders,
    pooled folder or None)``; every folder named there is added to ``folders`` if absent."""
    import pandas as pd

    from .correlate import verdicts as V

    paths = _paths(folders, replicates)
    read = {p: _read(p) for p in paths}
    role, groups = _groups(replicates, read)
    rows, explo = [], []
    for p in paths:
        meta, d, _ = read[p]
        rows.extend(_primary_rows(p, meta, d, role.get(p, ("single", "")), V))
        explo.append(_exploratory_rows(p, meta, d, V))
    primary = _primary_table(rows, V)
    _mark_replicated(primary, groups, V)
    primary = primary[[*PRIMARY_COLUMNS]]
    exploratory = pd.concat(explo, ignore_index=True) if explo else pd.DataFrame()
    notes = [
        f"p_holm: Holm over all {len(primary)} primary rows of {len(paths)} folders; "
        "exploratory rows keep their folder's q_bh and are not verdicts of the study"
    ]
    notes += [
        f"{p}: no primary row (its measures give no primary contrast); it adds nothing to the "
        "primary table"
        for p in paths
        if not (read[p][1]["family"] == V.PRIMARY).any()
    ]
    return Study(primary, exploratory, [str(p) for p in paths], groups, notes)


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


def _primary_table(rows: list[dict[str, Any]], V: Any) -> pd.DataFrame:
    """The primary rows with the study's ``p_holm`` (Holm over all of them) and verdict, and an
    empty ``replicated`` column; an empty table with every column when there are none."""
    import pandas as pd

    primary = pd.DataFrame(rows)
    if len(primary):
        primary["p_holm"] = V.holm(pd.to_numeric(primary["p"], errors="coerce").to_numpy(float))
        primary["verdict"] = [_verdict(r, V) for r in primary.to_dict("records")]
    else:
        primary = pd.DataFrame(columns=[*PRIMARY_COLUMNS, "folder_verdict", "n_configurations"])
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


def _verdict(r: dict[str, Any], V: Any) -> str:
    """The study verdict of one primary row: the folder's "insufficient evidence" and "not
    comparable" stand; otherwise the verdict rules with the study's p_holm."""
    import math

    if r["folder_verdict"] in (V.INSUFFICIENT, V.NOT_COMPARABLE):
        return str(r["folder_verdict"])
    vals = [r["delta"], r["low"], r["high"], r["p"], r["p_holm"]]
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in vals):
        return V.INSUFFICIENT
    return str(
        V.verdict(
            estimate=float(r["delta"]),
            low=float(r["low"]),
            high=float(r["high"]),
            p_adj=float(r["p_holm"]),
            B=int(r["B"]),
            n_configurations=int(r["n_configurations"]),
            n_strata_ok=V.MIN_STRATA,  # the folder's own verdict already passed the strata rule
            statistic=str(r["statistic"]),
            p=float(r["p"]),
        )
    )
