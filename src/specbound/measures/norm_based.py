"""``norm_based``: log10 B_norm_based (SPEC 5; Edelman et al. 2022, BERT-adapted).

    B = (1 + sum_l alpha(l)^(2/3) xi(l))^(3/2)

computed in log space by ``specbound.bounds.compute_bounds``; this entry reads its result.
"""

from __future__ import annotations

from .base import Measure, MeasureInput, MeasureValue


def compute(x: MeasureInput) -> MeasureValue:
    return MeasureValue(x.details.bounds.norm_based.log10)


MEASURE = Measure(
    "norm_based",
    "log10 of the norm-based proxy (Edelman et al. 2022, BERT-adapted)",
    compute,
    log10=True,
    bound_form=True,
    needs_weights=False,
)
