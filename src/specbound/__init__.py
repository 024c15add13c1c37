"""specbound: spectral complexity and generalization-bound proxies for trained Transformers.

>>> import specbound
>>> a = specbound.analyze("path/to/checkpoint")      # doctest: +SKIP
>>> a.bounds.spectrum_adaptive.log10                  # doctest: +SKIP
>>> specbound.describe("path/to/checkpoint")          # doctest: +SKIP  (tensors, before work)
>>> a.details(), a.summary()                          # doctest: +SKIP  (DataFrame, dict)

Logs: every ``log10`` is base 10; ``BoundValue.ln`` is the natural log (``.log``, its old name,
is deprecated). ``spectral_norm`` is sigma_max, not WeightWatcher's lambda_max = sigma_max^2.

Imports are lazy so that ``specbound`` on the command line starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .analysis import Analysis, analyze
    from .errors import SpecboundError
    from .inspection import describe
    from .measures.bounds import Bounds, BoundValue
    from .studies.correlate.result import Correlation
    from .studies.correlate.run import correlate
    from .studies.scale.run import Study, scale
    from .track.live import data_measures

__all__ = [
    "Analysis",
    "BoundValue",
    "Bounds",
    "Correlation",
    "SpecboundError",
    "Study",
    "__version__",
    "analyze",
    "correlate",
    "data_measures",
    "describe",
    "scale",
]

_LAZY = {
    "analyze": "analysis",
    "data_measures": "track.live",  # SPEC 12
    "Analysis": "analysis",
    "Bounds": "measures.bounds",
    "BoundValue": "measures.bounds",
    "describe": "inspection",
    "SpecboundError": "errors",
    "scale": "studies.scale.run",
    "Study": "studies.scale.run",
    "correlate": "studies.correlate.run",
    "Correlation": "studies.correlate.result",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'specbound' has no attribute {name!r}")
