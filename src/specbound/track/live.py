"""A live ``nn.Module``: its weights in place, its Hugging Face model, its device, and the
public :func:`data_measures` (SPEC 12), which joins the weight measures of ``analyze`` (for
the margin-normalized forms) to the data measures of :mod:`specbound.measures.data`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..analysis import analyze
from ..errors import SpecboundError
from ..measures.data import BOUNDS, compute, resolve_data_measures


def live_state(module: Any) -> dict[str, Any]:
    """``module.state_dict()`` without tied duplicates (tensors sharing storage), as
    ``save_pretrained`` writes it; tensors are the live ones, not copies."""
    out: dict[str, Any] = {}
    seen: set[tuple[Any, ...]] = set()
    for name, t in module.state_dict().items():
        if hasattr(t, "data_ptr") and t.numel() > 0:
            key = (str(t.device), t.data_ptr(), str(t.dtype), tuple(t.shape), tuple(t.stride()))
            if key in seen:
                continue
            seen.add(key)
        out[name] = t
    return out


def find_model(module: Any) -> Any:
    """``module`` if it has a Hugging Face ``.config``, else its first submodule that has one."""

    def has_config(m: Any) -> bool:
        cfg = getattr(m, "config", None)
        return cfg is not None and (hasattr(cfg, "to_dict") or isinstance(cfg, Mapping))

    if has_config(module):
        return module
    if hasattr(module, "named_modules"):
        for _, sub in module.named_modules():
            if has_config(sub):
                return sub
    raise SpecboundError(
        f"{type(module).__name__} has no Hugging Face .config (nor does any submodule); pass "
        "the transformers model itself, or config= with model_type and sizes"
    )


def model_device(module: Any) -> str | None:
    """The analyze device for ``module``: its torch device when cpu/cuda, else None (numpy)."""
    for p in module.parameters():
        dev = p.device
        if dev.type == "cuda":
            return str(dev)
        if dev.type == "cpu":
            return "cpu"
        return None
    return None


def analyze_live(
    module: Any,
    config: Any,
    measures: list[str],
    *,
    init: Any = None,
    device: str | None = None,
    l_phi: float | None = None,
    grid_m: int | None = None,
) -> Any:
    """``analyze`` of the live weights of ``module`` (no copy to disk, no cache)."""
    return analyze(
        live_state(module),
        config=config,
        measures=measures,
        init=init,
        cache=False,
        device=device,
        l_phi=l_phi,
        grid_m=grid_m,
        name=type(module).__name__,
    )


def weight_measures_for_margins(names: list[str]) -> list[str]:
    """The weight measures the chosen margin-normalized data measures read."""
    need = []
    if "log_spectral_product_over_margin" in names:
        need.append("log_spectral_product")
    need += [b for b in BOUNDS if f"{b}_per_margin_sqrt_n" in names]
    return need


def refuse_meta(model: Any) -> None:
    """One-line SpecboundError when any parameter of a torch ``model`` is on the meta device
    (shapes without values: every number computed from it would be meaningless)."""
    params = getattr(model, "parameters", None)
    if not callable(params):
        return
    try:
        it = params()
    except TypeError:
        return
    if any(getattr(p, "is_meta", False) for p in it):
        raise SpecboundError(
            "the model's parameters are on the meta device; load real weights first"
        )


def data_measures(
    model: Any,
    batches: Iterable[Any],
    *,
    measures: Iterable[str] | str | None = None,
    max_examples: int = 2048,
    seed: int = 0,
    perturb: str = "all",
    logits_fn: Callable[[Any, Any], Any] | None = None,
    n: int | None = None,
    weights: Any = None,
    config: Any = None,
) -> Any:
    """SPEC 12's data-dependent measures of a torch model on its training data.

    ``batches``: an iterable of ``(inputs, labels)`` (inputs a tensor or a dict of tensors,
    labels class indices); the first ``max_examples`` examples are used. ``model(inputs)`` /
    ``model(**inputs)`` must return class logits or an object with ``.logits``; otherwise pass
    ``logits_fn(model, inputs) -> logits``. ``n``: the training-set size of the margin forms
    (default: the number of examples in ``batches``, read to its end). ``perturb``: "all"
    parameters (as the reference implementation) or "matrices" (SPEC 9's 𝒲 only).
    ``weights``: an ``Analysis`` or a mapping of weight-measure values of the same model for
    the margin forms; default: ``analyze`` of the live weights (needs a Hugging Face
    ``.config``, or ``config=``; without one those forms are None with a note).

    Returns a :class:`specbound.measures.data.DataMeasures` (a mapping name -> value, with
    ``notes``, ``details`` (σ*/α*, deviation reached, steps), ``examples``, ``n``, ``draws``,
    ``seed``, ``perturb``). Deterministic (own generator seeded from ``seed``; the global RNG
    untouched), in eval mode, every parameter restored bit-exactly, on the model's device.
    """
    refuse_meta(model)
    names = resolve_data_measures(measures)
    need = weight_measures_for_margins(names)
    values: Mapping[str, Any] | None = None
    if weights is not None:
        values = weights.measures if hasattr(weights, "measures") else dict(weights)
    elif need:
        try:
            module = model if config is not None else find_model(model)
        except SpecboundError:
            module = None
        if module is not None:
            a = analyze_live(
                module,
                config if config is not None else module.config,
                need,
                device=model_device(module),
            )
            values = a.measures
    return compute(
        model,
        batches,
        measures=names,
        max_examples=max_examples,
        seed=seed,
        perturb=perturb,
        logits_fn=logits_fn,
        n=n,
        weights=values,
    )
