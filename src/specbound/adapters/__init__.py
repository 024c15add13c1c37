"""Architecture adapters: state dict -> canonical matrices. One module per architecture."""

from .base import Adapter, LayerWeights, ModelSpec, TensorRoles
from .registry import get_adapter, register, supported_model_types

__all__ = [
    "Adapter",
    "LayerWeights",
    "ModelSpec",
    "TensorRoles",
    "get_adapter",
    "register",
    "supported_model_types",
]
