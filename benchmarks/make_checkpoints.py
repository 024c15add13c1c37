"""Write the random BERT-layout checkpoints the benchmarks use (safetensors, streamed to disk).

    python benchmarks/make_checkpoints.py bert-base [--out benchmarks/_data]   # L=12 N=768, fp32
    python benchmarks/make_checkpoints.py big [--out benchmarks/_data]         # L=24 N=2048, bf16

``big`` is ~1.21B parameters (L=24, N=2048, 16 heads, F=8192) in bf16, 2.4 GB on disk, in
shards of at most ``--shard-gb`` with a ``model.safetensors.index.json``. Weights are Gaussian
with std 0.02 (BERT's init), generated and written one tensor at a time: RAM stays small.
The output directory is gitignored (``benchmarks/_data/``); never commit it.
"""

from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path

import numpy as np

SHAPES = {
    "bert-base": dict(
        num_hidden_layers=12,
        hidden_size=768,
        num_attention_heads=12,
        intermediate_size=3072,
        dtype="F32",
    ),
    "big": dict(
        num_hidden_layers=24,
        hidden_size=2048,
        num_attention_heads=16,
        intermediate_size=8192,
        dtype="BF16",
    ),
}


def tensors(cfg: dict) -> list[tuple[str, tuple[int, ...]]]:
    n, f = cfg["hidden_size"], cfg["intermediate_size"]
    out: list[tuple[str, tuple[int, ...]]] = [
        ("bert.embeddings.position_embeddings.weight", (512, n)),
        ("bert.embeddings.LayerNorm.weight", (n,)),
    ]
    for l in range(cfg["num_hidden_layers"]):
        p = f"bert.encoder.layer.{l}."
        out += [(p + f"attention.self.{r}.weight", (n, n)) for r in ("query", "key", "value")]
        out += [(p + f"attention.self.{r}.bias", (n,)) for r in ("query", "key", "value")]
        out += [
            (p + "attention.output.dense.weight", (n, n)),
            (p + "intermediate.dense.weight", (f, n)),
            (p + "output.dense.weight", (n, f)),
        ]
    return out


def encode(a: np.ndarray, dtype: str) -> bytes:
    if dtype == "F32":
        return a.astype("<f4").tobytes()
    u = a.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes()  # round to nearest


def write_shard(
    path: Path, items: list[tuple[str, tuple[int, ...]]], dtype: str, rng: np.random.Generator
) -> None:
    size = 4 if dtype == "F32" else 2
    header, off = {}, 0
    for name, shape in items:
        nbytes = int(np.prod(shape)) * size
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + nbytes]}
        off += nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        for name, shape in items:
            if name.endswith("LayerNorm.weight"):
                a = np.ones(shape, dtype=np.float32)
            else:
                a = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
            fh.write(encode(a, dtype))


def make(kind: str, out: Path, shard_gb: float, seed: int = 0) -> Path:
    cfg = dict(SHAPES[kind])
    dtype = cfg.pop("dtype")
    d = out / f"random-{kind}"
    d.mkdir(parents=True, exist_ok=True)
    config = {
        "model_type": "bert",
        "architectures": ["BertModel"],
        "hidden_act": "gelu",
        "torch_dtype": "bfloat16" if dtype == "BF16" else "float32",
        **cfg,
    }
    (d / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    rng = np.random.default_rng(seed)
    size = 4 if dtype == "F32" else 2
    items = tensors(cfg)
    shards: list[list[tuple[str, tuple[int, ...]]]] = [[]]
    acc = 0
    for name, shape in items:
        nbytes = int(np.prod(shape)) * size
        if shards[-1] and acc + nbytes > shard_gb * 1e9:
            shards.append([])
            acc = 0
        shards[-1].append((name, shape))
        acc += nbytes
    for old in d.glob("model*.safetensors*"):
        old.unlink()
    if len(shards) == 1:
        write_shard(d / "model.safetensors", shards[0], dtype, rng)
    else:
        weight_map = {}
        for i, items_i in enumerate(shards):
            fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
            write_shard(d / fname, items_i, dtype, rng)
            weight_map.update({name: fname for name, _ in items_i})
        (d / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {}, "weight_map": weight_map}, indent=1) + "\n"
        )
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=sorted(SHAPES))
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "_data")
    ap.add_argument(
        "--shard-gb",
        type=float,
        default=None,
        help="max shard size (default: one file for bert-base, 0.5 GB for big)",
    )
    a = ap.parse_args()
    shard_gb = a.shard_gb if a.shard_gb is not None else (0.5 if a.kind == "big" else 100.0)
    print(make(a.kind, a.out, shard_gb))


if __name__ == "__main__":
    main()
