"""Tiny random BERT-shaped checkpoints for the study/report/reproduce tests."""

from __future__ import annotations

from pathlib import Path

from tests.support.checkpoints import write_tiny_bert


def write_bert(
    path: Path,
    num_layers: int,
    hidden: int,
    heads: int | None = None,
    seed: int = 0,
    vocab: int = 50,
) -> Path:
    """A random BERT encoder with F = 2N, fp32, "bert." names, embeddings and q/k/v biases, a
    low-rank-ish FFN so p* varies between models (conftest.write_tiny_bert)."""
    return write_tiny_bert(
        path,
        num_layers,
        hidden,
        heads or max(hidden // 64, 1),
        2 * hidden,
        seed + 1000 * num_layers + hidden,
        {"architectures": ["BertForMaskedLM"]},
        scale={"attention": 0.05, "intermediate": 0.03, "output": 0.03},
        prefix="bert.",
        vocab=vocab,
        biases=True,
        ffn_low_rank=8,
    )


def write_grid(root: Path, layers=(2, 4), hiddens=(64, 128)) -> list[Path]:
    """One checkpoint per (L, N) under ``root/L{L}_N{N}``."""
    return [write_bert(root / f"L{L}_N{N}", L, N) for L in layers for N in hiddens]
