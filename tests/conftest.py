"""Shared fixtures: the real MiniLM, its scaled copies, and an isolated spectra cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SPECBOUND_CACHE_DIR", str(tmp_path_factory.mktemp("sbcache")))


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    from specbound.demo import minilm_path

    return minilm_path()


@pytest.fixture(scope="session")
def scaled_minilm(tmp_path_factory, minilm_dir):
    """factor -> directory of MiniLM with every encoder weight matrix multiplied by factor."""
    from safetensors.numpy import load_file, save_file

    sd = load_file(str(minilm_dir / "model.safetensors"))
    out = {}
    for f in (0.1, 0.2, 0.3):
        d = tmp_path_factory.mktemp(f"minilm_x{f}")
        scaled = {k: (v * np.float32(f) if k.startswith("encoder.layer.") and v.ndim == 2 else v)
                  for k, v in sd.items()}
        save_file(scaled, str(d / "model.safetensors"))
        shutil.copy(minilm_dir / "config.json", d / "config.json")
        out[f] = d
    return out


def write_tiny_bert(path: Path, layers: int = 2, hidden: int = 8, heads: int = 2,
                    ffn: int = 16, seed: int = 0, config_extra: dict | None = None) -> Path:
    """A random BERT-shaped checkpoint (safetensors + config.json) for plumbing tests."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(seed)
    path.mkdir(parents=True, exist_ok=True)
    sd = {}
    for l in range(layers):
        p = f"encoder.layer.{l}."
        for n in ("query", "key", "value"):
            w = rng.standard_normal((hidden, hidden)).astype("f4")
            sd[p + f"attention.self.{n}.weight"] = w
        sd[p + "attention.output.dense.weight"] = rng.standard_normal((hidden, hidden)).astype("f4")
        sd[p + "intermediate.dense.weight"] = rng.standard_normal((ffn, hidden)).astype("f4")
        sd[p + "output.dense.weight"] = rng.standard_normal((hidden, ffn)).astype("f4")
    save_file(sd, str(path / "model.safetensors"))
    cfg = {"model_type": "bert", "num_hidden_layers": layers, "hidden_size": hidden,
           "num_attention_heads": heads, "intermediate_size": ffn, "hidden_act": "gelu"}
    cfg.update(config_extra or {})
    (path / "config.json").write_text(json.dumps(cfg))
    return path
