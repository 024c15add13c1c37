"""Spectral regularization of a zoo model (the ``spectral_reg`` axis, issue 52).

The training loss of a model with ``spectral_reg`` ``nuclear`` (``spectral``) and strength
lambda is ``CE + lambda * sum_W ||W||_*`` (``CE + lambda * sum_W ||W||_2``), the sum over the
raw weights W_Q, W_K, W_V, W_O, W_in and W_out of every layer (SPEC 9's raw weights, named by
the model's adapter: ``adapters.adapter_for(...).tensor_roles()``). Both norms come from
``torch.linalg.svdvals`` (sum, resp. largest singular value), differentiable on the training
device, and take a leading batch axis, so the one-at-a-time path (``single.py``) and the
batched ensemble path (``ensemble.py``, stacked parameters ``(E, out, in)``) use the same
function. The stopping rule still reads the training cross-entropy alone.
"""

from __future__ import annotations

from typing import Any

from ... import extras
from ...adapters.registry import adapter_for
from ...io.checkpoint import load_checkpoint

#: The adapter roles of the regularized weights: W_Q, W_K, W_V, W_O, W_in, W_out.
ROLES = ("query", "key", "value", "output", "ffn_in", "ffn_out")


def penalized_names(model: Any) -> list[str]:
    """Parameter names of W_Q, W_K, W_V, W_O, W_in, W_out of every layer of ``model`` (an
    ``nn.Module``), from the model's adapter, in depth order."""
    adapter = adapter_for(load_checkpoint(model, None), None)
    params = {n for n, _ in model.named_parameters()}
    names = [t for r in adapter.tensor_roles() for role in ROLES for t in r.roles[role]]
    missing = [n for n in names if n not in params]
    if missing:  # a tied or buffer weight: not a trainable parameter
        raise ValueError(f"spectral_reg: {missing[0]} is not a parameter of the model")
    return names


def reg_of(params: dict[str, Any]) -> tuple[str, float]:
    """``(kind, lambda)`` of a grid point: ``("none", 0.0)`` without the axes."""
    kind = str(params.get("spectral_reg", "none"))
    strength = float(params.get("spectral_reg_strength", 0.0))
    return (kind, strength) if kind != "none" and strength > 0 else ("none", 0.0)


def norm_sums(weights: list[Any]) -> tuple[Any, Any]:
    """``(sum ||W||_*, sum ||W||_2)`` over ``weights`` (each ``(..., out, in)``; a leading
    batch axis gives one sum per member), differentiable (``torch.linalg.svdvals``)."""
    torch = extras.torch()

    nuc = None
    spec = None
    for w in weights:
        s = torch.linalg.svdvals(w)
        a, b = s.sum(dim=-1), s.amax(dim=-1)
        nuc = a if nuc is None else nuc + a
        spec = b if spec is None else spec + b
    if nuc is None or spec is None:
        raise ValueError("spectral_reg: the model has no regularized weights")
    return nuc, spec


def penalty(weights: list[Any], kind: str, strength: float) -> Any:
    """``strength * sum ||W||`` for one model (``kind`` ``nuclear`` or ``spectral``)."""
    nuc, spec = norm_sums(weights)
    return strength * (nuc if kind == "nuclear" else spec)
