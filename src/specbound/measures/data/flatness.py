"""PAC-Bayes flatness (SPEC 12; Jiang et al. 2020 "pacbayes.flatness", "pacbayes.mag.flatness").

    d(σ) = acc(w) - (1/M) Σ_{j=1..M} acc(w + u_j),
    u_j ~ N(0, σ² I)                   (pacbayes_flatness)
    u_j ~ N(0, σ² w² + ε²), ε = 1e-3   (pacbayes_mag_flatness; the variance, elementwise)

σ* by bisection on [0, 2] (15 steps, stop when |d - 0.1| < 0.01), M = 10; value 1/σ*².
(The reference implementation passes σ²w² + ε² as the standard deviation; we follow the
paper's variance.)
"""

from __future__ import annotations

from typing import Any

from ... import extras
from ._common import DRAWS, MAG_EPS, Bisection, Examples, accuracy, bisect, set_parameters


def noise_scale(w: Any, sigma: float, magnitude: bool) -> Any:
    """The standard deviation of u: σ, or sqrt(σ² w² + ε²) elementwise."""
    if not magnitude:
        return sigma
    return (sigma**2 * w.square() + MAG_EPS**2).sqrt()


def flatness_sigma(
    model: Any,
    ex: Examples,
    params: list[tuple[str, Any]],
    saved: list[Any],
    acc0: float,
    gen: Any,
    magnitude: bool,
    draws: int = DRAWS,
) -> Bisection:
    """σ* of ``pacbayes_flatness`` (``magnitude=False``) or ``pacbayes_mag_flatness``."""
    torch = extras.torch()

    def deviation(sigma: float) -> float:
        accs = []
        for _ in range(draws):
            values = []
            for w in saved:
                z = torch.randn(w.shape, generator=gen, device=w.device, dtype=w.dtype)
                values.append(w + z * noise_scale(w, sigma, magnitude))
            set_parameters(params, values)
            accs.append(accuracy(model, ex))
        set_parameters(params, saved)
        return acc0 - sum(accs) / len(accs)

    return bisect(deviation)
