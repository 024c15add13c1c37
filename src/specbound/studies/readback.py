"""The one reader of each file a study writes and specbound reads back (issue 44).

Every caller that reads one of these files again goes through its reader here, which applies the
checks of the first read (``io.readback``: columns and types, finite and in range, unique keys,
counts that agree with correlate.json); a tampered or truncated file is one
:class:`~specbound.io.readback.ReadbackError` line naming the file, the row and the column
(CLI exit 2). Columns a reader does not know are kept as read (later versions add columns).

=====================  ==========================================================================
file                   reader
=====================  ==========================================================================
correlate.json         :func:`read_correlate_json`: ``axes`` and ``measures`` lists of distinct
                       names (no measure an axis), ``gap`` accuracy or loss, counts integers >= 0
models.csv             :func:`read_models_csv`: ``model`` unique and non-empty; every axis filled
                       (finite); ``gap`` finite, in [-1, 1] for an accuracy gap; accuracies in
                       [0, 1]; losses >= 0; ``train_size`` a positive integer (in every row
                       or in none); measures numbers
                       or empty; ``converged`` true/false; as many rows as ``n_models``
skipped.csv            :func:`read_skipped_csv`: ``model`` unique, ``reason``
differences.csv        :func:`read_differences_csv` (``protocol.tables.DIFFERENCE_CELLS``):
                       ``p``, ``p_holm``, ``q_bh`` in [0, 1] and
                       adjusted >= raw; ``B`` an integer >= 0; ``family`` primary/exploratory;
                       ``verdict`` a verdict word; one row per contrast (primary) and per
                       measure, versus, statistic (exploratory); with correlate.json: exactly
                       the primary contrasts its measures allow
correlation.csv        :func:`read_correlation_csv`: ``measure`` unique; every column of the
                       protocol registry in its statistic's range (tau and psi in [-1, 1],
                       sign-errors in [0, 1], cmi >= 0, counts integers >= 0:
                       ``protocol.tables.correlation_schema``); with correlate.json: its axes'
                       columns, one row per measure it lists
zoo.json               :func:`read_zoo_json`: an object; ``task`` text, ``grid`` axis ->
                       non-empty list (``axes``: the manifest reader's axis checks)
zoo.csv                the manifest reader, beside it:
                       ``correlate.manifest.read_zoo_csv``
claims.csv             :func:`read_claims_csv`: the six text columns, ``claim`` unique, ``verdict``
                       a verdict word
=====================  ==========================================================================

track.csv and track.json are read by ``track.trackfile`` (beside their writer), with the same
machinery.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..io.readback import (
    ZOO_DESIGNS,
    Column,
    ReadbackError,
    fail,
    folder_file,
    json_field,
    read_json_object,
    read_table,
    read_zoo_json,
    text_list,
)
from .protocol.families import primary_contrasts
from .protocol.registry import REGISTRY, Cell
from .protocol.tables import DIFFERENCE_CELLS, correlation_schema
from .protocol.verdicts import PRIMARY, VERDICTS

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ReadbackError",
    "read_claims_csv",
    "read_correlate_json",
    "read_correlation_csv",
    "read_differences_csv",
    "read_models_csv",
    "read_skipped_csv",
    "read_zoo_json",
]

GAP_NAMES = ("accuracy", "loss")
#: Manifest columns whose values have a range wherever they appear (as in the first read).
METRIC_SCHEMA = (
    Column("train_acc", required=False, empty=True, low=0.0, high=1.0),
    Column("test_acc", required=False, empty=True, low=0.0, high=1.0),
    Column("train_loss", required=False, empty=True, low=0.0),
    Column("test_loss", required=False, empty=True, low=0.0),
    Column("train_size", "int", required=False, empty=True, low=1.0, high=2.0**53),
    Column("test_size", "int", required=False, empty=True, low=0.0, high=2.0**53),
    Column("steps", "int", required=False, empty=True, low=0.0),
    Column("wall_s", required=False, empty=True, low=0.0),
)
CLAIM_COLUMNS = ("claim", "folder", "measure", "versus", "statistic", "verdict")


def read_correlate_json(path: str | Path) -> dict[str, Any]:
    """correlate.json of a correlate folder (or the file itself), checked (module doc)."""
    p = folder_file(path, "correlate.json")
    meta = read_json_object(p, "correlate.json")
    json_field(meta, "protocol", int, p, required=False, low=0)
    axes = text_list(meta, "axes", p)
    measures = text_list(meta, "measures", p)
    both = [m for m in measures if m in axes]
    if both:
        raise fail(p, None, None, f"'{both[0]}' is both an axis and a measure")
    gap = json_field(meta, "gap", str, p, required=False, default="accuracy")
    if gap not in GAP_NAMES:
        raise fail(p, None, None, f"'gap' is {gap!r}, not one of {', '.join(GAP_NAMES)}")
    json_field(meta, "task", (str, type(None)), p, required=False)
    json_field(meta, "manifest", str, p, required=False)
    for count in ("n_listed", "n_models", "n_skipped", "n_unconverged", "n_configurations"):
        json_field(meta, count, int, p, required=False, low=0)
    for count in ("bootstrap", "seed", "primary_bootstrap"):
        json_field(meta, count, int, p, required=False, low=0)
    json_field(meta, "include_unconverged", bool, p, required=False)
    design = json_field(meta, "design", (str, type(None)), p, required=False)
    if design is not None and design not in ZOO_DESIGNS:
        raise fail(p, None, None, f"'design' is {design!r}, not one of {', '.join(ZOO_DESIGNS)}")
    family = json_field(meta, "primary_family", (str, type(None)), p, required=False)
    if family is not None and family not in REGISTRY.families:
        raise fail(p, None, None, f"'primary_family' is {family!r}, not a family of the protocol")
    text_list(meta, "missing_configurations", p, required=False)
    text_list(meta, "zoos", p, required=False)
    n: dict[str, int] = {
        k: meta[k] for k in ("n_listed", "n_models", "n_skipped") if meta.get(k) is not None
    }
    if len(n) == 3 and n["n_models"] + n["n_skipped"] != n["n_listed"]:
        raise fail(
            p, None, None, f"n_models {n['n_models']} + n_skipped {n['n_skipped']} is not "
            f"n_listed {n['n_listed']}"
        )  # fmt: skip
    return meta


def read_models_csv(path: str | Path, meta: dict[str, Any]) -> pd.DataFrame:
    """models.csv of a correlate folder (or the file itself) for its correlate.json ``meta``
    (:func:`read_correlate_json`), checked (module doc)."""
    p = folder_file(path, "models.csv")
    axes, measures = list(meta["axes"]), list(meta["measures"])
    accuracy = meta.get("gap", "accuracy") == "accuracy"
    gap = Column("gap", low=-1.0 if accuracy else None, high=1.0 if accuracy else None)
    schema = [
        Column("model", "text"),
        Column("zoo", "text", required=False),
        *(Column(a, "value") for a in axes),
        gap,
        Column("converged", "bool", required=False),
        *METRIC_SCHEMA,
        *(Column(m, empty=True) for m in measures),
        Column("spectrum_adaptive_share_p0", required=False, empty=True, low=0.0, high=1.0),
        Column("spectrum_adaptive_ceiling_gap", required=False, empty=True),
    ]
    models = read_table(p, schema, key=["model"], what="models.csv")
    if "train_size" in models.columns:  # all filled or all empty: an empty one is no new n
        gone = models["train_size"].isna().to_numpy()
        if gone.any() and not gone.all():
            raise fail(p, int(gone.argmax()) + 2, "train_size",
                       "the cell is empty, but other models have a training-set size")  # fmt: skip
    _count(p, meta, "n_models", len(models), "models")
    return models


def read_pstar_csv(path: str | Path) -> pd.DataFrame:
    """pstar.csv of a correlate folder (protocol v5's per-matrix table, ``correlate.modal``:
    ``model, cell, layer, head, matrix_type, p_star, p_modal``), checked: p* in [0, 2] or empty,
    one row per (model, layer, type, head)."""
    p = folder_file(path, "pstar.csv")
    schema = [
        Column("model", "text"),
        Column("cell", "text"),
        Column("layer", "int", low=0),
        Column("head", "int", low=-1),
        Column("matrix_type", "text", choices=("QK", "OV", "M_in", "M_out")),
        Column("p_star", empty=True, low=0.0, high=2.0),
        Column("p_modal", empty=True, low=0.0, high=2.0),
    ]
    key = ["model", "layer", "matrix_type", "head"]
    return read_table(p, schema, key=key, min_rows=0, what="pstar.csv")


def read_skipped_csv(path: str | Path, meta: dict[str, Any] | None = None) -> pd.DataFrame:
    """skipped.csv of a correlate folder (``model, reason``; an empty file: none skipped)."""
    import pandas as pd

    p = folder_file(path, "skipped.csv")
    if not p.exists() or (p.is_file() and p.stat().st_size == 0):
        skipped = pd.DataFrame(columns=["model", "reason"])
    else:
        schema = [Column("model", "text"), Column("reason", "text", empty=True)]
        skipped = read_table(p, schema, key=["model"], min_rows=0, what="skipped.csv")
    if meta is not None:
        _count(p, meta, "n_skipped", len(skipped), "skipped models")
    return skipped


def _count(p: Path, meta: dict[str, Any], key: str, n: int, what: str) -> None:
    want = meta.get(key)
    if want is not None and want != n:
        raise fail(p, None, None, f"{n} {what}, but correlate.json's '{key}' is {want}")


def read_differences_csv(path: str | Path, meta: dict[str, Any] | None = None) -> pd.DataFrame:
    """differences.csv of a correlate folder (or the file itself), checked (module doc); with
    the folder's correlate.json ``meta`` the primary rows must be those its measures allow."""
    p = folder_file(path, "differences.csv")
    schema = _columns_of(DIFFERENCE_CELLS)
    key = ["family", "measure", "versus", "statistic"] if "family" in _header(p) else []
    d = read_table(p, schema, key=key or ["measure", "versus", "statistic"], min_rows=0,
                   what="differences.csv")  # fmt: skip
    for adjusted in ("p_holm", "q_bh"):
        if adjusted in d.columns and "p" in d.columns:
            a, raw = d[adjusted].to_numpy(float), d["p"].to_numpy(float)
            for i in range(len(d)):
                if a[i] < raw[i]:  # NaN compares False: an undefined figure passes
                    raise fail(
                        p, i + 2, adjusted, f"{float(a[i])!r} is below p = {float(raw[i])!r}"
                    )
    if "family" in d.columns:
        _check_primary(p, d, meta)
    return d


