"""Data-dependent measures (SPEC 12): flatness, sharpness and margins, next to the bounds.

They need the model's training data: a torch model and an iterable of ``(inputs, labels)``
batches. One module per family -- ``flatness`` (pacbayes_flatness, pacbayes_mag_flatness),
``sharpness`` (sharpness, sharpness_mag), ``margin`` (inverse_margin,
log_spectral_product_over_margin, <bound>_per_margin_sqrt_n) -- and ``_common`` (examples,
forward pass, accuracy deviation, bisection, restore). ``run.compute`` evaluates them;
``specbound.data_measures`` adds the weight measures the margin forms need. Importing this
package does not import torch.
"""

from __future__ import annotations

from ._common import Examples, collect_examples
from .registry import (
    BOUNDS,
    DATA_MEASURES,
    SEARCH,
    DataMeasure,
    data_measure_names,
    resolve_data_measures,
)
from .run import DataMeasures, compute

__all__ = [
    "BOUNDS",
    "DATA_MEASURES",
    "SEARCH",
    "DataMeasure",
    "DataMeasures",
    "Examples",
    "collect_examples",
    "compute",
    "data_measure_names",
    "resolve_data_measures",
]
