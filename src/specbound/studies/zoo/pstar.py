"""Each zoo model's per-matrix table of p* (issue 52): ``MODEL/pstar.csv`` and ``ZOO/pstar.csv``.

``model_table(model_dir)``: one row per canonical matrix (QK and OV per head, M_in and M_out
per layer) of the saved checkpoint, from ``specbound.analysis.analyze`` (``Analysis.matrices``):
``layer, head, matrix_type, rank, p_star, log10_scale``. Written into each model directory
when it is trained (``single.finish_model``) and gathered, with a leading ``model`` column
(``models/<name>``, as in zoo.csv), into ``ZOO/pstar.csv`` (``zoodir.write_pstar``), so that
the switching share and the modal form of SPEC 10 v5 come from the zoo folder alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...analysis import analyze
from ...errors import SpecboundError
from ...io.files import csv_text

#: The columns of a model's table (``ZOO/pstar.csv`` puts ``model`` first).
COLUMNS = ["layer", "head", "matrix_type", "rank", "p_star", "log10_scale"]
FILE = "pstar.csv"


def model_table(model_dir: str | os.PathLike[str]) -> Any:
    """The per-matrix p* table of one saved checkpoint (module doc), a DataFrame; no rows for a
    model whose weights cannot be analyzed (a diverged run: non-finite weights have no p*)."""
    try:
        a = analyze(str(model_dir), cache=False, measures="spectrum_adaptive")
    except SpecboundError:
        import pandas as pd

        return pd.DataFrame(columns=COLUMNS)
    return a.matrices[COLUMNS].reset_index(drop=True)


def write_model_table(model_dir: Path) -> None:
    """``MODEL/pstar.csv`` from the checkpoint in ``model_dir``."""
    (model_dir / FILE).write_text(csv_text(model_table(model_dir)))


def read_model_table(model_dir: Path) -> Any:
    """``MODEL/pstar.csv``; computed from the checkpoint (not written) when it is not there
    (a model trained before the tables existed) or does not have the table's columns."""
    import pandas as pd

    path = model_dir / FILE
    if path.is_file():
        try:
            df = pd.read_csv(path)
        except (OSError, ValueError):
            df = None
        if df is not None and list(df.columns) == COLUMNS:
            return df
    return model_table(model_dir)
