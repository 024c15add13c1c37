"""Evaluate the data-dependent measures of one torch model (SPEC 12)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import SpecboundError
from ...validation import Interval, IsCallable, Names, Options, validate_params
from ._common import (
    ASCENT_STEPS,
    BISECTION_RANGE,
    BISECTION_STEPS,
    DRAWS,
    MAG_EPS,
    TARGET_DEVIATION,
    Examples,
    accuracy,
    check_finite_parameters,
    collect_examples,
    evaluation,
    generator,
    perturbed_parameters,
)
from .flatness import flatness_sigma
from .margin import kth_margin, margin_measures, margins
from .registry import BOUNDS, SEARCH, data_measure_names, resolve_data_measures
from .sharpness import sharpness_alpha

PERTURB = ("all", "matrices")


@dataclass(frozen=True)
class DataMeasures(Mapping[str, "float | None"]):
    """Measure name -> value (None when undefined), and how each was obtained.

    A read-only mapping (``dm["sharpness"]``, ``dict(dm)``, ``dm.values()``); ``measures`` is the
    same dict.

    ``details[name]``: for the flatness/sharpness measures the scale found (``sigma`` or
    ``alpha``), the ``deviation`` reached there, the bisection ``steps``, whether it
    ``converged`` (|d - 0.1| < 0.01) and ``at_end`` ("upper"/"lower" when the bisection never
    left that end of [0, 2]); for the margin measures ``gamma`` and ``k``. ``examples``: the
    examples used (m); ``n``: the training-set size; ``draws``: M; ``perturb``: which
    parameters were perturbed ("all" or "matrices").
    """

    measures: dict[str, float | None]
    notes: dict[str, str] = field(default_factory=dict)
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    examples: int = 0
    n: int = 0
    draws: int = DRAWS
    seed: int = 0
    perturb: str = "all"
    train_accuracy: float = float("nan")

    def __getitem__(self, name: str) -> float | None:
        return self.measures[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.measures)

    def __len__(self) -> int:
        return len(self.measures)

    def settings(self) -> dict[str, Any]:
        """Everything that fixes the values besides the model and its data (a cache key part)."""
        return {
            "examples": self.examples,
            "n": self.n,
            "draws": self.draws,
            "seed": self.seed,
            "perturb": self.perturb,
            "bisection": [*BISECTION_RANGE, BISECTION_STEPS, TARGET_DEVIATION],
            "ascent_steps": ASCENT_STEPS,
            "eps": MAG_EPS,
        }


def _model_device(model: Any) -> Any:
    for p in model.parameters():
        return p.device
    raise SpecboundError(f"{type(model).__name__} has no parameters")


#: The note of a flatness/sharpness search that never left an end of [0, 2] (``at_end``).
_AT_END_NOTES = {
    "upper": (
        "the accuracy drop never exceeded {target} on [0, 2]: {kind}* is the interval's upper end"
    ),
    "lower": (
        "the accuracy drop exceeded {target} at every {kind} tried: {kind}* is the interval's "
        "lower end"
    ),
}
#: The note of a margin-normalized measure computed without the weight measures.
_NEEDS_WEIGHTS = (
    "needs the model's weight measures: pass weights= (an Analysis) or a Hugging Face model"
)


@dataclass
class _Found:
    """The values, notes and details ``compute`` gathers, measure by measure."""

    values: dict[str, float | None] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    details: dict[str, dict[str, Any]] = field(default_factory=dict)

    def search(
        self,
        name: str,
        model: Any,
        ex: Examples,
        params: Any,
        saved: Any,
        acc0: float,
        gen: Any,
    ) -> None:
        """A flatness or sharpness measure: the bisection for its scale (``SEARCH[name]``)."""
        kind, magnitude = SEARCH[name]
        search = flatness_sigma if kind == "sigma" else sharpness_alpha
        b = search(model, ex, params, saved, acc0, gen, magnitude)
        self.values[name] = 1.0 / b.value**2
        self.details[name] = {
            kind: b.value,
            "deviation": b.deviation,
            "steps": b.steps,
            "converged": b.converged,
            "at_end": b.at_end,
        }
        if b.at_end in _AT_END_NOTES:
            self.notes[name] = _AT_END_NOTES[b.at_end].format(target=TARGET_DEVIATION, kind=kind)

    def margins(
        self,
        names: list[str],
        model: Any,
        ex: Examples,
        weights: Mapping[str, float | None] | None,
    ) -> None:
        """The margin measures ``names``: the normalized forms None with a note without
        ``weights``."""
        gamma, k = kth_margin(margins(model, ex))
        mv, mn = margin_measures(gamma, ex.n, weights or {}, list(BOUNDS))
        if weights is None:
            for m in names:
                if m != "inverse_margin":
                    mv[m] = None
                    mn[m] = _NEEDS_WEIGHTS
        for m in names:
            self.values[m] = mv[m]
            if m in mn:
                self.notes[m] = mn[m]
            self.details[m] = {"gamma": gamma, "k": k}


@validate_params(
    {
        "measures": (None, Names(data_measure_names, what="data measure")),
        "max_examples": (Interval(int, 1),),
        "seed": (Interval(int, 0, 2**63 - 1),),
        "perturb": (Options(*PERTURB),),
        "logits_fn": (None, IsCallable()),
        "n": (None, Interval(int, 1)),
    }
)
def compute(
    model: Any,
    batches: Iterable[Any],
    *,
    measures: Iterable[str] | str | None = None,
    max_examples: int = 2048,
    seed: int = 0,
    perturb: str = "all",
    logits_fn: Callable[[Any, Any], Any] | None = None,
    n: int | None = None,
    weights: Mapping[str, float | None] | None = None,
) -> DataMeasures:
    """SPEC 12's data measures of ``model`` (a torch ``nn.Module``) on ``batches``.

    ``weights``: the weight measures of the same model (``log_spectral_product`` and the bounds'
    log10 values, e.g. ``Analysis.measures``) for the margin-normalized forms; without them
    those forms are None with a note. See :func:`specbound.data_measures` for the rest.
    """
    names = resolve_data_measures(measures)  # the arguments were checked (@validate_params)
    if not hasattr(model, "parameters") or not hasattr(model, "modules"):
        raise SpecboundError(f"model must be a torch nn.Module, got {type(model).__name__}")
    device = _model_device(model)
    check_finite_parameters(model)
    ex: Examples
    if isinstance(batches, Examples):  # taken once by a Tracker
        ex = batches
    else:
        ex = collect_examples(batches, max_examples, device, n, logits_fn)
    order = data_measure_names()
    params = perturbed_parameters(model, perturb) if any(m in SEARCH for m in names) else []
    found = _Found()
    with evaluation(model, params) as saved:
        acc0 = accuracy(model, ex, finite=True)
        for name in names:
            if name in SEARCH:
                gen = generator(device, seed, order.index(name))
                found.search(name, model, ex, params, saved, acc0, gen)
        margin_names = [m for m in names if m not in SEARCH]
        if margin_names:
            found.margins(margin_names, model, ex, weights)
    values, notes, details = found.values, found.notes, found.details
    return DataMeasures(
        measures={m: values[m] for m in names},
        notes=notes,
        details=details,
        examples=ex.m,
        n=ex.n,
        draws=DRAWS,
        seed=seed,
        perturb=perturb,
        train_accuracy=acc0,
    )
