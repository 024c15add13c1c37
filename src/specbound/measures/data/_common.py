"""What every data-dependent measure shares (SPEC 12): the examples, the forward pass, the
training accuracy, the perturbed parameters with their bit-exact restore, and the bisection.

torch is imported inside the functions (it is optional for specbound).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ... import extras
from ...adapters.registry import adapter_for
from ...errors import SpecboundError
from ...io.checkpoint import load_checkpoint

#: SPEC 12 constants.
BISECTION_RANGE = (0.0, 2.0)
BISECTION_STEPS = 15
TARGET_DEVIATION = 0.1
DEVIATION_TOLERANCE = 0.01
DRAWS = 10  # M
MAG_EPS = 1e-3  # epsilon of the magnitude-aware forms
ASCENT_STEPS = 10


@dataclass
class Examples:
    """The training examples a data measure evaluates on: chunks of (inputs, labels) on the
    model's device, ``m`` of them in all, and ``n`` the training-set size. ``batches``: the
    index in the user's ``batches`` each chunk came from (for messages)."""

    chunks: list[tuple[Any, Any]]
    m: int
    n: int
    logits_fn: Callable[[Any, Any], Any] | None = None
    batches: list[int] = field(default_factory=list)


def _batch_size(inputs: Any, where: str) -> int:
    torch = extras.torch()

    if isinstance(inputs, torch.Tensor):
        if inputs.dim() == 0:
            raise SpecboundError(f"{where}: inputs must have a batch dimension, got a scalar")
        return int(inputs.shape[0])
    if isinstance(inputs, Mapping):
        sizes = {int(v.shape[0]) for v in inputs.values() if isinstance(v, torch.Tensor)}
        if len(sizes) != 1:
            raise SpecboundError(
                f"{where}: the input tensors must share one batch size, got {sorted(sizes)}"
            )
        return sizes.pop()
    raise SpecboundError(
        f"{where}: inputs must be a tensor or a dict of tensors, got {type(inputs).__name__}"
    )


def _take(inputs: Any, k: int) -> Any:
    torch = extras.torch()

    if isinstance(inputs, torch.Tensor):
        return inputs[:k]
    return {key: (v[:k] if isinstance(v, torch.Tensor) else v) for key, v in inputs.items()}


def _to(inputs: Any, device: Any) -> Any:
    torch = extras.torch()

    if isinstance(inputs, torch.Tensor):
        return inputs.to(device)
    return {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}


def check_finite_inputs(inputs: Any, where: str) -> None:
    """One-line SpecboundError when a floating tensor of ``inputs`` (a tensor or a mapping of
    tensors) holds NaN or inf: every measure computed on it would be a number of no meaning."""
    torch = extras.torch()

    items = inputs.items() if isinstance(inputs, Mapping) else [(None, inputs)]
    for key, t in items:
        if isinstance(t, torch.Tensor) and t.is_floating_point() and not bool(t.isfinite().all()):
            what = f"inputs['{key}']" if key is not None else "inputs"
            raise SpecboundError(
                f"{where}: {what} hold NaN or inf; data measures need finite inputs "
                "(clean or drop those examples)"
            )


def check_finite_parameters(model: Any) -> None:
    """One-line SpecboundError naming the first parameter, or floating buffer (batch-norm
    statistics, say: they enter the forward pass too), of ``model`` with NaN or inf."""
    tensors = [("parameter", *kv) for kv in model.named_parameters()]
    tensors += [("buffer", *kv) for kv in model.named_buffers()]
    for kind, name, p in tensors:
        if p.is_floating_point() and not bool(p.detach().isfinite().all()):
            raise SpecboundError(
                f"the model's {kind} '{name}' holds NaN or inf; data measures need finite "
                "weights (load a checkpoint from before the divergence)"
            )


