"""Sharpness (SPEC 12; Jiang et al. 2020 "sharpness.orig", "sharpness.mag").

The deviation at α is acc(w) - acc(w + u*), u* the worst perturbation (lowest training
accuracy) among the iterates of 10 steps of projected sign-gradient ascent on the training
cross-entropy,

    u_0 ~ Uniform(box),   u_{t+1} = clip_box(u_t + (α/4) sign(∇_u CE(w + u_t))),

inside the box |u_j| <= α (``sharpness``) or |u_j| <= α|w_j| + ε, ε = 1e-3 (``sharpness_mag``).
α* by the bisection of the flatness measures on [0, 2]; value 1/α*².
"""

from __future__ import annotations

from typing import Any

from ... import extras
from ._common import (
    ASCENT_STEPS,
    MAG_EPS,
    Bisection,
    Examples,
    bisect,
    check_labels,
    logits_of,
    set_parameters,
)


def box(w: Any, alpha: float, magnitude: bool) -> Any:
    """The half-widths of the box: α, or α|w| + ε elementwise."""
    if not magnitude:
        return alpha
    return alpha * w.abs() + MAG_EPS


def _loss_and_accuracy(
    model: Any, ex: Examples, params: list[tuple[str, Any]], grad: bool
) -> tuple[float, list[Any] | None]:
    """Training accuracy at the current parameters and (``grad``) the gradient of the summed
    cross-entropy with respect to the perturbed parameters (``autograd.grad``: the
    parameters' ``.grad`` is left alone)."""
    torch = extras.torch()

    tensors = [p for _, p in params]
    grads = [torch.zeros_like(p) for p in tensors] if grad else None
    correct = 0
    for inputs, labels in ex.chunks:
        with torch.set_grad_enabled(grad):
            logits = logits_of(model, inputs, ex.logits_fn)
            correct += int((logits.detach().argmax(dim=1) == labels).sum())
            if grad:
                check_labels(logits, labels)
                loss = torch.nn.functional.cross_entropy(logits.float(), labels, reduction="sum")
                parts = torch.autograd.grad(loss, tensors, allow_unused=True)
                for g, part in zip(grads, parts, strict=True):  # type: ignore[arg-type]
                    if part is not None:
                        g.add_(part)
    return correct / ex.m, grads


def sharpness_alpha(
    model: Any,
    ex: Examples,
    params: list[tuple[str, Any]],
    saved: list[Any],
    acc0: float,
    gen: Any,
    magnitude: bool,
    steps: int = ASCENT_STEPS,
) -> Bisection:
    """α* of ``sharpness`` (``magnitude=False``) or ``sharpness_mag``."""
    torch = extras.torch()

    for _, p in params:
        p.requires_grad_(True)

    def deviation(alpha: float) -> float:
        bounds = [box(w, alpha, magnitude) for w in saved]
        us = []
        for w, b in zip(saved, bounds, strict=True):
            r = torch.rand(w.shape, generator=gen, device=w.device, dtype=w.dtype)
            us.append((2 * r - 1) * b)
        worst = float("inf")
        for t in range(steps + 1):
            set_parameters(params, [w + u for w, u in zip(saved, us, strict=True)])
            acc, grads = _loss_and_accuracy(model, ex, params, grad=t < steps)
            worst = min(worst, acc)
            if grads is None:
                break
            with torch.no_grad():
                us = [
                    torch.clamp(u + (alpha / 4) * g.sign(), -b, b)
                    for u, g, b in zip(us, grads, bounds, strict=True)
                ]
        set_parameters(params, saved)
        return acc0 - worst

    return bisect(deviation)
