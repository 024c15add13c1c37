"""``digits``: scikit-learn's bundled 8x8 handwritten digits, a ViT on 2x2 patches.

1797 images; a fixed 597 are the test set, the other 1200 the pool a model draws its
``train_size`` training images from (seeded). Pixels 0..16 are scaled to [-1, 1].
"""

from __future__ import annotations

from typing import Any

from .... import extras
from ....errors import SpecboundError
from .base import NUM_HEADS, Data, Preset, Task, permutation, standard_presets

TEST_SIZE = 597
SPLIT_SEED = 20260601


class Digits(Task):
    name = "digits"
    description = "sklearn 8x8 digits (10 classes), ViT with 2x2 patches"
    size_axis = "train_size"
    presets = standard_presets(
        tiny=Preset(  # every model reaches the target loss (67-139 steps): correlate runs
            axes={
                "depth": [1],
                "width": [32],
                "lr": [1e-2],
                "weight_decay": [0.0, 0.1],
                "train_size": [50, 100],
                "seed": [0, 1],
            },
            max_steps=200,
        ),
        v1=Preset(
            axes={
                "depth": [1, 2],
                "width": [32, 64],
                "lr": [3e-3, 1e-2],
                "weight_decay": [0.0, 0.1],
                "train_size": [75, 150, 300, 600],
                "seed": [0, 1],
            },
            max_steps=300,
        ),
        standard={
            "depth": [1, 2],
            "width": [32, 64],
            "lr": [3e-3, 1e-2],
            "weight_decay": [0.0, 0.1],
            "train_size": [75, 200, 600],
            "seed": [0, 1, 2],
        },
        max_steps=500,
        size_axis="train_size",
        fixed=200,
    )

    def data(self) -> Data:
        torch = extras.torch()

        try:
            from sklearn.datasets import load_digits
        except ImportError as exc:
            raise SpecboundError(
                f"the digits task needs scikit-learn; {extras.install_hint('zoo')}"
            ) from exc
        d = load_digits()
        x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 8.0 - 1.0
        y = torch.tensor(d.target, dtype=torch.long)
        return Data(x=x, y=y, num_classes=10)

    def _pool_test(self) -> tuple[list[int], list[int]]:
        perm = permutation(1797, SPLIT_SEED)
        return perm[TEST_SIZE:], sorted(perm[:TEST_SIZE])

    def size_problem(self, size: float) -> str | None:
        if float(size) != int(size) or not 1 <= int(size) <= 1797 - TEST_SIZE:
            return f"train_size must be an integer in 1..{1797 - TEST_SIZE}"
        return None

    def split(self, size: float, seed: int) -> tuple[list[int], list[int]]:
        pool, test = self._pool_test()
        order = permutation(len(pool), seed)
        return sorted(pool[i] for i in order[: int(size)]), test

    def build(self, depth: int, width: int, num_classes: int) -> Any:
        transformers = extras.transformers()

        cfg = transformers.ViTConfig(  # num_labels: a **kwargs field
            image_size=8,
            patch_size=2,
            num_channels=1,
            hidden_size=width,
            num_hidden_layers=depth,
            num_attention_heads=NUM_HEADS,
            intermediate_size=4 * width,
            hidden_act="gelu",
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            num_labels=num_classes,
        )
        return transformers.ViTForImageClassification(cfg)