def collect_examples(
    batches: Iterable[Any],
    max_examples: int,
    device: Any,
    n: int | None = None,
    logits_fn: Callable[[Any, Any], Any] | None = None,
) -> Examples:
    """The first ``max_examples`` examples of ``batches`` (an iterable of ``(inputs, labels)``)
    on ``device``. ``n`` (the training-set size) defaults to the number of examples in
    ``batches``, which is then read to its end; with ``n`` given, reading stops at
    ``max_examples``."""
    torch = extras.torch()

    if isinstance(batches, (torch.Tensor, Mapping, str, bytes)) or not hasattr(batches, "__iter__"):
        raise SpecboundError(
            f"batches must be an iterable of (inputs, labels) pairs, got {type(batches).__name__}"
        )
    chunks: list[tuple[Any, Any]] = []
    sources: list[int] = []
    m = total = 0
    for i, batch in enumerate(batches):
        where = f"batches[{i}]"
        if not isinstance(batch, Sequence) or len(batch) != 2:
            raise SpecboundError(f"{where} must be a pair (inputs, labels)")
        inputs, labels = batch
        labels = torch.as_tensor(labels)
        if labels.dim() != 1 or labels.dtype.is_floating_point or labels.dtype == torch.bool:
            raise SpecboundError(
                f"{where}: labels must be a 1-D tensor of class indices, got shape "
                f"{tuple(labels.shape)} {labels.dtype}"
            )
        size = _batch_size(inputs, where)
        check_finite_inputs(inputs, where)
        if size != labels.shape[0]:
            raise SpecboundError(f"{where}: {size} inputs but {labels.shape[0]} labels")
        total += size
        if m < max_examples and size > 0:
            k = min(size, max_examples - m)
            chunks.append((_to(_take(inputs, k), device), labels[:k].to(device).long()))
            sources.append(i)
            m += k
        if n is not None and m >= max_examples:
            break
    if m == 0:
        raise SpecboundError("batches holds no examples; pass the training data")
    return Examples(chunks, m, total if n is None else n, logits_fn, sources)


def logits_of(model: Any, inputs: Any, logits_fn: Callable[[Any, Any], Any] | None) -> Any:
    """Class logits (batch x classes) of ``model`` on ``inputs``: ``logits_fn(model, inputs)``
    when given, else ``model(**inputs)`` / ``model(inputs)``; an output object's ``.logits``."""
    torch = extras.torch()

    try:
        if logits_fn is not None:
            out = logits_fn(model, inputs)
        elif isinstance(inputs, Mapping):
            out = model(**inputs)
        else:
            out = model(inputs)
    except (RuntimeError, TypeError, ValueError, IndexError) as exc:  # not MemoryError
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SpecboundError(
            f"the model's forward pass failed on the training examples ({reason}); pass inputs "
            "of the dtype, shape and device the model takes, or logits_fn"
        ) from None
    if not isinstance(out, torch.Tensor) and hasattr(out, "logits"):
        out = out.logits
    if not isinstance(out, torch.Tensor) or out.dim() != 2:
        what = type(out).__name__ if not isinstance(out, torch.Tensor) else f"shape {out.shape}"
        raise SpecboundError(
            f"the model's output is not class logits (batch x classes), got {what}; "
            "pass logits_fn=lambda model, inputs: ... returning them"
        )
    return out


def accuracy(model: Any, ex: Examples, *, finite: bool = False) -> float:
    """Training accuracy on the examples (argmax; ties go to the first class). ``finite``: the
    logits must hold no NaN or inf (the unperturbed model's: a perturbed one may overflow)."""
    torch = extras.torch()

    correct = 0
    with torch.no_grad():
        for i, (inputs, labels) in enumerate(ex.chunks):
            logits = logits_of(model, inputs, ex.logits_fn)
            if finite and not bool(logits.isfinite().all()):
                where = f"batches[{ex.batches[i]}]" if i < len(ex.batches) else "the examples"
                raise SpecboundError(
                    f"{where}: the model's logits hold NaN or inf; data measures need finite "
                    "logits (check logits_fn and the model's forward pass)"
                )
            correct += int((logits.argmax(dim=1) == labels).sum())
    return correct / ex.m


def check_labels(logits: Any, labels: Any) -> None:
    if int(labels.min()) < 0 or int(labels.max()) >= logits.shape[1]:
        raise SpecboundError(
            f"labels must be class indices in 0..{logits.shape[1] - 1}, got "
            f"{int(labels.min())}..{int(labels.max())}"
        )


# --- the parameters a measure perturbs -------------------------------------------------------


def matrix_parameter_names(model: Any) -> set[str]:
    """Names of the parameters holding SPEC 9's weight matrices 𝒲 (the adapter's roles)."""
    cfg_model = model
    config = getattr(model, "config", None)
    if config is None:
        raise SpecboundError(
            'perturb="matrices" needs a Hugging Face model (with .config) to find the weight '
            'matrices; use perturb="all"'
        )
    state = {k: v for k, v in cfg_model.state_dict().items()}
    adapter = adapter_for(load_checkpoint(state, config, name=type(model).__name__))
    names: set[str] = set()
    for layer in range(adapter.spec().num_layers):
        roles = adapter.layer_roles(layer).roles
        for role in ("query", "key", "value", "output", "ffn_gate", "ffn_in", "ffn_out"):
            names.update(roles.get(role, []))
    return names


