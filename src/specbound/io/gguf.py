"""GGUF files (llama.cpp, ollama, LM Studio) read directly through llama.cpp's own reader.

``gguf.GGUFReader`` memory-maps the file; :class:`GGUFFile` hands out one tensor at a time,
dequantized by ``gguf.quants.dequantize`` and cast to float64 (F32/F16/BF16 exactly; the quantized
types are decoded by gguf in float32 arithmetic: scale x small integer products are exact there, a
sum with a block minimum is rounded to float32), so peak memory is a small multiple of the largest
tensor. GGUF lists a tensor's dims fastest first (``ne[0]`` = the input size of a linear map); the
reader's array, and so every tensor here, is in numpy order, (out, in) like ``nn.Linear.weight``.

:func:`load_gguf` maps the file onto the registered adapters (SPEC 8): a config dict from the
metadata (``<arch>.block_count``, ``.embedding_length``, ``.attention.head_count``,
``.attention.head_count_kv``, ``.feed_forward_length``, ``.attention.key_length``) and the
``blk.{l}.*`` tensors under the Hugging Face names of the family's adapter, so streaming, the cache
and every command work unchanged. llama.cpp permutes the rows of W_Q and W_K inside each head for
its rotary layout; the same permutation acts on both, so QK is unchanged and nothing is undone.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CheckpointError
from ..extras import install_hint
from .files import check_regular_file, file_stamp
from .sources import check_finite

INSTALL = install_hint("gguf")

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


def _import_gguf(path: Path) -> Any:
    try:
        import gguf
    except ImportError:
        raise CheckpointError(
            f"{path} is a GGUF file; reading it needs the gguf package: {INSTALL}"
        ) from None
    return gguf


class GGUFFile:
    """One .gguf file as a TensorSource under its own (llama.cpp) tensor names."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        check_regular_file(self.path, "GGUF file")
        gguf = _import_gguf(self.path)
        self._quants = gguf.quants
        with open(self.path, "rb") as fh:
            magic = fh.read(4)
        if magic != b"GGUF":
            raise self._corrupt(f"wrong magic {magic!r}, expected b'GGUF'")
        try:
            reader = gguf.GGUFReader(self.path, "r")
        except Exception as exc:  # the reader raises whatever numpy/struct raise on bad bytes
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise self._corrupt(first) from None
        # keep the scalar metadata only: the reader's parsed fields (a tokenizer's vocabulary,
        # tens of thousands of small arrays) are dropped once the file is open
        scalar = gguf.GGUFValueType.ARRAY
        self._meta = {
            k: f.contents() for k, f in reader.fields.items() if f.types and f.types[0] != scalar
        }
        size = self.path.stat().st_size
        self._tensors = {}
        for t in reader.tensors:
            end = int(t.data_offset) + int(t.n_bytes)
            if end > size or t.data.nbytes != int(t.n_bytes):
                raise self._corrupt(
                    f"tensor '{t.name}' runs to byte {end}, past the end of the file ({size} bytes)"
                )
            self._tensors[t.name] = t

    def _corrupt(self, why: str) -> CheckpointError:
        return CheckpointError(
            f"{self.path} is not a readable GGUF file ({why}); re-download or re-convert it"
        )

    def field(self, key: str) -> Any:
        """The scalar metadata value ``key`` (None when absent or an array)."""
        return self._meta.get(key)

    def names(self) -> list[str]:
        return list(self._tensors)

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(int(d) for d in reversed(self._tensors[name].shape))

    def dtype(self, name: str) -> str:
        return str(self._tensors[name].tensor_type.name)

    def get(self, name: str) -> np.ndarray:
        t = self._tensors[name]
        qt = self._quants.GGMLQuantizationType
        kind = t.tensor_type
        if kind in (qt.F64, qt.F32, qt.F16):
            data = np.asarray(t.data)
        else:
            try:
                data = self._quants.dequantize(t.data, kind)
            except (NotImplementedError, KeyError):
                data = None
            if data is None or np.dtype(data.dtype).kind != "f":
                raise CheckpointError(
                    f"tensor '{name}' in {self.path} has GGUF type {kind.name}, which specbound "
                    "cannot dequantize (supported: F64, F32, F16, BF16, Q4_0..Q8_0, the K-quants "
                    "and the IQ types gguf.quants decodes)"
                )
        arr = np.array(data, dtype=np.float64, copy=True).reshape(self.shape(name))
        return check_finite(arr, name, str(self.path))

    def fingerprint(self) -> str:
        return file_stamp(self.path)


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


def gguf_checkpoint_parts(
    path: str | os.PathLike[str],
) -> tuple[dict[str, Any], RenamedSource, list[str]]:
    """(config, source under Hugging Face names, notes) for the .gguf file at ``path``."""
    f = GGUFFile(path)
    arch = f.field("general.architecture")
    if not isinstance(arch, str) or arch not in _FAMILIES:
        raise CheckpointError(
            f"{f.path} holds GGUF architecture {arch!r}, which specbound does not map (supported: "
            f"{', '.join(_FAMILIES)}); convert it to safetensors and pass a mapping file"
        )
    model_type, prefix, stems, transposed, act = _FAMILIES[arch]
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
    config = {"model_type": model_type, **config}
    names: dict[str, tuple[str, bool]] = {}
    for g in f.names():
        parts = g.split(".")
        if len(parts) == 4 and parts[0] == "blk" and parts[1].isdigit() and parts[3] == "weight":
            stem = stems.get(parts[2])
            if stem is not None:
                hf = prefix.format(l=int(parts[1])) + stem + ".weight"
                names[hf] = (g, transposed and len(f.shape(g)) == 2)
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
    return config, RenamedSource(f, names), notes


def find_gguf(directory: Path) -> Path | None:
    """The one ``*.gguf`` file in ``directory`` (None when there is none; an error when several)."""
    found = sorted(p for p in directory.glob("*.gguf") if not p.name.startswith("."))
    if len(found) > 1:
        raise CheckpointError(
            f"{directory} holds {len(found)} GGUF files ({', '.join(p.name for p in found[:4])}"
            f"{', ...' if len(found) > 4 else ''}); pass the one to analyze"
        )
    return found[0] if found else None