def _check_primary(p: Path, d: pd.DataFrame, meta: dict[str, Any] | None) -> None:
    """One primary row per contrast, with the contrast's measures (A1-A3 when the primary
    statistic, correlate.json's or else the rows', is tau_arch; else P1-P3); with ``meta``:
    exactly the contrasts whose two measures it lists, on its primary statistic."""
    prim = d[d["family"] == PRIMARY]
    stats = set(prim["statistic"]) if "statistic" in prim.columns else set()
    stat = (meta or {}).get("primary_statistic") or (stats.pop() if len(stats) == 1 else "")
    family = (meta or {}).get("primary_family")
    known = {c: (a, b) for c, a, b in primary_contrasts(str(stat), family)}
    seen: set[str] = set()
    for i, row in prim.iterrows():
        c = row.get("contrast")
        if c not in known or (row["measure"], row["versus"]) != known[c]:
            raise fail(p, int(i) + 2, "contrast", f"{c!r} is not a primary contrast of its row")
        if c in seen:
            raise fail(p, int(i) + 2, "contrast", f"contrast {c} twice")
        seen.add(c)
    if meta is None:
        return
    measures = set(meta["measures"])
    want = {c for c, (a, b) in known.items() if a in measures and b in measures}
    if seen != want:
        gone = sorted(want - seen) or sorted(seen - want)
        raise fail(
            p, None, "contrast", f"its primary rows are {sorted(seen)}; correlate.json's "
            f"measures give {sorted(want)} ({gone[0]} differs)"
        )  # fmt: skip
    stat = meta.get("primary_statistic")
    if stat is not None:
        for i, row in prim.iterrows():
            if row["statistic"] != stat:
                raise fail(p, int(i) + 2, "statistic", f"{row['statistic']!r}, not {stat!r}")


