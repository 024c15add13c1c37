"""Random checkpoints written to disk for plumbing tests (a helper module, not a test file):
``write_tiny_bert`` (config.json + safetensors, optionally sharded, bf16, prefixed, ...).

Use it as ``from tests.support.checkpoints import write_tiny_bert``, or through the
``tiny_bert`` fixture of conftest.py (a writer into the test's tmp_path).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

#: Weight scale keys of ``write_tiny_bert``: q/k/v/o projections, FFN first and second linear.
SCALE_KEYS = ("attention", "intermediate", "output")


def write_tiny_bert(
    path: Path,
    layers: int = 2,
    hidden: int = 8,
    heads: int = 2,
    ffn: int = 16,
    seed: int = 0,
    config_extra: dict | None = None,
    *,
    scale: float | Mapping[str, float] = 1.0,
    dtype: str = "float32",
    prefix: str = "",
    vocab: int | None = None,
    biases: bool = False,
    ffn_low_rank: int = 0,
    shards: int = 1,
) -> Path:
    """A random BERT-shaped checkpoint (safetensors + config.json) for plumbing tests.

    Weights are N(0, scale^2) with ``scale`` a float or a mapping over SCALE_KEYS, drawn from
    ``default_rng(seed)`` per layer in the order query, key, value, attention output,
    intermediate, output (so the defaults give the same tensors whatever the other options).
    ``dtype``: float16/float32/float64 or bfloat16 (written through torch). ``prefix`` precedes
    every tensor name (e.g. "bert."). ``vocab``: also write word embeddings (drawn after the
    blocks) and ``vocab_size``. ``biases``: zero q/k/v biases. ``ffn_low_rank`` = r > 0: the
    intermediate weight is a rank-r matrix plus full-rank noise a third its size (so p* varies).
    ``shards`` > 1: that many safetensors files plus model.safetensors.index.json.
    """
    rng = np.random.default_rng(seed)
    sc = (
        {k: float(scale) for k in SCALE_KEYS}
        if not isinstance(scale, Mapping)
        else {k: float(scale.get(k, 1.0)) for k in SCALE_KEYS}
    )
    path.mkdir(parents=True, exist_ok=True)
    sd: dict[str, np.ndarray] = {}
    for l in range(layers):
        p = f"{prefix}encoder.layer.{l}."
        for n in ("query", "key", "value"):
            sd[p + f"attention.self.{n}.weight"] = (
                rng.standard_normal((hidden, hidden)) * sc["attention"]
            )
            if biases:
                sd[p + f"attention.self.{n}.bias"] = np.zeros(hidden)
        sd[p + "attention.output.dense.weight"] = (
            rng.standard_normal((hidden, hidden)) * sc["attention"]
        )
        if ffn_low_rank > 0:
            r = ffn_low_rank
            low = rng.standard_normal((ffn, r)) @ rng.standard_normal((r, hidden)) / np.sqrt(r)
            w_in = low + rng.standard_normal((ffn, hidden)) / 3
        else:
            w_in = rng.standard_normal((ffn, hidden))
        sd[p + "intermediate.dense.weight"] = w_in * sc["intermediate"]
        sd[p + "output.dense.weight"] = rng.standard_normal((hidden, ffn)) * sc["output"]
    if vocab is not None:
        sd[prefix + "embeddings.word_embeddings.weight"] = rng.normal(0, 0.02, (vocab, hidden))
    _save_tensors(path, sd, dtype, shards)
    cfg = {
        "model_type": "bert",
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "intermediate_size": ffn,
        "hidden_act": "gelu",
    }
    if vocab is not None:
        cfg["vocab_size"] = vocab
    cfg.update(config_extra or {})
    (path / "config.json").write_text(json.dumps(cfg))
    return path


def _save_tensors(path: Path, sd: dict[str, np.ndarray], dtype: str, shards: int) -> None:
    if dtype == "bfloat16":
        import torch
        from safetensors.torch import save_file

        def save(part: dict, file: str) -> None:
            save_file({k: torch.from_numpy(v).to(torch.bfloat16) for k, v in part.items()}, file)
    else:
        from tests.support.safetensors_np import save_file

        def save(part: dict, file: str) -> None:
            save_file({k: v.astype(dtype) for k, v in part.items()}, file)

    if shards <= 1:
        save(sd, str(path / "model.safetensors"))
        return
    names = list(sd)
    weight_map = {}
    for i, part in enumerate(np.array_split(np.arange(len(names)), shards)):
        fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        save({names[j]: sd[names[j]] for j in part}, str(path / fname))
        weight_map.update({names[j]: fname for j in part})
    (path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
