"""The adapter contract: a checkpoint's tensors -> canonical per-block weights.

An adapter knows one architecture's tensor names and layout. It hands out, block by block,
``LayerWeights`` in PyTorch ``nn.Linear`` layout ``(out, in)``; ``specbound.spectra`` turns those
into the row-vector matrices of SPEC.md section 2:

    QK(l,h) = wq[hs].T @ wk[kv(h)s]      OV(l,h) = wv[kv(h)s].T @ wo[:, hs].T
    M_in(l) = w_in.T                      M_out(l) = w_out.T

Only one block's tensors are in memory at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..activations import lipschitz_constant
from ..checkpoint import Checkpoint
from ..errors import CheckpointError, ConfigError

#: Roles a tensor can play, as reported by ``specbound inspect``.
ROLES = ("query", "key", "value", "output", "ffn_in", "ffn_gate", "ffn_out")


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


@dataclass
class TensorRoles:
    """Which tensor names feed each role of block ``layer`` (for ``inspect`` and errors)."""

    layer: int
    roles: dict[str, list[str]] = field(default_factory=dict)


class Adapter:
    """Base class: subclasses set ``model_types`` and implement ``spec`` and ``layer_roles``.

    The default ``layer`` reads the tensors named by ``layer_roles`` (one per role, fused and
    gated layouts override ``layer``) and checks their shapes against the spec.
    """

    model_types: ClassVar[tuple[str, ...]] = ()

    def __init__(self, checkpoint: Checkpoint) -> None:
        self.checkpoint = checkpoint
        self.config = checkpoint.config
        self.source = checkpoint.source
        self._names = set(self.source.names())

    # ---- to implement -------------------------------------------------------------------
    def spec(self) -> ModelSpec:
        raise NotImplementedError

    def layer_roles(self, layer: int) -> TensorRoles:
        raise NotImplementedError

    # ---- shared machinery ---------------------------------------------------------------
    def cfg(self, *keys: str, default: Any = None, required: bool = True) -> Any:
        """The first of ``keys`` present in config.json."""
        for k in keys:
            if k in self.config and self.config[k] is not None:
                return self.config[k]
        if required and default is None:
            raise ConfigError(
                f"config.json of {self.checkpoint.name} lacks '{keys[0]}'; add it or use a "
                "mapping file"
            )
        return default

    def head_dim(self, hidden: int, heads: int) -> int:
        hd = self.config.get("head_dim")
        if hd:
            return int(hd)
        if heads <= 0 or hidden % heads:
            raise ConfigError(
                f"hidden_size {hidden} is not divisible by the number of attention heads {heads} "
                f"in config.json of {self.checkpoint.name}; fix config.json or set head_dim"
            )
        return hidden // heads

    def tensor(self, name: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
        """Tensor ``name`` as float64, its shape checked against what config.json implies."""
        if name not in self._names:
            raise CheckpointError(
                f"tensor '{name}' not found in {self.checkpoint.name}; the weights do not match "
                f"the '{self.spec().architecture}' layout (wrong model_type in config.json, or use "
                "a mapping file)"
            )
        got = tuple(self.source.shape(name))
        if shape is not None and got != tuple(shape):
            raise ConfigError(
                f"tensor '{name}' has shape {got} but config.json of {self.checkpoint.name} "
                f"implies {tuple(shape)}; check that config.json belongs to these weights"
            )
        return self.source.get(name)

    def find_prefix(self, anchors: tuple[str, ...]) -> str:
        """The key prefix (``bert.``, ``model.``...) in front of the first matching anchor."""
        for anchor in anchors:
            for n in self._names:
                if n.endswith(anchor):
                    return n[: len(n) - len(anchor)]
        raise CheckpointError(
            f"{self.checkpoint.name} has no tensor ending in '{anchors[0]}'; the weights do not "
            f"match the '{self.config.get('model_type')}' layout (or use a mapping file)"
        )

    def layer(self, layer: int) -> LayerWeights:
        s = self.spec()
        n, h, d, f = s.hidden_size, s.num_heads, s.head_dim, s.intermediate_size
        kv = s.kv_heads
        r = self.layer_roles(layer).roles
        w_in = [self.tensor(t, (f, n)) for t in r.get("ffn_gate", []) + r["ffn_in"]]
        return LayerWeights(
            index=layer,
            wq=self.tensor(r["query"][0], (h * d, n)),
            wk=self.tensor(r["key"][0], (kv * d, n)),
            wv=self.tensor(r["value"][0], (kv * d, n)),
            wo=self.tensor(r["output"][0], (n, h * d)),
            w_in=w_in[0] if len(w_in) == 1 else np.concatenate(w_in, axis=0),
            w_out=self.tensor(r["ffn_out"][0], (n, f)),
            share_key=self.share_key(layer),
        )

    def share_key(self, layer: int) -> Any:
        return None

    def blocks(self) -> Iterator[LayerWeights]:
        for l in range(self.spec().num_layers):
            yield self.layer(l)

    def tensor_roles(self) -> list[TensorRoles]:
        """``layer_roles`` of every block, in depth order (for ``specbound inspect``)."""
        return [self.layer_roles(l) for l in range(self.spec().num_layers)]

    def ignored_tensors(self) -> list[str]:
        used = {t for l in range(self.spec().num_layers)
                for ts in self.layer_roles(l).roles.values() for t in ts}
        return sorted(self._names - used)


# ---- layout helpers for fused, Conv1D and interleaved tensors ---------------------------------
#: Adaptation notes shared by several adapters (SPEC.md section 8).
GQA_NOTE = (
    "grouped-query attention: QK(l,h) and OV(l,h) use the key/value head that query head h "
    "reads (h // (H / H_kv)) and h's block of W_O (SPEC 8)"
)
GATED_NOTE = (
    "gated MLP: M_in = [W_gate; W_up] stacked (N x 2F), M_out = W_down; L_phi is the gate "
    "activation's constant, though act(gate) * up is not globally Lipschitz (SPEC 8)"
)
FUSED_QKV_NOTE = (
    "fused QKV projection split by the model's own layout before slicing heads (SPEC 8)"
)


def conv1d_to_linear(w: np.ndarray) -> np.ndarray:
    """GPT-2 ``Conv1D`` stores (in, out); the ``nn.Linear`` layout is (out, in)."""
    return np.ascontiguousarray(w.T)


def split_rows(w: np.ndarray, sizes: list[int] | tuple[int, ...]) -> list[np.ndarray]:
    """Split a fused (sum(sizes), in) weight into consecutive row blocks."""
    if w.shape[0] != sum(sizes):
        raise ConfigError(
            f"fused weight has {w.shape[0]} rows but the parts need {sum(sizes)} ({sizes})"
        )
    out, start = [], 0
    for n in sizes:
        out.append(np.ascontiguousarray(w[start : start + n]))
        start += n
    return out


def split_interleaved(
    w: np.ndarray, groups: int, sizes: list[int] | tuple[int, ...]
) -> list[np.ndarray]:
    """Split rows laid out as ``groups`` repeats of [part0 | part1 | ...] (GPT-NeoX: per head
    [q_h | k_h | v_h]); part i gathers its ``sizes[i]`` rows from every group, group-major."""
    per = sum(sizes)
    if w.shape[0] != groups * per:
        raise ConfigError(
            f"fused weight has {w.shape[0]} rows but {groups} groups of {sizes} need "
            f"{groups * per}"
        )
    g = w.reshape(groups, per, *w.shape[1:])
    out, start = [], 0
    for n in sizes:
        out.append(np.ascontiguousarray(g[:, start : start + n].reshape(groups * n, *w.shape[1:])))
        start += n
    return out


class PatternAdapter(Adapter):
    """An adapter described by tensor-name patterns (``{layer}`` = block index).

    ``layouts``: (anchor, patterns) pairs, tried in order; the anchor is the suffix of a
    layer-0 tensor that identifies the layout, and whatever precedes it in the checkpoint
    (``model.``, ``transformer.``, ``vit.``...) is the prefix put in front of every pattern.
    """

    layouts: ClassVar[tuple[tuple[str, dict[str, tuple[str, ...]]], ...]] = ()

    def _layout(self) -> tuple[str, dict[str, tuple[str, ...]]]:
        if not hasattr(self, "_chosen"):
            for anchor, patterns in self.layouts:
                if any(n.endswith(anchor) for n in self._names):
                    self._chosen = (self.find_prefix((anchor,)), patterns)
                    break
            else:
                self.find_prefix(tuple(a for a, _ in self.layouts))  # raises the usual error
        return self._chosen

    def layer_roles(self, layer: int) -> TensorRoles:
        prefix, patterns = self._layout()
        return TensorRoles(
            layer,
            {role: [prefix + p.format(layer=layer) for p in pats]
             for role, pats in patterns.items()},
        )
