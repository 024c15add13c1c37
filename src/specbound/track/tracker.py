"""The :class:`Tracker` (SPEC 11): measures of a live model every k steps of a plain loop.

A tracker reads the live module's weights in place (no copy to disk), evaluates the chosen
SPEC 9 measures with :func:`specbound.analysis.analyze` (torch backend on the model's own
device) and, with ``data=``, SPEC 12's data measures on the training batches, and appends one
row per evaluation to ``DIR/track.csv`` (:mod:`specbound.track.trackfile`). What is recorded at
step t equals the post-hoc ``analyze`` / ``data_measures`` of the model saved at step t.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .. import extras
from ..errors import SpecboundError
from ..linalg.spectra import MATRIX_TYPES
from ..measures import measure_names
from ..measures.data import collect_examples, compute, data_measure_names, resolve_data_measures
from ..validation import Interval, check_choice, check_int, validate_params
from .config import TrackerConfig, tracker_config
from .live import (
    analyze_live,
    find_model,
    live_state,
    model_device,
    refuse_meta,
    weight_measures_for_margins,
)
from .sinks import make_sinks
from .trackfile import (
    ANALYSIS_COLUMNS,
    BASE_COLUMNS,
    FORM_COLUMNS,
    NOTE_COLUMN,
    TYPE_COLUMNS,
    TYPE_STATS,
    TrackFile,
)

#: ``step``'s constraint: an integer (numpy integers too; never "3" or 3.0).
STEP = (Interval(int),)

#: The tracker's clock (seconds); tests replace it with a fake one.
_clock = time.perf_counter


def all_measure_names() -> list[str]:
    """Every registered measure, in SPEC 9 order."""
    return list(measure_names())


def all_data_measure_names() -> list[str]:
    """Every data measure (SPEC 12), in its order."""
    return data_measure_names()


def computed_columns() -> list[str]:
    """Every column a tracker computes after the metrics, in file order (``nonfinite`` last)."""
    return (
        all_measure_names()
        + all_data_measure_names()
        + list(TYPE_COLUMNS)
        + list(ANALYSIS_COLUMNS)
        + list(FORM_COLUMNS)
        + [NOTE_COLUMN]
    )


# --- pure helpers --------------------------------------------------------------------------


def type_stats(
    matrix_type: np.ndarray, p_star: np.ndarray, contribution: np.ndarray
) -> dict[str, float | None]:
    """Per matrix type t: ``t_mean_p_star``, ``t_share_p0`` (share with p* = 0) and
    ``t_contribution`` (sum of c*). None for a type with no matrix."""
    out: dict[str, float | None] = {}
    mt = np.asarray(matrix_type).astype(str)
    for t in MATRIX_TYPES:
        sel = mt == t
        if not sel.any():
            out.update({f"{t}_{s}": None for s in TYPE_STATS})
            continue
        out[f"{t}_mean_p_star"] = float(np.mean(p_star[sel]))
        out[f"{t}_share_p0"] = float(np.mean(p_star[sel] == 0))
        out[f"{t}_contribution"] = float(np.sum(contribution[sel]))
    return out


def next_auto_step(
    step: int,
    steps_done: int,
    elapsed: float,
    analysis_total: float,
    analysis_next: float,
    budget: float,
) -> int:
    """The next step to evaluate at so that cumulative analysis time <= budget * wall time.

    With ``t`` seconds of training per step (``(elapsed - analysis_total) / steps_done``), the
    smallest k >= 1 with ``analysis_total + analysis_next <= budget * (elapsed + k t +
    analysis_next)``; ``step + 1`` when no step has been timed yet.
    """
    if steps_done <= 0:
        return step + 1
    per_step = max(elapsed - analysis_total, 1e-12) / steps_done
    need = (analysis_total + analysis_next) / budget - elapsed - analysis_next
    k = math.ceil(need / per_step) if need > 0 else 1
    return step + max(1, k)


def half_change_step(steps: np.ndarray, values: np.ndarray) -> int | None:
    """The first step at which ``values`` has covered half of its net change, i.e.
    ``(v - v_first) * sign(d) >= |d| / 2`` with ``d = v_last - v_first`` (finite values only);
    None with fewer than two finite values or no net change."""
    steps = np.asarray(steps, dtype=float)
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v)
    if ok.sum() < 2:
        return None
    s, v = steps[ok], v[ok]
    d = v[-1] - v[0]
    if d == 0:
        return None
    hit = np.nonzero((v - v[0]) * np.sign(d) >= abs(d) / 2)[0]
    return int(s[hit[0]])


def scalar_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The numeric scalars among ``metrics`` (Python numbers, numpy or one-element tensors)."""
    out: dict[str, float] = {}
    for k, v in metrics.items():
        if hasattr(v, "detach"):
            if v.numel() != 1:
                continue
            v = v.detach().to("cpu").item()
        if isinstance(v, (bool, np.bool_)):
            v = float(v)
        if isinstance(v, (int, float, np.integer, np.floating)):
            try:
                out[str(k)] = float(v)
            except OverflowError:  # an int beyond float64
                out[str(k)] = math.inf
    return out