def perturbed_parameters(model: Any, perturb: str) -> list[tuple[str, Any]]:
    """(name, parameter) pairs perturbed: every parameter ("all", as the reference does) or the
    𝒲 matrices only ("matrices"). Tied parameters appear once."""
    params = list(model.named_parameters())
    if perturb == "matrices":
        keep = matrix_parameter_names(model)
        params = [(k, p) for k, p in params if k in keep]
    params = [(k, p) for k, p in params if p.numel() > 0]
    if not params:
        raise SpecboundError(f'perturb="{perturb}": the model has no parameter to perturb')
    return params


@contextmanager
def evaluation(model: Any, params: list[tuple[str, Any]]) -> Iterator[list[Any]]:
    """Eval mode and copies of ``params``; on exit every parameter is restored bit-exactly
    (``copy_`` of the copy), every module's train/eval flag, ``requires_grad`` and the global
    torch RNG state (CPU and CUDA) are as they were."""
    torch = extras.torch()

    modes = [(mod, mod.training) for mod in model.modules()]
    grads = [p.requires_grad for _, p in params]
    cpu_rng = torch.random.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    saved = [p.detach().clone() for _, p in params]
    model.eval()
    try:
        yield saved
    finally:
        with torch.no_grad():
            for (_, p), w in zip(params, saved, strict=True):
                p.copy_(w)
        for (_, p), g in zip(params, grads, strict=True):
            p.requires_grad_(g)
        for mod, was in modes:
            mod.training = was
        torch.random.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)


def set_parameters(params: list[tuple[str, Any]], values: Sequence[Any]) -> None:
    """Write ``values`` into the parameters in place."""
    torch = extras.torch()

    with torch.no_grad():
        for (_, p), v in zip(params, values, strict=True):
            p.copy_(v)


def generator(device: Any, seed: int, stream: int) -> Any:
    """A torch.Generator on ``device`` for measure ``stream`` of ``seed`` (independent streams,
    so one measure's value does not depend on which others are asked for)."""
    import numpy as np

    torch = extras.torch()

    state = int(np.random.SeedSequence([seed, stream]).generate_state(1, dtype=np.uint64)[0])
    g = torch.Generator(device=device)
    g.manual_seed(state & 0x7FFF_FFFF_FFFF_FFFF)
    return g


# --- the bisection ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Bisection:
    """The result of :func:`bisect`: the last midpoint ``value`` (σ* or α*), the deviation
    there, the steps taken, whether ``|d - target| < tol`` was reached, and ``at_end``:
    "upper" when no step ever lowered the upper end (the deviation never exceeded the
    target: σ* sits at the interval's upper end to the bisection's resolution), "lower" when
    no step raised the lower end (it exceeded the target at every σ tried), else None."""

    value: float
    deviation: float
    steps: int
    converged: bool
    at_end: str | None


def bisect(
    deviation: Callable[[float], float],
    lo: float = BISECTION_RANGE[0],
    hi: float = BISECTION_RANGE[1],
    steps: int = BISECTION_STEPS,
    target: float = TARGET_DEVIATION,
    tol: float = DEVIATION_TOLERANCE,
) -> Bisection:
    """Bisection for the scale at which ``deviation(scale)`` reaches ``target``: at most
    ``steps`` midpoints of [lo, hi]; stop when ``|d - target| < tol``; ``d > target`` lowers
    the upper end, else the lower end rises. The answer is the last midpoint (as the
    reference implementation returns)."""
    lo0, hi0 = lo, hi
    mid, d, taken = (lo + hi) / 2, math.nan, 0
    converged = False
    for _ in range(steps):
        taken += 1
        mid = (lo + hi) / 2
        d = float(deviation(mid))
        if abs(d - target) < tol:
            converged = True
            break
        if d > target:
            hi = mid
        else:
            lo = mid
    at_end = None
    if not converged:
        at_end = "upper" if hi == hi0 else "lower" if lo == lo0 else None
    return Bisection(mid, d, taken, converged, at_end)
