"""What a zoo task is: a bundled or generated data set, a split rule, a Hugging Face model.

A task owns everything specific to one problem; the trainer (``train.py``) owns the rest.
Every model a task builds is a ``transformers`` class, so ``save_pretrained`` gives a standard
checkpoint directory that specbound reads like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .... import extras

#: The hyperparameter axes every task has; the task adds its data-size axis before ``seed``.
COMMON_AXES = ("depth", "width", "lr", "weight_decay")

#: Attention heads of every zoo model (width must be a multiple).
NUM_HEADS = 4


@dataclass(frozen=True)
class Preset:
    """A named default grid: axis -> values, and the step cap."""

    axes: dict[str, list[Any]]
    max_steps: int


@dataclass
class Data:
    """All examples of a task (inputs ``x``, integer labels ``y``) and its number of classes."""

    x: Any
    y: Any
    num_classes: int
    extra: dict[str, Any] = field(default_factory=dict)


class Task:
    """Base class. Subclasses set the class attributes and implement the four methods.

    ``size_axis`` is ``"train_size"`` (number of training examples) or ``"train_fraction"``
    (share of all examples used for training).
    """

    name: str = ""
    description: str = ""
    size_axis: str = "train_size"
    presets: ClassVar[dict[str, Preset]] = {}

    @property
    def axes(self) -> tuple[str, ...]:
        """Axis columns in manifest order: depth, width, lr, weight_decay, size, seed."""
        return (*COMMON_AXES, self.size_axis, "seed")

    def data(self) -> Data:
        """Every example of the task, deterministic (no randomness beyond fixed seeds)."""
        raise NotImplementedError

    def split(self, size: float, seed: int) -> tuple[list[int], list[int]]:
        """(train indices, test indices) into ``data()`` for a size-axis value and a seed."""
        raise NotImplementedError

    def size_problem(self, size: float) -> str | None:
        """None when ``size`` is a legal size-axis value, else what is wrong with it."""
        raise NotImplementedError

    def build(self, depth: int, width: int, num_classes: int) -> Any:
        """A freshly initialized ``transformers`` model (call after seeding torch)."""
        raise NotImplementedError

    def logits(self, model: Any, x: Any) -> Any:
        """Class logits of ``model`` on a batch ``x``."""
        return model(x).logits


def standard_presets(
    tiny: Preset,
    v1: Preset,
    standard: dict[str, list[Any]],
    max_steps: int,
    size_axis: str,
    fixed: Any,
) -> dict[str, Preset]:
    """The presets of a task (issue 17, item 3).

    ``standard``: the grid a correlation study should use: >= 3 seeds per configuration (the
    configuration bootstrap resamples replicates), >= 3 values of n (strata for the beyond-n
    statistics), a step cap every configuration is meant to reach the target within.
    ``fixed-n``: the same grid with n held at ``fixed``, so no statistic can be "n did it".
    ``standard-v1``: the grid of the first published zoos (2 seeds, 4 values of n), kept so
    they can be re-run. ``tiny``: 8 models, plumbing (60 steps; digits: 200, where every model
    converges, so `correlate` runs on it as it is).
    """
    return {
        "tiny": tiny,
        "standard": Preset(axes=standard, max_steps=max_steps),
        "fixed-n": Preset(axes={**standard, size_axis: [fixed]}, max_steps=max_steps),
        "standard-v1": v1,
    }


def bert_classifier(vocab_size: int, seq_len: int, depth: int, width: int, num_classes: int) -> Any:
    """``BertForSequenceClassification`` without dropout, GELU, FFN width 4 * width."""
    transformers = extras.transformers()

    cfg = transformers.BertConfig(  # num_labels: a **kwargs field
        vocab_size=vocab_size,
        hidden_size=width,
        num_hidden_layers=depth,
        num_attention_heads=NUM_HEADS,
        intermediate_size=4 * width,
        hidden_act="gelu",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        classifier_dropout=0.0,
        max_position_embeddings=seq_len,
        type_vocab_size=1,
        num_labels=num_classes,
        pad_token_id=0,
    )
    return transformers.BertForSequenceClassification(cfg)


def permutation(n: int, seed: int) -> list[int]:
    """A seeded permutation of range(n) (torch's generator, so it is the same everywhere)."""
    torch = extras.torch()

    g = torch.Generator().manual_seed(int(seed))
    return torch.randperm(n, generator=g).tolist()
