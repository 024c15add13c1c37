"""GGUF files (llama.cpp, ollama, LM Studio) mapped onto the registered adapters (SPEC 8).

The file is read by :class:`specbound.io.gguf_file.GGUFFile` (specbound's own header reader; the
``gguf`` package only dequantizes). :func:`gguf_checkpoint_parts` gives a config dict from the
metadata (``<arch>.block_count``, ``.embedding_length``, ``.attention.head_count``,
``.attention.head_count_kv``, ``.feed_forward_length``, ``.attention.key_length``), the
``blk.{l}.*`` tensors under the Hugging Face names of the family's adapter, so streaming, the cache
and every command work unchanged, and a ConfigOrigin, so that an error about the sizes names the
GGUF metadata key and the file's tensor name. llama.cpp permutes the rows of W_Q and W_K inside
each head for its rotary layout; the same permutation acts on both, so QK is unchanged and
nothing is undone.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CheckpointError
from .gguf_file import GGUFFile
from .sources import ConfigOrigin

#: llama.cpp tensor stem -> Hugging Face module name, per adapter layout.
_LLAMA = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_PHI3 = {  # fused: attn_qkv rows [q | k | v], ffn_up rows [gate | up]
    "attn_qkv": "self_attn.qkv_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_up": "mlp.gate_up_proj",
    "ffn_down": "mlp.down_proj",
}
_GPT2 = {  # llama.cpp stores GPT-2's Conv1D weights transposed to (out, in)
    "attn_qkv": "attn.c_attn",
    "attn_output": "attn.c_proj",
    "ffn_up": "mlp.c_fc",
    "ffn_down": "mlp.c_proj",
}

#: general.architecture -> (model_type, HF block prefix, tensor names, transposed, activation).
#: Mistral and SmolLM are written as ``llama`` by llama.cpp's converter.
_FAMILIES: dict[str, tuple[str, str, Mapping[str, str], bool, str]] = {
    "llama": ("llama", "model.layers.{l}.", _LLAMA, False, "silu"),
    "mistral": ("mistral", "model.layers.{l}.", _LLAMA, False, "silu"),
    "qwen2": ("qwen2", "model.layers.{l}.", _LLAMA, False, "silu"),
    "gemma": ("gemma", "model.layers.{l}.", _LLAMA, False, "gelu_pytorch_tanh"),
    "phi3": ("phi3", "model.layers.{l}.", _PHI3, False, "silu"),
    "gpt2": ("gpt2", "h.{l}.", _GPT2, True, "gelu_new"),
}

PERMUTE_NOTE = (
    "llama.cpp's rotary row permutation of W_Q and W_K (the same in both) leaves QK unchanged; "
    "not undone"
)


class RenamedSource:
    """A TensorSource showing ``source``'s tensors under other names: ``names`` maps each new
    name to (source name, transposed), transposed 2-d tensors being handed out as their ``.T``."""

    def __init__(self, source: GGUFFile, names: Mapping[str, tuple[str, bool]]) -> None:
        self._source = source
        self._names = dict(names)

    def names(self) -> list[str]:
        return list(self._names)

    def shape(self, name: str) -> tuple[int, ...]:
        src, t = self._names[name]
        s = self._source.shape(src)
        return tuple(reversed(s)) if t else s

    def dtype(self, name: str) -> str:
        return self._source.dtype(self._names[name][0])

    def get(self, name: str) -> np.ndarray:
        src, t = self._names[name]
        arr = self._source.get(src)
        return np.ascontiguousarray(arr.T) if t else arr

    def fingerprint(self) -> str:
        return self._source.fingerprint()


def _count(f: GGUFFile, key: str, required: bool = True) -> int | None:
    v = f.field(key)
    if v is None and not required:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) <= 0:
        what = "missing" if v is None else f"{v!r}, not a positive integer"
        raise CheckpointError(
            f"GGUF metadata '{key}' of {f.path} is {what}; specbound needs it to size the "
            "model (re-convert the file with a current llama.cpp)"
        )
    return int(v)


@dataclass(frozen=True)
class GGUFNames:
    """A Hugging Face tensor name -> its ``blk.{l}.<stem>.weight`` name in the GGUF file (for
    messages; names outside the family's blocks unchanged). A class, not a closure: a
    Checkpoint is pickled to worker processes."""

    prefix: str
    stems: Mapping[str, str]

    def __call__(self, name: str) -> str:
        head = self.prefix.split("{l}")[0]  # every family's prefix ends in "{l}."
        if not name.startswith(head):
            return name
        layer, _, rest = name[len(head) :].partition(".")
        stem = {hf + ".weight": stem for stem, hf in self.stems.items()}.get(rest)
        return f"blk.{int(layer)}.{stem}.weight" if layer.isdigit() and stem else name


#: GGUF metadata key (after ``{arch}.``) -> the config keys it sizes (a message about one of
#: them names the GGUF key).
_META_KEYS = {
    "block_count": ("num_hidden_layers", "n_layer"),
    "embedding_length": ("hidden_size", "n_embd"),
    "attention.head_count": ("num_attention_heads", "n_head"),
    "attention.head_count_kv": ("num_key_value_heads",),
    "feed_forward_length": ("intermediate_size", "n_inner"),
    "attention.key_length": ("head_dim",),
}


def _gguf_config(f: GGUFFile, arch: str, model_type: str, act: str) -> dict[str, Any]:
    """The Hugging Face config of ``f`` (GGUF architecture ``arch``) from its metadata."""
    L = _count(f, f"{arch}.block_count")
    n = _count(f, f"{arch}.embedding_length")
    h = _count(f, f"{arch}.attention.head_count")
    kv = _count(f, f"{arch}.attention.head_count_kv", required=False) or h
    ffn = _count(f, f"{arch}.feed_forward_length")
    d_k = _count(f, f"{arch}.attention.key_length", required=False)
    d_v = _count(f, f"{arch}.attention.value_length", required=False)
    if d_k is not None and d_v is not None and d_k != d_v:
        raise CheckpointError(
            f"{f.path} has key_length {d_k} != value_length {d_v}; specbound's canonical "
            "matrices need one head size"
        )
    assert L is not None and n is not None and h is not None and ffn is not None
    if model_type == "gpt2":
        config: dict[str, Any] = {"n_layer": L, "n_embd": n, "n_head": h, "n_inner": ffn}
        config["activation_function"] = act
    else:
        config = {
            "num_hidden_layers": L,
            "hidden_size": n,
            "num_attention_heads": h,
            "num_key_value_heads": kv,
            "intermediate_size": ffn,
            "hidden_act": act,
        }
        if d_k is not None:
            config["head_dim"] = d_k
    return {"model_type": model_type, **config}


def _gguf_origin(arch: str, prefix: str, stems: Mapping[str, str]) -> ConfigOrigin:
    """Where the config of a GGUF file of ``arch`` came from: its metadata keys, its tensor
    names."""
    keys = {hf: f"{arch}.{k}" for k, hfs in _META_KEYS.items() for hf in hfs}
    keys["model_type"] = "general.architecture"
    return ConfigOrigin(
        what="the GGUF metadata",
        keys=keys,
        tensors=GGUFNames(prefix, stems),
        advice="re-convert the file with a current llama.cpp",
    )


def _gguf_tensor_names(
    f: GGUFFile, prefix: str, stems: Mapping[str, str], transposed: bool
) -> dict[str, tuple[str, bool]]:
    """Hugging Face name -> (the GGUF tensor ``blk.{l}.<stem>.weight``, whether it is stored
    transposed) for the family's block weights in ``f``."""
    names: dict[str, tuple[str, bool]] = {}
    for g in f.names():
        parts = g.split(".")
        if len(parts) == 4 and parts[0] == "blk" and parts[1].isdigit() and parts[3] == "weight":
            stem = stems.get(parts[2])
            if stem is not None:
                hf = prefix.format(l=int(parts[1])) + stem + ".weight"
                names[hf] = (g, transposed and len(f.shape(g)) == 2)
    return names


def gguf_checkpoint_parts(
    path: str | os.PathLike[str],
) -> tuple[dict[str, Any], RenamedSource, list[str], ConfigOrigin]:
    """(config, source under Hugging Face names, notes, origin) for the .gguf file at ``path``;
    the origin makes every config-derived message name the GGUF metadata key (``llama.block_count``
    for ``num_hidden_layers``) and the file's tensor names."""
    f = GGUFFile(path)
    arch = f.field("general.architecture")
    if not isinstance(arch, str) or arch not in _FAMILIES:
        raise CheckpointError(
            f"{f.path} holds GGUF architecture {arch!r}, which specbound does not map (supported: "
            f"{', '.join(_FAMILIES)}); convert it to safetensors and pass a mapping file"
        )
    model_type, prefix, stems, transposed, act = _FAMILIES[arch]
    config = _gguf_config(f, arch, model_type, act)
    origin = _gguf_origin(arch, prefix, stems)
    names = _gguf_tensor_names(f, prefix, stems, transposed)
    types = Counter(f.dtype(g) for g, _ in names.values())
    listed = ", ".join(f"{t} ({c})" for t, c in sorted(types.items()))
    notes = [
        f"GGUF file read directly (general.architecture '{arch}' as model_type '{model_type}'); "
        f"weight matrix types: {listed}; quantized types dequantized to float64 by gguf.quants, "
        "so every spectral quantity is that of the dequantized weights"
    ]
    if arch in ("llama", "mistral"):
        notes.append(PERMUTE_NOTE)
    if transposed:
        notes.append("GGUF stores GPT-2's Conv1D weights as (out, in); transposed back")
    return config, RenamedSource(f, names), notes, origin


def find_gguf(directory: Path) -> Path | None:
    """The one ``*.gguf`` file in ``directory``, the suffix in any case (None when there is none;
    an error naming them when there are several)."""
    try:
        entries = list(directory.iterdir())
    except OSError as exc:
        raise CheckpointError(f"cannot list {directory}: {exc.strerror or exc}") from None
    found = sorted(p for p in entries if p.suffix.lower() == ".gguf" and not p.name.startswith("."))
    if len(found) > 1:
        raise CheckpointError(
            f"{directory} holds {len(found)} GGUF files ({', '.join(p.name for p in found[:4])}"
            f"{', ...' if len(found) > 4 else ''}); pass the one to analyze"
        )
    return found[0] if found else None
