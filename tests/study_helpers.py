"""Tiny random BERT-shaped checkpoints for the study/report/reproduce tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def write_bert(path: Path, num_layers: int, hidden: int, heads: int | None = None,
               seed: int = 0, vocab: int = 50) -> Path:
    """config.json + model.safetensors of a random BERT encoder (F = 2N, fp32)."""
    from safetensors.numpy import save_file

    heads = heads or max(hidden // 64, 1)
    ffn = 2 * hidden
    rng = np.random.default_rng(seed + 1000 * num_layers + hidden)
    t: dict[str, np.ndarray] = {
        "bert.embeddings.word_embeddings.weight": rng.normal(0, 0.02, (vocab, hidden)),
    }
    for l in range(num_layers):
        p = f"bert.encoder.layer.{l}."
        for name in ("query", "key", "value"):
            t[p + f"attention.self.{name}.weight"] = rng.normal(0, 0.05, (hidden, hidden))
            t[p + f"attention.self.{name}.bias"] = np.zeros(hidden)
        t[p + "attention.output.dense.weight"] = rng.normal(0, 0.05, (hidden, hidden))
        # a low-rank-ish FFN so p* varies between models
        u = rng.normal(0, 0.1, (ffn, 8)) @ rng.normal(0, 0.1, (8, hidden))
        t[p + "intermediate.dense.weight"] = u + rng.normal(0, 0.01, (ffn, hidden))
        t[p + "output.dense.weight"] = rng.normal(0, 0.03, (hidden, ffn))
    path.mkdir(parents=True, exist_ok=True)
    save_file({k: v.astype(np.float32) for k, v in t.items()}, str(path / "model.safetensors"))
    cfg = {"model_type": "bert", "architectures": ["BertForMaskedLM"],
           "num_hidden_layers": num_layers, "hidden_size": hidden,
           "num_attention_heads": heads, "intermediate_size": ffn, "hidden_act": "gelu",
           "vocab_size": vocab}
    (path / "config.json").write_text(json.dumps(cfg))
    return path


def write_grid(root: Path, layers=(2, 4), hiddens=(64, 128)) -> list[Path]:
    """One checkpoint per (L, N) under ``root/L{L}_N{N}``."""
    return [write_bert(root / f"L{L}_N{N}", L, N) for L in layers for N in hiddens]
