"""Core types shared by every layer: model sizes, one block's weights, matrix types.

Imports nothing else of specbound's (``ModelSpec.l_phi`` looks the constant up lazily).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .activations import lipschitz_constant

#: The canonical matrices of SPEC.md section 2, in the row order of ``Spectra``.
MATRIX_TYPES = ("QK", "OV", "M_in", "M_out")
QK, OV, M_IN, M_OUT = range(4)

#: Roles of the raw weight matrices (SPEC 9's set W), as in mapping files.
WEIGHT_ROLES = ("query", "key", "value", "output", "ffn_in", "ffn_out")


@dataclass(frozen=True)
class ModelSpec:
    """Sizes and facts the bounds need; ``num_layers`` is depth in applications (ALBERT: L)."""

    architecture: str
    num_layers: int
    hidden_size: int
    num_heads: int
    head_dim: int
    intermediate_size: int
    activation: str
    num_kv_heads: int | None = None
    adaptations: tuple[str, ...] = ()

    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads or self.num_heads

    @property
    def l_phi(self) -> float:
        return lipschitz_constant(self.activation)


@dataclass
class LayerWeights:
    """One block's weights in ``nn.Linear`` layout (out, in), float64.

    ``wk``/``wv`` have ``num_kv_heads * head_dim`` rows (grouped-query attention); query head h
    reads key/value head ``h // (num_heads // num_kv_heads)``. ``w_in`` may stack several
    matrices (gate and up of a gated FFN). ``share_key``: blocks with equal keys hold the same
    weights (ALBERT), so their spectra are computed once.
    """

    index: int
    wq: np.ndarray
    wk: np.ndarray
    wv: np.ndarray
    wo: np.ndarray
    w_in: np.ndarray
    w_out: np.ndarray
    share_key: Any = None

    def raw(self) -> dict[str, np.ndarray]:
        """The raw weights of SPEC 9's set W by role, in ``nn.Linear`` layout (out, in)."""
        return {
            "query": self.wq,
            "key": self.wk,
            "value": self.wv,
            "output": self.wo,
            "ffn_in": self.w_in,
            "ffn_out": self.w_out,
        }


@dataclass
class TensorRoles:
    """Which tensor names feed each role of block ``layer`` (for ``inspect`` and errors)."""

    layer: int
    roles: dict[str, list[str]] = field(default_factory=dict)
