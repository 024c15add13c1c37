"""Correlate folders read back for combining: the one reader that pooling and the study use.

A folder ``specbound correlate`` wrote is read through the checked readers of
``studies.readback`` (a tampered file is one line naming file, row, column): :func:`read_folder`
checks the files a use needs, then reads correlate.json; each table is read when asked for
(:class:`Folder`). The zoo a folder was computed from is found beside the manifest its
correlate.json names (:func:`zoo_dir`), for its grid (pooling) and for what made its models
(the study's independence: :func:`trained`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....errors import Param, SpecboundError
from ....io.readback import present
from ... import readback as R
from ...protocol.independence import RECIPE_KEYS, Trained
from ..manifest import read_zoo
from ..modal import PSTAR_CSV

if TYPE_CHECKING:
    import pandas as pd

#: Files a correlate folder must hold to be re-evaluated (pooled).
RESULT_FILES = ("correlate.json", "models.csv")
#: Files a correlate folder must hold to enter a study.
STUDY_FILES = ("correlate.json", "differences.csv")


@dataclass(eq=False)
class Folder:
    """A correlate folder: its correlate.json (``meta``) and its tables, each read by its
    checked reader when first asked for."""

    path: Path
    meta: dict[str, Any]

    @cached_property
    def models(self) -> pd.DataFrame:
        """models.csv (empty when the folder has none)."""
        import pandas as pd

        if not present(self.path / "models.csv"):
            return pd.DataFrame()
        return R.read_models_csv(self.path, self.meta)

    @cached_property
    def skipped(self) -> pd.DataFrame:
        """skipped.csv."""
        return R.read_skipped_csv(self.path, self.meta)

    @cached_property
    def differences(self) -> pd.DataFrame:
        """differences.csv."""
        return R.read_differences_csv(self.path, self.meta)

    @cached_property
    def correlation(self) -> pd.DataFrame:
        """correlation.csv."""
        return R.read_correlation_csv(self.path, self.meta)

    @cached_property
    def pstar(self) -> pd.DataFrame | None:
        """pstar.csv (protocol v5's per-matrix table); None when the folder has none."""
        return R.read_pstar_csv(self.path) if (self.path / PSTAR_CSV).is_file() else None


def is_result_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder written by ``correlate`` (correlate.json + models.csv)."""
    return _holds(Path(path), RESULT_FILES)


def _holds(p: Path, files: Sequence[str]) -> bool:
    # present, not is_file: its reader refuses a file that is a directory
    return p.is_dir() and all(present(p / f) for f in files)


def read_folder(path: str | Path, files: Sequence[str], hint: str) -> Folder:
    """The correlate folder ``path``, once it holds ``files`` (else an error naming them and
    ending with ``hint``: what to pass instead); its correlate.json read."""
    p = Path(path)
    if not _holds(p, files):
        raise SpecboundError(
            f"{p} is not a folder written by 'specbound correlate' (it needs "
            f"{' and '.join(files)}); {hint}"
        )
    return Folder(p, R.read_correlate_json(p))


def read_study_folder(path: str | Path) -> Folder:
    """A correlate folder as a study reads it: correlate.json, differences.csv (refused when
    written before protocol v3: no primary rows) and models.csv when there."""
    f = read_folder(path, STUDY_FILES, "pass correlate output folders")
    if int(f.meta.get("protocol", 0) or 0) < 3 or "family" not in f.differences:
        raise SpecboundError(
            f"{f.path} was written before protocol v3 (no primary rows); re-evaluate it in "
            "place: correlate it again with ",
            Param("out", str(f.path)),
        )
    _ = f.models  # read now: a tampered models.csv is refused before any table is made
    return f


#: What pooling a zoo given twice would do (:func:`check_distinct`'s default).
POOLED_TWICE = "pooling it would count its models twice: pass each zoo once"


def check_distinct(paths: Sequence[str | Path], why: str = POOLED_TWICE) -> None:
    """Refuse a zoo directory or correlate folder given twice (compared resolved), before
    anything is read or analyzed; ``why``: what counting it twice would do."""
    seen: dict[Path, str] = {}
    for p in paths:
        r = Path(p).resolve()
        if r in seen:
            raise SpecboundError(f"{p} is given twice (as {seen[r]} too); {why}")
        seen[r] = str(p)


def zoo_dir(folder: Path, manifest: Any) -> Path | None:
    """The zoo directory (holding zoo.json) of the manifest a folder's correlate.json names: a
    manifest CSV's folder, or the directory itself, looked up from the folder's parents, then
    the working directory. None for a pooled folder (``A + B``), none named, or none found."""
    text = str(manifest or "")
    if not text or " + " in text:
        return None
    zoo = Path(text).parent if text.endswith(".csv") else Path(text)
    for base in [*folder.resolve().parents, Path.cwd()]:
        if (base / zoo / "zoo.json").is_file():
            return base / zoo
    return None


def trained(folder: Folder, *, pooled: bool, replicate: bool) -> Trained:
    """What the study's independence needs of a folder (``protocol.independence.Trained``):
    its task, axes, models, recipe and most steps; ``pooled`` and ``replicate`` as its role in
    the study says (a folder whose correlate.json lists >= 2 zoos is pooled too)."""
    meta, models = folder.meta, folder.models
    return Trained(
        task=meta.get("task"),
        axes=tuple(str(a) for a in meta.get("axes") or []),
        models=models,
        recipe=recipe(folder.path, meta),
        most_steps=most_steps(folder.path, meta, models),
        pooled=pooled or len(meta.get("zoos") or []) >= 2,
        replicate=replicate,
    )


def recipe(folder: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The recipe fields (``RECIPE_KEYS``) of a folder: ``meta["recipe"]`` when recorded, else
    those of the zoo.json beside its manifest (:func:`zoo_dir`); {} when unknown (a pooled
    folder, a manifest CSV)."""
    rec = meta.get("recipe")
    if isinstance(rec, dict):
        return {k: rec[k] for k in RECIPE_KEYS if k in rec}
    zoo = zoo_dir(folder, meta.get("manifest"))
    if zoo is None:
        return {}
    z = R.read_zoo_json(zoo / "zoo.json")
    return {k: z[k] for k in RECIPE_KEYS if k in z}


def most_steps(
    folder: Path, meta: dict[str, Any], models: pd.DataFrame | None = None
) -> float | None:
    """The most steps any model of the folder's zoo trained: from the zoo.csv beside its
    manifest (every model, converged or not), else from models.csv's ``steps`` when no model was
    left out as unconverged (``n_unconverged`` 0); None when unknown."""
    import pandas as pd

    zoo = zoo_dir(folder, meta.get("manifest"))
    table = None
    if zoo is not None and (zoo / "zoo.csv").is_file():
        table = read_zoo(zoo).table
    elif models is not None and int(meta.get("n_unconverged", 1) or 0) == 0:
        table = models
    if table is None or "steps" not in table.columns or not len(table):
        return None
    s = pd.to_numeric(table["steps"], errors="coerce").to_numpy(float)
    return float(s.max()) if s.size and not pd.isna(s).any() else None
