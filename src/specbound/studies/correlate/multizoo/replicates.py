"""The replicate groups of a study (SPEC 10 "Replicates"): zoos of one grid retrained with
disjoint seeds, each with the folder of their pooled run.

A group is ``(name, [replicate folders], pooled folder or None)`` (:func:`groups_of` checks the
parameter). Each replicate's rows are labelled ``replicate``, the pooled folder's ``pooled``
(:func:`roles`); a group's ``replicated`` is ``yes`` for a contrast only when every replicate
alone has the same verdict, ``better`` or ``worse``, and ``no`` otherwise
(:func:`mark_replicated`). Replicates must have disjoint seeds: strata of one zoo retrained
under another preset (the same seeds) are refused as replicates. Protocol v5: a group of two
adaptivity zoos gets the pre-registered answer (:func:`adaptivity`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....errors import Param, SpecboundError, SpecboundTypeError
from ....validation import PathLike, Paths, Text
from ...protocol import verdicts as V
from ...protocol.adaptivity import ADAPTIVITY, pair_answer
from .folders import Folder

if TYPE_CHECKING:
    import pandas as pd

#: The ``replicates`` parameter: ``(name, replicate folders, pooled folder or None)`` per group.
Groups = Sequence[tuple[str, Sequence[str | Path], str | Path | None]]


def groups_of(value: Any, name: str) -> list[tuple[str, list[Any], Any]]:
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


def seeds(models: pd.DataFrame) -> set[str]:
    """The seeds of a models table (as text)."""
    if "seed" not in models.columns:
        return set()
    return {str(s) for s in models["seed"].dropna()}


def roles(
    replicates: Groups, read: dict[Path, Folder]
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
                raise SpecboundError(
                    Param("replicates"), f": {r} is in two replicate groups; name it in one"
                )
            role[r] = ("replicate", name)
        if pooled is not None:
            role[Path(pooled)] = ("pooled", name)
        groups.append(
            {
                "group": name,
                "replicates": [str(r) for r in reps],
                "pooled": None if pooled is None else str(pooled),
                "seeds": {str(r): sorted(seeds(read[r].models), key=float) for r in reps},
            }
        )
    return role, groups


def _check_group(name: str, reps: list[Path], read: dict[Path, Folder]) -> None:
    """Refuse a replicate group of fewer than two folders, with shared seeds or other axes."""
    if len(reps) < 2:
        raise SpecboundError(
            Param("replicates"), f": replicate group {name} needs >= 2 replicate folders"
        )
    seen: dict[str, Path] = {}
    for r in reps:
        for s in seeds(read[r].models):
            if s in seen:
                raise SpecboundError(
                    Param("replicates"),
                    f": replicate group {name}: {r} and {seen[s]} share seed {s}; replicates "
                    "need disjoint seeds (strata of one zoo retrained are not replicates)",
                )
            seen[s] = r
        if read[r].meta.get("axes") != read[reps[0]].meta.get("axes"):
            raise SpecboundError(
                Param("replicates"), f": replicate group {name}: {r} has other axes than {reps[0]}"
            )


def mark_replicated(primary: pd.DataFrame, groups: list[dict[str, Any]]) -> None:
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


def adaptivity(
    groups: list[dict[str, Any]], primary: pd.DataFrame, read: dict[Path, Folder]
) -> list[dict[str, Any]]:
    """Protocol v5's answer (``adaptivity.pair_answer``) of every replicate group of two
    folders whose correlate.json both say ``design: adaptivity``."""
    out = []
    for grp in groups:
        reps = [Path(r) for r in grp.get("replicates", [])]
        if len(reps) != 2 or any(read[r].meta.get("design") != ADAPTIVITY for r in reps):
            continue
        shares = {
            str(r): [
                c["share"] for c in (read[r].meta.get("p_switch_share") or {}).get("cells", [])
            ]
            for r in reps
        }
        corr = {str(r): read[r].correlation for r in reps}
        out.append(pair_answer(grp["group"], [str(r) for r in reps], primary, shares, corr))
    return out
