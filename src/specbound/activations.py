"""Lipschitz constants L_phi of activations, by the names used in Hugging Face configs.

L_phi = sup |phi'(x)|:
- GELU x*Phi(x): max derivative 1.12890 at x = sqrt(2); SPEC.md rounds it up to 1.13. The tanh
  approximation (gelu_new, gelu_pytorch_tanh, gelu_fast) peaks at 1.12899: also 1.13.
- SiLU/Swish x*sigmoid(x): 1.09984 (at x = 2.3994), rounded up to 1.0999; quick_gelu
  x*sigmoid(1.702x) has the same maximum, since its derivative is SiLU's at 1.702x.
- Mish x*tanh(softplus(x)): 1.08850, rounded up to 1.0886.
- ReLU, ReLU6, leaky ReLU, tanh, identity: 1; sigmoid: 1/4. ReLU^2 is not Lipschitz: refused
  (use --l-phi).

Constants are rounded up so that they stay upper bounds; ``tests/test_activations.py``
checks each against the maximum of |phi'| of transformers' own implementation.
"""

from __future__ import annotations

from .errors import ConfigError, Param

GELU = 1.13
SILU = 1.0999
MISH = 1.0886

LIPSCHITZ: dict[str, float] = {
    "gelu": GELU,
    "gelu_new": GELU,
    "gelu_fast": GELU,
    "gelu_pytorch_tanh": GELU,
    "gelu_python": GELU,
    "gelu_accurate": GELU,
    "gelu_10": GELU,
    "quick_gelu": SILU,
    "silu": SILU,
    "swish": SILU,
    "mish": MISH,
    "relu": 1.0,
    "relu6": 1.0,
    "sigmoid": 0.25,
    "leaky_relu": 1.0,
    "tanh": 1.0,
    "linear": 1.0,
    "identity": 1.0,
}


def lipschitz_constant(activation: str) -> float:
    """L_phi for an activation name from config.json (case-insensitive)."""
    key = str(activation).lower().replace("-", "_")
    if key.startswith("gated_"):  # T5 v1.1 "gated-gelu"
        key = key[len("gated_") :]
    if key not in LIPSCHITZ:
        raise ConfigError(
            f"unknown activation '{activation}' in config.json: specbound knows "
            f"{', '.join(sorted(LIPSCHITZ))}; pass ",
            Param("l_phi", ""),
            " to set its Lipschitz constant",
        )
    return LIPSCHITZ[key]
