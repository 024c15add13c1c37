"""``htsr_alpha`` = mean over W of the power-law exponent alpha(W) of its eigenvalue tail
(heavy-tailed self-regularization, Martin & Mahoney 2021; SPEC 9).

lambda_1 <= ... <= lambda_n: the squared singular values of W above the rank threshold of SPEC 3;
alpha(W) is undefined when n < 20. For each candidate i = 1..n-1 (x_min = lambda_i, tail size
t = n - i + 1), the Clauset-Shalizi-Newman maximum-likelihood fit and its Kolmogorov distance:

    alpha_i = 1 + t / sum_{j >= i} ln(lambda_j / lambda_i)
    D_i     = max_{j >= i} | 1 - (lambda_j / lambda_i)^(1 - alpha_i) - (j - i) / t |

(D_i is taken as 1, its largest possible value, when alpha_i <= 1.) alpha(W) = alpha_i at the
first i minimizing D_i, as WeightWatcher 0.7.7 computes its default ``alpha``. The fit is in
``powerlaw`` (shared with ``htsr_alpha_weighted``).
"""

from __future__ import annotations

from .base import Measure, MeasureInput, MeasureValue
from .powerlaw import MIN_EIGENVALUES, PowerLawFit, mean_alpha, power_law_fit, weight_fit

__all__ = ["MEASURE", "MIN_EIGENVALUES", "PowerLawFit", "power_law_fit", "weight_fit"]


def compute(x: MeasureInput) -> MeasureValue:
    return mean_alpha(x, weighted=False)


MEASURE = Measure(
    "htsr_alpha",
    "mean power-law exponent alpha of the weight eigenvalue tails (WeightWatcher's alpha)",
    compute,
)
