"""Lipschitz constants L_phi of activations, by the names used in Hugging Face configs.

L_phi = sup |phi'(x)|:
- GELU x*Phi(x): max derivative 1.1289 at x = sqrt(2); SPEC.md rounds it to 1.13. The tanh
  approximation (gelu_new, gelu_pytorch_tanh, gelu_fast) has the same maximum to 3 digits.
- SiLU/Swish x*sigmoid(x): 1.0998 (at x = 2.3994); quick_gelu x*sigmoid(1.702x) has the same
  maximum, 1.0998, since its derivative is SiLU's at 1.702x.
- ReLU, leaky ReLU, tanh, identity: 1. ReLU^2 is not Lipschitz: refused (use --l-phi).
"""

from __future__ import annotations

from .errors import ConfigError

GELU = 1.13
SILU = 1.0998

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
    "relu": 1.0,
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
            f"{', '.join(sorted(LIPSCHITZ))}; pass --l-phi to set its Lipschitz constant"
        )
    return LIPSCHITZ[key]
