"""Where an engine splits one large model: one job per transformer block, through ``Engine.map``.

``split_by_block(engine, mapping, prefix)`` is a ``spectra_fn`` for ``analysis.analyze``: one
job per distinct block (blocks an adapter shares, as in ALBERT, once); each job opens the
checkpoint itself (by path: no weight array travels), reads that block's tensors by name
(sharded safetensors read only the shards holding them) and returns
``linalg.model.compute_block``; the blocks are put back in layer order and concatenated, so the
spectra are exactly those of the local block loop.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..adapters.registry import adapter_for
from ..engines.base import Engine, JobError, Resources, SpectraFn, closing_map
from ..errors import SpecboundError
from ..io.checkpoint import load_checkpoint
from ..linalg.model import compute_block
from ..linalg.spectra import Spectra
from ..linalg.weights import WeightSpectra
from .sizes import block_memory

if TYPE_CHECKING:
    from ..adapters.base import Adapter


@dataclass(frozen=True)
class BlockJob:
    """Block ``layer`` of the checkpoint at ``source`` (opened with ``config``)."""

    layer: int
    label: str


def block_task(
    job: BlockJob,
    *,
    source: str,
    config: Mapping[str, Any],
    mapping: Any,
    prefix: str | None,
    device: str | None,
    weights: bool,
) -> Any:
    """What one block job runs: ``compute_block`` of block ``job.layer``."""
    ckpt = load_checkpoint(source, dict(config))
    adapter = adapter_for(ckpt, mapping, **({"prefix": prefix} if prefix is not None else {}))
    return compute_block(adapter, job.layer, device, weights)


def split_by_block(engine: Engine, mapping: Any = None, prefix: str | None = None) -> SpectraFn:
    """A ``spectra_fn(ckpt, adapter, device, progress, weights)`` running one ``engine`` job
    per block (module doc)."""

    def spectra_fn(
        ckpt: Any,
        adapter: Adapter,
        device: str | None,
        progress: Callable[[int, int], None] | None,
        weights: bool,
    ) -> Any:
        if ckpt.path is None:
            raise SpecboundError(
                f"the {engine.name} engine reads {ckpt.name} in every task: pass a checkpoint "
                "directory or hub id, not an in-memory model"
            )
        L = adapter.spec().num_layers
        memory = block_memory(Path(ckpt.path), L)
        source: dict[int, int] = {}  # layer -> the layer whose block it shares (itself if none)
        first: dict[Any, int] = {}
        for l in range(L):
            k = adapter.share_key(l)
            source[l] = first.setdefault(k, l) if k is not None else l
        jobs = [BlockJob(l, f"{ckpt.name}:block{l}") for l in sorted(set(source.values()))]
        fn = functools.partial(
            block_task,
            source=str(ckpt.path),
            config=dict(ckpt.config),
            mapping=mapping,
            prefix=prefix,
            device=device,
            weights=weights,
        )
        blocks: dict[int, Any] = {}
        outcomes = engine.map(
            fn,
            jobs,
            progress=progress,
            resources=lambda job: Resources(memory=memory, label=job.label),
        )
        with closing_map(outcomes):
            for job, out in outcomes:
                if isinstance(out, JobError):
                    raise SpecboundError(f"block {job.layer} of {ckpt.name}: {out.reason}")
                blocks[job.layer] = out
        parts, wparts = [], []
        for l in range(L):
            part, wpart = blocks[source[l]]
            if source[l] != l:
                part = part.with_layers(l)
                wpart = wpart.with_layers(l) if wpart is not None else None
            parts.append(part)
            if wpart is not None:
                wparts.append(wpart)
        return Spectra.concat(parts), (WeightSpectra.concat(wparts) if weights else None)

    return spectra_fn