def weights_finite(module: Any) -> bool:
    """Whether every floating-point tensor of the module's state is finite."""
    torch = extras.torch()

    for t in live_state(module).values():
        if isinstance(t, torch.Tensor) and t.is_floating_point() and not bool(t.isfinite().all()):
            return False
    return True


def _as_float(v: float | None) -> float | None:
    return None if v is None else float(v)


def _analysis_value(a: Any, name: str) -> float | None:
    v = getattr(a, name, None)
    if callable(v):
        v = v()
    if v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


# --- the tracker ---------------------------------------------------------------------------


class Tracker:
    """Evaluate measures on a live model during a plain training loop (SPEC 11).

    ``Tracker(model, TrackerConfig(out=..., every=...))`` or, the same,
    ``Tracker(model, out=..., every=...)``: the keywords are :class:`TrackerConfig`'s fields
    (given with a config, they replace its fields). ``config``: the model's Hugging Face
    config when ``model`` has none. The weights at creation are the init for
    ``distance_from_init``. ``data``: the training batches ``(inputs, labels)``; then SPEC 12's
    data measures are evaluated too; the first ``max_examples`` examples are taken once, at
    creation.
    """

    def __init__(
        self,
        model: Any,
        settings: TrackerConfig | None = None,
        *,
        config: Any = None,
        data: Iterable[Any] | None = None,
        **options: Any,
    ) -> None:
        cfg = tracker_config(settings, options)
        self.settings = cfg
        self.every: int | str = cfg.every if cfg.every == "auto" else int(cfg.every)
        self.budget = float(cfg.budget)

        refuse_meta(model)
        self.model = model
        self.module = model if config is not None else find_model(model)
        self.config = config if config is not None else self.module.config
        # the names were checked by TrackerConfig (a bare string is one name)
        self.measures = all_measure_names() if cfg.measures is None else list(cfg.measures)
        self.strict = cfg.strict
        self.data_names: list[str] = []
        self.data_options: dict[str, Any] = {}
        self._examples: Any = None
        if data is not None:
            self._examples = self._prepare_data(data, cfg.data_measures, cfg.data_options)
        elif cfg.data_measures is not None or cfg.data_options is not None:
            raise SpecboundError("data_measures= and data_options= need data= (the batches)")
        self.device = model_device(self.module) if cfg.device == "auto" else cfg.device
        self.l_phi, self.grid_m = cfg.l_phi, cfg.grid_m
        self.init = {k: v.detach().to("cpu", copy=True) for k, v in live_state(self.module).items()}
        self.out = Path(cfg.out)
        self.file = TrackFile(
            self.out,
            {
                "measures": self.measures,
                "data_measures": self.data_names,
                "every": self.every,
                "budget": self.budget,
                "device": self.device,
                "model": type(self.module).__name__,
            },
            resume=cfg.resume,
            overwrite=cfg.overwrite,
        )
        self._recorded = self.file.steps
        self.sinks: list[Any] = make_sinks(self.out, cfg.tensorboard, cfg.wandb, cfg.trackio)
        self._t0 = _clock()
        self._analysis_total = 0.0
        self._first_step: int | None = None
        self._last_step: int | None = None
        self._next_step: int | None = None
        self._warned = False
        self.failed_evaluations = 0
        self.rows: list[dict[str, Any]] = []

    def _prepare_data(
        self,
        data: Iterable[Any],
        names: Iterable[str] | str | None,
        options: Mapping[str, Any] | None,
    ) -> Any:
        self.data_names = resolve_data_measures(names)
        opts = dict(options or {})
        allowed = ("max_examples", "seed", "perturb", "logits_fn", "n")
        for k in opts:
            check_choice(k, "data_options key", allowed)
        max_examples = check_int(opts.pop("max_examples", 2048), "max_examples", min=1)
        n = opts.pop("n", None)
        if n is not None:
            n = check_int(n, "n", min=1)
        logits_fn: Callable[[Any, Any], Any] | None = opts.pop("logits_fn", None)
        if logits_fn is not None and not callable(logits_fn):
            raise SpecboundError(f"logits_fn must be callable, got {type(logits_fn).__name__}")
        self.data_options = {
            "seed": check_int(opts.pop("seed", 0), "seed", min=0, max=2**63 - 1),
            "perturb": check_choice(opts.pop("perturb", "all"), "perturb", ("all", "matrices")),
        }
        device = next(iter(self.model.parameters())).device
        return collect_examples(data, max_examples, device, n, logits_fn)

    # the schedule
    def due(self, step: int) -> bool:
        """Whether ``step`` is an evaluation step (never the same step twice, never a step a
        resumed file already holds)."""
        if self._first_step is None:
            self._first_step = step
        if step == self._last_step or int(step) in self._recorded:
            return False
        if self.every == "auto":
            return self._next_step is None or step >= self._next_step
        return step % int(self.every) == 0

    @validate_params({"step": STEP})
    def step(self, step: int, **metrics: Any) -> dict[str, Any] | None:
        """Call once per training step; evaluates (and returns the row) when due."""
        if self.due(step):
            return self.evaluate(step, **metrics)
        return None

    @validate_params({"step": STEP})
    def evaluate(self, step: int, **metrics: Any) -> dict[str, Any]:
        """Evaluate the measures now and append the row."""
        return self.emit(self.compute(step), metrics)

    def _failed(self, step: int, why: str) -> None:
        self.failed_evaluations += 1
        if self.strict:
            raise SpecboundError(f"step {step}: {why}")
        if not self._warned:
            warnings.warn(
                f"specbound: step {step}: {why}; its measures are left empty (this warning is "
                "shown once; pass strict=True to raise)",
                stacklevel=4,
            )
            self._warned = True

    def _analyze(self, step: int) -> Any:
        if not weights_finite(self.module):
            self._failed(step, "the weights are not finite")
            return None
        want = list(self.measures)
        want += [m for m in weight_measures_for_margins(self.data_names) if m not in want]
        try:
            return analyze_live(
                self.module,
                self.config,
                want,
                init=self.init if "distance_from_init" in want else None,
                device=self.device,
                l_phi=self.l_phi,
                grid_m=self.grid_m,
            )
        except Exception as exc:
            self._failed(step, f"the analysis failed ({exc})")
            return None

    def _data(self, step: int, a: Any) -> dict[str, float | None]:
        out: dict[str, float | None] = {m: None for m in self.data_names}
        if self._examples is None or a is None:
            return out

        try:
            dm = compute(
                self.model,
                self._examples,
                measures=self.data_names,
                weights=a.measures,
                **self.data_options,
            )
        except Exception as exc:
            self._failed(step, f"the data measures failed ({exc})")
            return out
        out.update(dm.measures)
        return out

    # the two halves of an evaluation (the Trainer callback fills metrics in later)
    def compute(self, step: int) -> dict[str, Any]:
        """The row for ``step`` without metrics: times, measures and matrix-type stats."""
        step = int(step)
        if step in self._recorded:
            raise SpecboundError(f"step {step} is already in {self.file.csv}; one row per step")
        if self._first_step is None:
            self._first_step = step
        wall = _clock() - self._t0
        start = _clock()
        a = self._analyze(step)
        values = {m: (a.measures.get(m) if a is not None else None) for m in self.measures}
        data = self._data(step, a)
        if a is not None:
            cols = a.matrix_columns()
            stats = type_stats(cols["matrix_type"], cols["p_star"], cols["contribution"])
        else:
            stats = {c: None for c in TYPE_COLUMNS}
        extras = {c: (_analysis_value(a, c) if a is not None else None) for c in ANALYSIS_COLUMNS}
        forms = a.fixed_index_forms() if a is not None else {}
        extras.update({c: _as_float(forms.get(c)) for c in FORM_COLUMNS})
        took = _clock() - start
        self._analysis_total += took
        self._last_step = step
        if self.every == "auto":
            elapsed = _clock() - self._t0
            self._next_step = next_auto_step(
                step, step - self._first_step, elapsed, self._analysis_total, took, self.budget
            )
        return {
            "step": step,
            "wall_s": wall,
            "analysis_s": took,
            **values,
            **data,
            **stats,
            **extras,
        }

    def emit(self, row: Mapping[str, Any], metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Append ``row`` with ``metrics`` to track.csv and the sinks."""
        mets = scalar_metrics(metrics)
        reserved = set(row) | set(BASE_COLUMNS) | set(computed_columns())
        clash = [k for k in mets if k in reserved]
        if clash:
            raise SpecboundError(
                f"metric '{clash[0]}' has the name of a track.csv column; rename it"
            )
        full = {
            **{k: row[k] for k in BASE_COLUMNS},
            **mets,
            **{k: v for k, v in row.items() if k not in BASE_COLUMNS},
        }
        cells = self.file.append(full, computed_columns())
        full[NOTE_COLUMN] = int(cells[NOTE_COLUMN])
        self._recorded.add(int(full["step"]))
        self.rows.append(full)
        scalars = {
            k: float(v)
            for k, v in full.items()
            if k != "step" and v is not None and math.isfinite(float(v))
        }
        for sink in list(self.sinks):
            try:
                sink.write(int(full["step"]), scalars)
            except Exception as exc:
                warnings.warn(
                    f"specbound: {type(sink).__name__} failed ({exc}); disabled", stacklevel=2
                )
                self.sinks.remove(sink)
        return full

    @property
    def analysis_seconds(self) -> float:
        """Total time spent in evaluations."""
        return self._analysis_total

    def close(self) -> None:
        """Flush and close the sinks."""
        for sink in self.sinks:
            sink.close()
        self.sinks = []
