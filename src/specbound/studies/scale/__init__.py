"""The scaling study (SPEC 7): ``fit`` (OLS growth fits), ``verdict`` (reading them), ``run``
(the Study and ``scale()``), ``manifest`` (a text file of models), ``miniatures`` (the BERT
Miniatures grid)."""

from __future__ import annotations

from .fit import (
    AXES,
    CEILING_COLUMN,
    GROWTH_COLUMNS,
    growth_table,
    log10_values,
    measure_columns,
    no_fit_reason,
    ols,
    ols_df,
)
from .manifest import read_manifest
from .miniatures import (
    MINIATURE_HIDDEN,
    MINIATURE_LAYERS,
    find_local_miniature,
    locate_miniatures,
    miniature_ids,
)
from .run import (
    CEILING_COLUMNS,
    FORM_COLUMNS,
    P_COLUMNS,
    PROXIES,
    SIZE_COLUMNS,
    Study,
    model_columns,
    model_row,
    scale,
)

__all__ = [
    "AXES",
    "CEILING_COLUMN",
    "CEILING_COLUMNS",
    "FORM_COLUMNS",
    "GROWTH_COLUMNS",
    "MINIATURE_HIDDEN",
    "MINIATURE_LAYERS",
    "PROXIES",
    "P_COLUMNS",
    "SIZE_COLUMNS",
    "Study",
    "find_local_miniature",
    "growth_table",
    "locate_miniatures",
    "log10_values",
    "measure_columns",
    "miniature_ids",
    "model_columns",
    "model_row",
    "no_fit_reason",
    "ols",
    "ols_df",
    "read_manifest",
    "scale",
]
