"""The adapter contract: a checkpoint's tensors -> canonical per-block weights.

An adapter knows one architecture's tensor names and layout. It hands out, block by block,
``LayerWeights`` in PyTorch ``nn.Linear`` layout ``(out, in)``; ``specbound.linalg.spectra`` turns
those
into the row-vector matrices of SPEC.md section 2:

    QK(l,h) = wq[hs].T @ wk[kv(h)s]      OV(l,h) = wv[kv(h)s].T @ wo[:, hs].T
    M_in(l) = w_in.T                      M_out(l) = w_out.T

Only one block's tensors are in memory at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np

from ..core import LayerWeights, ModelSpec, TensorRoles
from ..errors import CheckpointError, ConfigError, Param, SpecboundError
from ..io.checkpoint import Checkpoint
from ..validation import check_int


def positive_int(value: Any, key: str, where: str) -> int:
    """``value`` of size key ``key`` as an int; a bool, float, string, zero or negative value
    (JSON ``true``, ``1.7``, ``1e9``, ``Infinity``, ``0``, ``-2``) is a one-line ConfigError."""
    try:
        return check_int(value, key, min=1)
    except SpecboundError:
        shown = json_repr(value)
        raise ConfigError(
            f"'{key}' in {where} must be a positive integer, got {shown}; fix {key}"
        ) from None


def json_repr(value: Any) -> str:
    """How ``value`` reads in JSON (``true``, ``1e+09``, ``Infinity``), for messages."""
    import json

    try:
        return json.dumps(value)[:60]
    except (TypeError, ValueError):
        return repr(value)[:60]


class Adapter:
    """Base class: subclasses set ``model_types`` and implement ``spec`` and ``layer_roles``.

    The default ``layer`` reads the tensors named by ``layer_roles`` (one per role, fused and
    gated layouts override ``layer``) and checks their shapes against the spec.
    """

    model_types: ClassVar[tuple[str, ...]] = ()
    #: config.json keys giving the number of blocks (the first present wins).
    layer_keys: ClassVar[tuple[str, ...]] = ("num_hidden_layers",)

    def __init__(self, checkpoint: Checkpoint, prefix: str | None = None) -> None:
        self.checkpoint = checkpoint
        self.config = checkpoint.config
        self.source = checkpoint.source
        self._names = set(self.source.names())
        if prefix is not None and not isinstance(prefix, str):
            raise ConfigError(f"prefix must be a string such as 'bert.', got {prefix!r}")
        #: The key prefix chosen by the user (``--prefix``/``prefix=``); None: detect it.
        self.prefix = prefix

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
                f"{self.where} lacks '{self.key_name(keys[0])}'; "
                + self.advice("add it or use a mapping file")
            )
        return default

    @property
    def where(self) -> str:
        """Where the sizes come from, for messages ("config.json of <name>", or a GGUF file's
        metadata: the checkpoint's ConfigOrigin)."""
        return f"{self.checkpoint.origin.what} of {self.checkpoint.name}"

    def key_name(self, key: str) -> str:
        """Config key ``key`` as its origin spells it (``llama.block_count`` in a GGUF file)."""
        return self.checkpoint.origin.key(key)

    def file_tensor(self, name: str) -> str:
        """Tensor ``name`` as the file stores it (``blk.0.attn_q.weight`` in a GGUF file)."""
        return self.checkpoint.origin.tensor(name)

    def advice(self, default: str) -> str:
        """What to do about a config that disagrees with the weights: ``default`` (worded for
        config.json) unless the config comes from elsewhere (a GGUF file: re-convert it)."""
        return self.checkpoint.origin.advice or default

    def size(self, *keys: str, default: int | None = None) -> int:
        """The first of ``keys`` present in config.json, checked to be a positive integer."""
        for k in keys:
            if self.config.get(k) is not None:
                return positive_int(self.config[k], self.key_name(k), self.where)
        if default is None:
            raise ConfigError(
                f"{self.where} lacks '{self.key_name(keys[0])}'; "
                + self.advice("add it or use a mapping file")
            )
        return positive_int(default, keys[0], self.where)

    def which(self, *keys: str) -> str:
        """The first of ``keys`` present in config.json (the first key when none is)."""
        return next((k for k in keys if self.config.get(k) is not None), keys[0])

    def verify_blocks(self) -> None:
        """Block L-1 is stored and block L is not (by tensor names), before any spectral work.

        L is the config's layer count (``layer_keys``); a wrong count is a one-line ConfigError
        naming config.json and the key, and a huge one costs nothing.
        """
        spec = self.spec()
        self.check_stack(spec.num_layers, self.which(*self.layer_keys), self.layer_roles)

    def check_stack(self, count: int, key: str, roles: Callable[[int], TensorRoles]) -> None:
        """Blocks ``0..count-1`` of one stack (``roles(l)`` names block l's tensors) end at
        ``count - 1``: some tensor of block ``count - 1`` exists and none of block ``count``."""
        last = [t for ts in roles(count - 1).roles.values() for t in ts]
        shown, fix = self.key_name(key), self.advice(f"set {key} to the number of stored blocks")
        if not any(t in self._names for t in last):
            raise ConfigError(
                f"{self.where} says {shown} = {count}, but the weights have no block {count - 1} "
                f"(no tensor '{self.file_tensor(last[0])}'); {fix}"
            )
        extra = [t for ts in roles(count).roles.values() for t in ts if t in self._names]
        if extra:
            raise ConfigError(
                f"{self.where} says {shown} = {count}, but the weights also hold block {count} "
                f"('{self.file_tensor(extra[0])}'); {fix}"
            )

    def head_dim(self, hidden: int, heads: int) -> int:
        if self.config.get("head_dim") is not None:
            return positive_int(self.config["head_dim"], self.key_name("head_dim"), self.where)
        if heads <= 0 or hidden % heads:
            raise ConfigError(
                f"{self.key_name('hidden_size')} {hidden} is not divisible by the number of "
                f"attention heads {heads} in {self.where}; "
                + self.advice("fix config.json or set head_dim")
            )
        return hidden // heads

    def tensor(self, name: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
        """Tensor ``name`` as float64, its shape checked against what config.json implies."""
        if name not in self._names:
            raise CheckpointError(
                f"tensor '{self.file_tensor(name)}' not found in {self.checkpoint.name}; the "
                f"weights do not match the '{self.spec().architecture}' layout ("
                + self.advice("wrong model_type in config.json, or use a mapping file")
                + ")"
            )
        got = tuple(self.source.shape(name))
        if shape is not None and got != tuple(shape):
            raise ConfigError(
                f"tensor '{self.file_tensor(name)}' has shape {got} but {self.where} implies "
                f"{tuple(shape)}; " + self.advice("check that config.json belongs to these weights")
            )
        return self.source.get(name)

    def prefixes(self, anchor: str) -> list[str]:
        """Every key prefix in front of a tensor named ``<prefix><anchor>``, sorted."""
        return sorted({n[: len(n) - len(anchor)] for n in self._names if n.endswith(anchor)})

    def find_prefix(self, anchors: tuple[str, ...]) -> str:
        """The key prefix (``bert.``, ``model.``...) in front of the first matching anchor.

        The user's ``prefix`` when given (it must match); else the only candidate. Several
        candidates (``student.``/``teacher.``) are an error listing them, never a guess.
        """
        for anchor in anchors:
            found = self.prefixes(anchor)
            if self.prefix is not None:
                if self.prefix in found:
                    return self.prefix
                continue
            if len(found) > 1:
                shown = ", ".join(repr(p) for p in found)
                raise CheckpointError(
                    f"{self.checkpoint.name} holds several models: tensors ending in '{anchor}' "
                    f"under the prefixes {shown}; choose one, e.g. ",
                    Param("prefix", found[0]),
                )
            if found:
                return found[0]
        if self.prefix is not None:
            cands = sorted({p for a in anchors for p in self.prefixes(a)})
            raise CheckpointError(
                f"no tensor '{self.prefix}{anchors[0]}' in {self.checkpoint.name}: prefix "
                f"'{self.prefix}' does not match"
                + (f" (prefixes found: {', '.join(repr(p) for p in cands)})" if cands else "")
                + "; fix ",
                Param("prefix"),
            )
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
        used = {
            t
            for l in range(self.spec().num_layers)
            for ts in self.layer_roles(l).roles.values()
            for t in ts
        }
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
            f"fused weight has {w.shape[0]} rows but {groups} groups of {sizes} need {groups * per}"
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
                if self.prefixes(anchor) and (
                    self.prefix is None or self.prefix + anchor in self._names
                ):
                    self._chosen = (self.find_prefix((anchor,)), patterns)
                    break
            else:
                self.find_prefix(tuple(a for a, _ in self.layouts))  # raises the usual error
        return self._chosen

    def layer_roles(self, layer: int) -> TensorRoles:
        prefix, patterns = self._layout()
        return TensorRoles(
            layer,
            {
                role: [prefix + p.format(layer=layer) for p in pats]
                for role, pats in patterns.items()
            },
        )