def _columns_of(cells: list[Cell] | tuple[Cell, ...]) -> list[Column]:
    """The registry's typed columns (``protocol.registry.Cell``) as the reader's schema; a cell
    of kind any is kept as read (not in the schema)."""
    return [
        Column(
            c.name,
            c.kind,
            required=c.required,
            empty=c.empty,
            low=c.low,
            high=c.high,
            choices=c.choices,
        )
        for c in cells
        if c.kind != "any"
    ]


def _header(p: Path) -> list[str]:
    import csv

    try:
        with open(p, newline="", encoding="utf-8") as fh:
            return next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return []  # read_table names the problem


def read_correlation_csv(path: str | Path, meta: dict[str, Any] | None = None) -> pd.DataFrame:
    """correlation.csv of a correlate folder (or the file itself), checked (module doc); with
    the folder's correlate.json ``meta``: one row per measure it lists, no other."""
    p = folder_file(path, "correlation.csv")
    axes = None if meta is None else list(meta["axes"])
    schema = _columns_of(correlation_schema(_header(p), axes))
    table = read_table(p, schema, key=["measure"], min_rows=0, what="correlation.csv")
    if meta is not None and set(table["measure"]) != set(meta["measures"]):
        odd = sorted(set(meta["measures"]) ^ set(table["measure"]))[0]
        raise fail(
            p, None, "measure", f"its measures are not correlate.json's ({odd!r} is in one only)"
        )
    return table


def read_claims_csv(path: str | Path) -> pd.DataFrame:
    """claims.csv (benchmarks/generalization): the columns ``CLAIM_COLUMNS`` in order, every
    cell text, ``claim`` unique, ``verdict`` a verdict word."""
    import pandas as pd

    p = Path(path)
    if _header(p) != list(CLAIM_COLUMNS) and p.is_file() and p.stat().st_size:
        raise fail(p, 1, None, f"the columns must be {','.join(CLAIM_COLUMNS)}")
    schema = [Column(c, "text") for c in CLAIM_COLUMNS[:-1]]
    schema.append(Column("verdict", "text", choices=VERDICTS))
    claims = read_table(p, schema, key=["claim"], min_rows=0, what="claims.csv")
    return claims.astype(str) if len(claims) else pd.DataFrame(columns=list(CLAIM_COLUMNS))
