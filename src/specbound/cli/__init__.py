"""The ``specbound`` command line: a thin layer on the Python API.

``app`` (:mod:`.app`: errors, exit codes, the conventions), shared options (:mod:`.options`),
one module per command. ``main`` is the console entry point (``specbound``, ``python -m
specbound``).
"""

from __future__ import annotations

import importlib

from ..demo import DEMO_ALIASES
from .app import DEBUG, app, cache_app, fail, handle_errors, main, zoo_app
from .common import resolve_model

#: The command modules, in the order of ``specbound --help``; each registers its command(s) on
#: ``app`` (or ``cache_app``, ``zoo_app``) when imported.
COMMANDS = (
    "analyze",
    "layers",
    "measures",
    "inspect",
    "scale",
    "reproduce",
    "trajectory",
    "correlate",
    "study",
    "version",
    "cache",
    "zoo",
)
for _name in COMMANDS:
    importlib.import_module(f"{__name__}.{_name}")

__all__ = [
    "COMMANDS",
    "DEBUG",
    "DEMO_ALIASES",
    "app",
    "cache_app",
    "fail",
    "handle_errors",
    "main",
    "resolve_model",
    "zoo_app",
]
