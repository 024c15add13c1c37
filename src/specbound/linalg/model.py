"""A whole model's spectra, block by block: the canonical matrices (SPEC 2-3) and, when asked,
SPEC 9's raw weight matrices and their distance from an initialization.

One block's tensors are in memory at a time; a shared block (ALBERT) is computed once. The numpy
backend runs a block's SVDs (canonical and raw) in one ``pool.run_jobs`` round; a torch device
uses ``torch_backend``. ``compute_block`` is what one engine task computes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import Param, SpecboundError
from ..validation import Satisfies
from .spectra import Spectra, block_spectra, block_spectra_with
from .torch_backend import make_block_spectra, resolve_device
from .weights import (
    WeightSpectra,
    attention_jobs,
    block_distance,
    block_weight_spectra,
    ffn_singular_values,
)

if TYPE_CHECKING:
    from ..adapters.base import Adapter
    from .weights import WeightSpectra

Progress = Callable[[int, int], None]


def check_device(device: object) -> None:
    """SpecboundError unless ``device`` is usable: None/"numpy", or a torch device this machine
    has ("cpu", "cuda", "cuda:N"); checked up front, even when the spectra come from the cache."""
    if device is None or device == "numpy":
        return
    if not isinstance(device, str):
        raise SpecboundError(
            Param("device"), f" must be a string (numpy, cpu, cuda), got {device!r}"
        )

    resolve_device(device)


#: ``device``'s constraints (:mod:`specbound.validation`): None (numpy) or a usable device.
DEVICE = (None, Satisfies(check_device, "numpy, cpu, cuda or cuda:N"))


def _spectra_function(device: str | None) -> Callable[..., Spectra]:
    if device in (None, "numpy"):
        return block_spectra

    return make_block_spectra(device)


def _tensor_names(adapter: Adapter, layer: int) -> dict[str, str]:
    """Role -> tensor name(s) of block ``layer`` for weights.csv (gate and up joined by '+')."""
    try:
        roles = adapter.layer_roles(layer).roles
    except Exception:  # an adapter without names: the table says nothing rather than guess
        return {}
    out = {r: "+".join(roles.get(r, [])) for r in ("query", "key", "value", "output", "ffn_out")}
    out["ffn_in"] = "+".join(list(roles.get("ffn_gate", [])) + list(roles.get("ffn_in", [])))
    return out


def compute_spectra(
    adapter: Adapter, device: str | None = None, progress: Progress | None = None
) -> Spectra:
    """Spectra of every block's canonical matrices, streaming one block at a time."""
    return compute_all_spectra(adapter, device, progress, weights=False)[0]


def compute_all_spectra(
    adapter: Adapter,
    device: str | None = None,
    progress: Progress | None = None,
    weights: bool = True,
) -> tuple[Spectra, WeightSpectra | None]:
    """Spectra of the canonical matrices and (``weights``) of SPEC 9's raw weight matrices.

    One block's tensors are in memory at a time; a shared block (ALBERT) is computed once.
    """
    spec = adapter.spec()
    parts: list[Spectra] = []
    wparts: list[WeightSpectra] = []
    seen: dict[Any, tuple[Spectra, WeightSpectra | None]] = {}
    L = spec.num_layers
    for l in range(L):
        key = adapter.share_key(l)
        if key is not None and key in seen:
            part, wpart = seen[key]
            part = part.with_layers(l)
            wpart = wpart.with_layers(l) if wpart is not None else None
        else:
            part, wpart = compute_block(adapter, l, device, weights)
            if key is not None:
                seen[key] = (part, wpart)
        parts.append(part)
        if wpart is not None:
            wparts.append(wpart)
        if progress is not None:
            progress(l + 1, L)
    return Spectra.concat(parts), (WeightSpectra.concat(wparts) if weights else None)


def compute_block(
    adapter: Adapter, layer: int, device: str | None = None, weights: bool = True
) -> tuple[Spectra, WeightSpectra | None]:
    """Block ``layer``'s part of ``compute_all_spectra`` (what one engine task computes)."""
    block = adapter.layer(layer)
    names = _tensor_names(adapter, layer) if weights else {}
    att = None
    if device in (None, "numpy"):  # the raw-weight SVDs join the block's pool round
        part, att = block_spectra_with(
            block, adapter.spec(), attention_jobs(block, names) if weights else ()
        )
    else:
        part = _spectra_function(device)(block, adapter.spec())
    wpart = (
        block_weight_spectra(block, ffn_singular_values(part), names, att or None)
        if weights
        else None
    )
    return part, wpart


def compute_distance(adapter: Adapter, init_adapter: Adapter, where: str = "init") -> np.ndarray:
    """||W - W0||_F^2 for every raw weight, W0 from ``init_adapter`` (same layout), in the row
    order of ``WeightSpectra``."""
    L = adapter.spec().num_layers
    return (
        np.concatenate(
            [
                block_distance(
                    adapter.layer(l), init_adapter.layer(l), _tensor_names(adapter, l), where
                )
                for l in range(L)
            ]
        )
        if L
        else np.zeros(0)
    )
