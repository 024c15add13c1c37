"""specbound: spectral complexity and generalization-bound proxies for trained Transformers.

>>> import specbound
>>> a = specbound.analyze("path/to/checkpoint")      # doctest: +SKIP
>>> a.bounds.spectrum_adaptive.log10                  # doctest: +SKIP

Imports are lazy so that ``specbound`` on the command line starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .analysis import Analysis, analyze
    from .bounds import Bounds, BoundValue
    from .errors import SpecboundError
    from .study import Study, scale

__all__ = [
    "Analysis",
    "BoundValue",
    "Bounds",
    "SpecboundError",
    "Study",
    "__version__",
    "analyze",
    "scale",
]

_LAZY = {
    "analyze": "analysis",
    "Analysis": "analysis",
    "Bounds": "bounds",
    "BoundValue": "bounds",
    "SpecboundError": "errors",
    "scale": "study",
    "Study": "study",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'specbound' has no attribute {name!r}")
