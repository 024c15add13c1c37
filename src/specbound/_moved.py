"""Old module paths of specbound that moved in the 0.x layout change, kept importable.

``import specbound.study`` (or any name in :data:`MOVED`) returns the module's new home with a
``DeprecationWarning``; nothing is imported until an old path is asked for. New code imports the
new paths (or the names re-exported by ``specbound`` itself).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

#: old module path -> new module path
MOVED = {
    "specbound.bounds": "specbound.measures.bounds",
    "specbound.cache": "specbound.linalg.cache",
    "specbound.checkpoint": "specbound.io.checkpoint",
    "specbound.correlate_report": "specbound.report.pages.correlate",
    "specbound.hub": "specbound.io.hub",
    "specbound.lapack": "specbound.linalg.lapack",
    "specbound.spectra": "specbound.linalg.spectra",
    "specbound.study": "specbound.studies.scale",
    "specbound.summary": "specbound.report.terminal",
    "specbound.torch_backend": "specbound.linalg.torch_backend",
    "specbound.trajectory_report": "specbound.report.pages.trajectory",
    "specbound.verdict": "specbound.studies.scale.verdict",
    "specbound.weights": "specbound.linalg.weights",
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of :data:`MOVED`; loading one returns the module at its new path."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}; import it from there", DeprecationWarning, stacklevel=2
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was imported at its new path."""


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
