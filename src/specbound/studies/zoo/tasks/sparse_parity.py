"""``sparse-parity``: parity of k = 3 fixed positions of length-12 bit strings.

The sparse-function setting of Edelman et al. (2022). All 4096 strings exist; a fixed 1024 are
the test set, the rest the pool a model draws its ``train_size`` examples from (seeded).
Input tokens ``[2, bits...]`` (token 2 is the classification token).
"""

from __future__ import annotations

from typing import Any

from .... import extras
from .base import Data, Preset, Task, bert_classifier, permutation, standard_presets

T = 12
POSITIONS = (1, 5, 10)
TEST_SIZE = 1024
SPLIT_SEED = 20260602


class SparseParity(Task):
    name = "sparse-parity"
    description = f"parity of bits {list(POSITIONS)} of {T}-bit strings; BERT classifier"
    size_axis = "train_size"
    presets = standard_presets(
        tiny=Preset(
            axes={
                "depth": [1],
                "width": [32],
                "lr": [3e-3],
                "weight_decay": [0.0, 0.1],
                "train_size": [64, 512],
                "seed": [0, 1],
            },
            max_steps=60,
        ),
        v1=Preset(
            axes={
                "depth": [1, 2],
                "width": [32, 64],
                "lr": [1e-3, 3e-3],
                "weight_decay": [0.0, 0.1],
                "train_size": [128, 256, 512, 1024],
                "seed": [0, 1],
            },
            max_steps=1500,
        ),
        standard={
            "depth": [1, 2],
            "width": [32, 64],
            "lr": [1e-3, 3e-3],
            "weight_decay": [0.0, 0.1],
            "train_size": [128, 384, 768],
            "seed": [0, 1, 2],
        },
        max_steps=5000,
        size_axis="train_size",
        fixed=384,
    )

    def data(self) -> Data:
        torch = extras.torch()

        n = 2**T
        bits = (torch.arange(n).unsqueeze(1) >> torch.arange(T)) & 1
        x = torch.cat([torch.full((n, 1), 2, dtype=torch.long), bits.long()], dim=1)
        y = bits[:, list(POSITIONS)].sum(dim=1) % 2
        return Data(x=x, y=y.long(), num_classes=2, extra={"T": T, "positions": list(POSITIONS)})

    def size_problem(self, size: float) -> str | None:
        if float(size) != int(size) or not 1 <= int(size) <= 2**T - TEST_SIZE:
            return f"train_size must be an integer in 1..{2**T - TEST_SIZE}"
        return None

    def split(self, size: float, seed: int) -> tuple[list[int], list[int]]:
        perm = permutation(2**T, SPLIT_SEED)
        pool, test = perm[TEST_SIZE:], sorted(perm[:TEST_SIZE])
        order = permutation(len(pool), seed)
        return sorted(pool[i] for i in order[: int(size)]), test

    def build(self, depth: int, width: int, num_classes: int) -> Any:
        return bert_classifier(3, T + 1, depth, width, num_classes)
