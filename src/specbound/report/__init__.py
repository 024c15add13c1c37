"""The rendering layer: ``html`` (pages from autoescaping jinja2 templates, one table
renderer), ``numbers`` (one number formatter), ``figures/`` (one style),
``pages/`` (one module per report page), ``terminal`` (rich tables).

Names of the former ``specbound.report`` module are re-exported lazily (importing this package
loads neither pandas nor matplotlib).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "figure_html": "html",
    "glossary_items": "html",
    "render": "html",
    "key_columns_first": "html",
    "page": "html",
    "scrub_paths": "html",
    "table": "html",
    "table_html": "html",
    "LABELS": "html",
    "UNDEFINED": "html",
    "answer_html": "pages.analysis",
    "analysis_sections": "pages.analysis",
    "measures_table": "pages.analysis",
    "write_analysis_report": "pages.analysis",
    "MATRIX_FIRST": "pages.analysis",
    "LAYER_FIRST": "pages.analysis",
    "P_MEANING": "pages.analysis",
    "detail_model": "pages.scale",
    "models_display": "pages.scale",
    "study_answer_html": "pages.scale",
    "write_study": "pages.scale",
    "write_study_report": "pages.scale",
    "GROWTH_FIRST": "pages.scale",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{mod}", __name__), name)
