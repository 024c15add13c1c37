"""``spectrum_adaptive``: log10 B_spectrum_adaptive (SPEC 4; Sakai & Imaizumi 2026).

    B = sum over QK, OV, M_in, M_out of min_p S_p(A)^(1/(p+2)) s^(p/(p+2)) N^((p+1)/(p+2)) + sqrt(L)

The per-matrix work is in ``specbound.bounds.compute_bounds`` (shared with norm_based: both use
the depth factor alpha); this entry reads its result.
"""

from __future__ import annotations

from .base import Measure, MeasureInput, MeasureValue


def compute(x: MeasureInput) -> MeasureValue:
    return MeasureValue(x.details.bounds.spectrum_adaptive.log10)


MEASURE = Measure(
    "spectrum_adaptive",
    "log10 of the spectrum-adaptive proxy (Sakai & Imaizumi 2026), p chosen per matrix",
    compute,
    log10=True,
    bound_form=True,
    needs_weights=False,
)
