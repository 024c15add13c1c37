"""Measures during training (SPEC 11): ``Tracker`` for plain loops, callbacks for frameworks.

A tracker reads the live module's weights in place (no copy to disk), evaluates the chosen
SPEC 9 measures with :func:`specbound.analysis.analyze` (torch backend on the model's own
device), and appends one row per evaluation to ``DIR/track.csv``::

    step, wall_s, analysis_s, <metrics the loop reported>, <measures>,
    QK_mean_p_star, QK_share_p0, QK_contribution, ... (OV, M_in, M_out)

``distance_from_init`` is taken against the weights at the start of training (when the tracker
is created, or at the framework's train-begin event), kept in memory as CPU clones. What is
recorded at step t equals ``analyze`` of the checkpoint saved at step t (tested to 1e-10).

Rows are appended and flushed one by one; a metric that first appears later rewrites the file
atomically with the wider header. ``track.json`` beside it marks the file as specbound's: a run
into an existing ``track.csv`` that specbound did not write is refused.

* :class:`Tracker` -- ``tracker.step(step, train_loss=..., test_acc=...)`` evaluates when
  ``step % every == 0`` (or, with ``every="auto"``, when the time budget allows);
  ``tracker.evaluate(step, **metrics)`` evaluates now.
* ``SpecboundCallback`` -- a ``transformers.TrainerCallback``.
* ``SpecboundLightningCallback`` -- a ``lightning`` (or ``pytorch_lightning``) ``Callback``.

Optional sinks: TensorBoard (``DIR/tensorboard``, needs the ``tensorboard`` package), the active
Weights & Biases run (when ``wandb`` is imported and ``wandb.run`` is set) and an active trackio
run.
"""

from __future__ import annotations

import csv
import io
import json
import math
import numbers
import os
import sys
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._version import __version__
from .errors import SpecboundError
from .spectra import MATRIX_TYPES

TRACK_CSV = "track.csv"
TRACK_JSON = "track.json"
TRACK_FORMAT = "specbound-track/1"
#: The first columns of every track.csv.
BASE_COLUMNS = ("step", "wall_s", "analysis_s")
#: Per matrix type: mean p*, share of matrices at p* = 0, summed contribution c*.
TYPE_STATS = ("mean_p_star", "share_p0", "contribution")
TYPE_COLUMNS = tuple(f"{t}_{s}" for t in MATRIX_TYPES for s in TYPE_STATS)
#: The tracker's clock (seconds); tests replace it with a fake one.
_clock = time.perf_counter
#: log_history keys of the Trainer that are bookkeeping, not metrics.
_TRAINER_SKIP = {"step", "total_flos"}


def all_measure_names() -> list[str]:
    """Every registered measure, in SPEC 9 order."""
    from .measures import measure_names

    return list(measure_names())


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
            out[str(k)] = float(v)
    return out


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(int(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))  # shortest round-trip form
    return str(v)


def live_state(module: Any) -> dict[str, Any]:
    """``module.state_dict()`` without tied duplicates (tensors sharing storage), as
    ``save_pretrained`` writes it; tensors are the live ones, not copies."""
    out: dict[str, Any] = {}
    seen: set[tuple[Any, ...]] = set()
    for name, t in module.state_dict().items():
        if hasattr(t, "data_ptr") and t.numel() > 0:
            key = (str(t.device), t.data_ptr(), str(t.dtype), tuple(t.shape), tuple(t.stride()))
            if key in seen:
                continue
            seen.add(key)
        out[name] = t
    return out


def find_model(module: Any) -> Any:
    """``module`` if it has a Hugging Face ``.config``, else its first submodule that has one."""

    def has_config(m: Any) -> bool:
        cfg = getattr(m, "config", None)
        return cfg is not None and (hasattr(cfg, "to_dict") or isinstance(cfg, Mapping))

    if has_config(module):
        return module
    if hasattr(module, "named_modules"):
        for _, sub in module.named_modules():
            if has_config(sub):
                return sub
    raise SpecboundError(
        f"{type(module).__name__} has no Hugging Face .config (nor does any submodule); pass "
        "the transformers model itself, or config= with model_type and sizes"
    )


def model_device(module: Any) -> str | None:
    """The analyze device for ``module``: its torch device when cpu/cuda, else None (numpy)."""
    for p in module.parameters():
        dev = p.device
        if dev.type == "cuda":
            return str(dev)
        if dev.type == "cpu":
            return "cpu"
        return None
    return None


# --- sinks ---------------------------------------------------------------------------------


class _TensorBoardSink:
    def __init__(self, log_dir: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(log_dir))

    def write(self, step: int, values: Mapping[str, float]) -> None:
        for k, v in values.items():
            self.writer.add_scalar(f"specbound/{k}", v, global_step=step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class _LogSink:
    """A Weights & Biases run or the trackio module: both take ``.log({name: value})``."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def write(self, step: int, values: Mapping[str, float]) -> None:
        data = {f"specbound/{k}": v for k, v in values.items()}
        data["specbound/step"] = step
        self.target.log(data)

    def close(self) -> None:
        pass


def _tensorboard_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("tensorboard") is not None


def _active_wandb_run() -> Any:
    wandb = sys.modules.get("wandb")
    return getattr(wandb, "run", None) if wandb is not None else None


def _active_trackio() -> Any:
    trackio = sys.modules.get("trackio")
    if trackio is None:
        return None
    try:
        run = trackio.context_vars.current_run.get()
    except Exception:  # noqa: BLE001 -- an unknown trackio version: no sink
        return None
    return trackio if run is not None else None


# --- the CSV file --------------------------------------------------------------------------


class TrackFile:
    """``DIR/track.csv`` (+ ``track.json``): append-only rows, flushed one by one."""

    def __init__(self, out: str | os.PathLike[str], meta: Mapping[str, Any]) -> None:
        self.dir = Path(out)
        self.csv = self.dir / TRACK_CSV
        self.json = self.dir / TRACK_JSON
        self.columns: list[str] = []
        self.rows: list[dict[str, str]] = []
        self.meta = dict(meta)
        self._marked = False
        self._check_and_load()

    def _mark(self) -> None:
        """Write track.json (before the first row): the file is specbound's."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self.json.write_text(
                json.dumps(
                    {"written_by": f"specbound {__version__}", "format": TRACK_FORMAT, **self.meta},
                    indent=1,
                    default=str,
                )
                + "\n"
            )
        except OSError as exc:
            raise SpecboundError(
                f"cannot write {self.json}: {exc.strerror or exc}; choose another out directory"
            ) from None
        self._marked = True

    def _ours(self) -> bool:
        try:
            info = json.loads(self.json.read_text())
        except (OSError, ValueError):
            return False
        return isinstance(info, dict) and info.get("format") == TRACK_FORMAT

    def _check_and_load(self) -> None:
        if self.dir.exists() and not self.dir.is_dir():
            raise SpecboundError(f"out {self.dir} is a file; pass a directory for track.csv")
        if self.json.exists() and not self._ours():
            raise SpecboundError(
                f"{self.json} was not written by specbound; move it away or "
                "choose another out directory"
            )
        if not self.csv.exists():
            return
        if not self._ours():
            raise SpecboundError(
                f"{self.csv} exists and was not written by specbound (no "
                f"{TRACK_JSON}); move it away or choose another out directory"
            )
        try:
            with self.csv.open(newline="") as fh:
                reader = csv.DictReader(fh)
                header = list(reader.fieldnames or [])
                rows = [dict(r) for r in reader]
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise SpecboundError(
                f"cannot read {self.csv} ({exc}); move it away or choose another out directory"
            ) from None
        if tuple(header[:3]) != BASE_COLUMNS:
            raise SpecboundError(
                f"{self.csv} does not start with {','.join(BASE_COLUMNS)}; it "
                "was not written by specbound: move it away"
            )
        self.columns = header
        self.rows = [{k: (v or "") for k, v in r.items() if k is not None} for r in rows]

    def append(self, row: Mapping[str, Any], tail: Sequence[str]) -> None:
        """Append ``row``; keys not yet in the header widen it (file rewritten atomically).

        Column order: the base columns, metrics in order of appearance, then ``tail``
        (measures and matrix-type columns) in its order.
        """
        if not self._marked:
            self._mark()
        cells = {k: _cell(v) for k, v in row.items()}
        new = [k for k in cells if k not in self.columns]
        self.rows.append(cells)
        if new or not self.csv.exists():
            cols = list(self.columns) + new
            tail_set = set(tail)
            self.columns = (
                list(BASE_COLUMNS)
                + [c for c in cols if c not in BASE_COLUMNS and c not in tail_set]
                + [c for c in tail if c in cols]
            )
            self._rewrite()
            return
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow([cells.get(c, "") for c in self.columns])
        with self.csv.open("a", newline="") as fh:
            fh.write(buf.getvalue())
            fh.flush()
            os.fsync(fh.fileno())

    def _rewrite(self) -> None:
        from .io import atomic_file

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(self.columns)
        for r in self.rows:
            w.writerow([r.get(c, "") for c in self.columns])
        with atomic_file(self.csv, "w") as fh:
            fh.write(buf.getvalue())
            fh.flush()
            os.fsync(fh.fileno())


# --- the tracker ---------------------------------------------------------------------------


class Tracker:
    """Evaluate measures on a live model during a plain training loop (SPEC 11).

    ``every``: evaluate when ``step % every == 0``, or ``"auto"``: keep cumulative analysis time
    <= ``budget`` (default 5%) of the wall time since the tracker started. ``measures``: names
    (default: every SPEC 9 measure). The weights at creation are the init for
    ``distance_from_init``. ``tensorboard``/``wandb``/``trackio``: None = use when available.
    """

    def __init__(
        self,
        model: Any,
        *,
        every: int | str = 100,
        out: str | os.PathLike[str],
        measures: Iterable[str] | None = None,
        budget: float = 0.05,
        config: Any = None,
        device: str | None = "auto",
        l_phi: float | None = None,
        grid_m: int | None = None,
        tensorboard: bool | None = None,
        wandb: bool | None = None,
        trackio: bool | None = None,
    ) -> None:
        if every != "auto" and (
            isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 1
        ):
            raise SpecboundError(f"every must be a positive integer or 'auto', got {every!r}")
        if not (isinstance(budget, (int, float)) and 0 < budget < 1):
            raise SpecboundError(f"budget must be a share of wall time in (0, 1), got {budget!r}")
        self.every: int | str = every if every == "auto" else int(every)
        self.budget = float(budget)
        self.module = model if config is not None else find_model(model)
        self.config = config if config is not None else self.module.config
        names = all_measure_names()
        self.measures = list(names) if measures is None else list(measures)
        unknown = [m for m in self.measures if m not in names]
        if unknown:
            raise SpecboundError(f"unknown measure '{unknown[0]}'; choose from {', '.join(names)}")
        self.device = model_device(self.module) if device == "auto" else device
        self.l_phi, self.grid_m = l_phi, grid_m
        self.init = {k: v.detach().to("cpu", copy=True) for k, v in live_state(self.module).items()}
        self.out = Path(out)
        self.file = TrackFile(
            self.out,
            {
                "measures": self.measures,
                "every": self.every,
                "budget": self.budget,
                "device": self.device,
                "model": type(self.module).__name__,
            },
        )
        self.sinks: list[Any] = []
        if tensorboard or (tensorboard is None and _tensorboard_available()):
            try:
                self.sinks.append(_TensorBoardSink(self.out / "tensorboard"))
            except ImportError:
                if tensorboard:
                    raise SpecboundError(
                        "tensorboard=True needs the tensorboard package: "
                        "pip install 'specbound[tensorboard]'"
                    ) from None
        run = _active_wandb_run() if wandb is not False else None
        if run is not None:
            self.sinks.append(_LogSink(run))
        tio = _active_trackio() if trackio is not False else None
        if tio is not None:
            self.sinks.append(_LogSink(tio))
        self._t0 = _clock()
        self._analysis_total = 0.0
        self._first_step: int | None = None
        self._last_step: int | None = None
        self._next_step: int | None = None
        self.rows: list[dict[str, Any]] = []

    # the schedule
    def due(self, step: int) -> bool:
        """Whether ``step`` is an evaluation step (never the same step twice)."""
        if self._first_step is None:
            self._first_step = step
        if step == self._last_step:
            return False
        if self.every == "auto":
            return self._next_step is None or step >= self._next_step
        return step % int(self.every) == 0

    def step(self, step: int, **metrics: Any) -> dict[str, Any] | None:
        """Call once per training step; evaluates (and returns the row) when due."""
        if self.due(step):
            return self.evaluate(step, **metrics)
        return None

    def evaluate(self, step: int, **metrics: Any) -> dict[str, Any]:
        """Evaluate the measures now and append the row."""
        return self.emit(self.compute(step), metrics)

    # the two halves of an evaluation (the Trainer callback fills metrics in later)
    def compute(self, step: int) -> dict[str, Any]:
        """The row for ``step`` without metrics: times, measures and matrix-type stats."""
        from .analysis import analyze

        step = int(step)
        if self._first_step is None:
            self._first_step = step
        wall = _clock() - self._t0
        start = _clock()
        a = analyze(
            live_state(self.module),
            config=self.config,
            measures=self.measures,
            init=self.init,
            cache=False,
            device=self.device,
            l_phi=self.l_phi,
            grid_m=self.grid_m,
            name=type(self.module).__name__,
        )
        values = {m: a.measures.get(m) for m in self.measures}
        cols = a.matrix_columns()
        stats = type_stats(cols["matrix_type"], cols["p_star"], cols["contribution"])
        took = _clock() - start
        self._analysis_total += took
        self._last_step = step
        if self.every == "auto":
            elapsed = _clock() - self._t0
            self._next_step = next_auto_step(
                step, step - self._first_step, elapsed, self._analysis_total, took, self.budget
            )
        return {"step": step, "wall_s": wall, "analysis_s": took, **values, **stats}

    def emit(self, row: Mapping[str, Any], metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Append ``row`` with ``metrics`` to track.csv and the sinks."""
        mets = scalar_metrics(metrics)
        clash = [k for k in mets if k in row]
        if clash:
            raise SpecboundError(
                f"metric '{clash[0]}' has the name of a track.csv column; rename it"
            )
        full = {
            **{k: row[k] for k in BASE_COLUMNS},
            **mets,
            **{k: v for k, v in row.items() if k not in BASE_COLUMNS},
        }
        self.file.append(full, all_measure_names() + list(TYPE_COLUMNS))
        self.rows.append(full)
        scalars = {
            k: float(v)
            for k, v in full.items()
            if k != "step" and v is not None and math.isfinite(float(v))
        }
        for sink in list(self.sinks):
            try:
                sink.write(int(full["step"]), scalars)
            except Exception as exc:  # noqa: BLE001 -- a sink must never stop training
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


# --- framework callbacks (classes built on first use: the frameworks are optional) ----------


def _trainer_metrics(log_history: Sequence[Mapping[str, Any]], step: int) -> dict[str, float]:
    """The latest value of every metric logged at or before ``step`` (end-of-run summary
    entries, which carry ``train_runtime``, are left out)."""
    out: dict[str, float] = {}
    for entry in log_history:
        if "train_runtime" in entry or entry.get("step", step) > step:
            continue
        out.update(scalar_metrics({k: v for k, v in entry.items() if k not in _TRAINER_SKIP}))
    return out


def _make_trainer_callback() -> type:
    try:
        from transformers import TrainerCallback
    except ImportError:
        raise SpecboundError(
            "SpecboundCallback needs transformers: pip install transformers"
        ) from None

    class SpecboundCallback(TrainerCallback):
        """Track measures in a ``transformers.Trainer`` (SPEC 11).

        The init weights are taken at ``on_train_begin`` (and step 0 is recorded there);
        measures are computed at ``on_step_end`` every ``every`` steps (or ``"auto"``) and the
        row is written after that step's logging/evaluation, with the latest values in
        ``state.log_history``. Other keywords go to :class:`Tracker`.
        """

        def __init__(
            self,
            every: int | str = 100,
            out: str | os.PathLike[str] | None = None,
            measures: Iterable[str] | None = None,
            **kwargs: Any,
        ) -> None:
            self.every, self.out, self.measures, self.kwargs = every, out, measures, kwargs
            self.tracker: Tracker | None = None
            self._pending: dict[str, Any] | None = None

        def on_train_begin(
            self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any
        ) -> None:
            if not state.is_world_process_zero or model is None:
                return
            out = self.out if self.out is not None else Path(args.output_dir) / "specbound"
            self.tracker = Tracker(
                model, every=self.every, out=out, measures=self.measures, **self.kwargs
            )
            if self.tracker.due(state.global_step):
                self._pending = self.tracker.compute(state.global_step)
                self._flush(state)

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self.tracker is not None and self.tracker.due(state.global_step):
                self._flush(state)
                self._pending = self.tracker.compute(state.global_step)

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self._flush(state)

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self._flush(state)
            if self.tracker is not None:
                self.tracker.close()

        def _flush(self, state: Any) -> None:
            if self._pending is None or self.tracker is None:
                return
            row, self._pending = self._pending, None
            self.tracker.emit(row, _trainer_metrics(state.log_history, row["step"]))

    return SpecboundCallback


def _lightning(package: str | None = None) -> Any:
    """``lightning.pytorch`` or ``pytorch_lightning`` (``package``; None: whichever imports)."""
    import importlib

    if package not in (None, "lightning", "pytorch_lightning"):
        raise SpecboundError(f"package must be lightning or pytorch_lightning, got {package!r}")
    names = {
        "lightning": ["lightning.pytorch"],
        "pytorch_lightning": ["pytorch_lightning"],
        None: ["lightning.pytorch", "pytorch_lightning"],
    }[package]
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise SpecboundError(
        "SpecboundLightningCallback needs lightning: pip install 'specbound[lightning]'"
    )


def lightning_callback(package: str | None = None) -> type:
    """The Lightning callback class for ``package`` ("lightning" or "pytorch_lightning"; a
    Trainer accepts only callbacks of its own package). ``SpecboundLightningCallback`` is the
    one for whichever imports first (lightning, then pytorch_lightning)."""
    key = f"SpecboundLightningCallback[{package}]"
    if key not in _BUILT:
        _BUILT[key] = _make_lightning_callback(package)
    return _BUILT[key]


def _make_lightning_callback(package: str | None = None) -> type:
    pl = _lightning(package)

    class SpecboundLightningCallback(pl.Callback):
        """Track measures in a Lightning ``Trainer`` (SPEC 11).

        The model is the LightningModule if it has a Hugging Face ``.config``, else its first
        submodule that has one. Init weights at ``on_train_start`` (step 0 recorded there);
        rows at ``on_train_batch_end`` when ``trainer.global_step`` is due, with the scalars
        of ``trainer.callback_metrics``. Other keywords go to :class:`Tracker`.
        """

        def __init__(
            self,
            every: int | str = 100,
            out: str | os.PathLike[str] | None = None,
            measures: Iterable[str] | None = None,
            **kwargs: Any,
        ) -> None:
            super().__init__()
            self.every, self.out, self.measures, self.kwargs = every, out, measures, kwargs
            self.tracker: Tracker | None = None

        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            if not trainer.is_global_zero:
                return
            out = self.out if self.out is not None else Path(trainer.default_root_dir) / "specbound"
            self.tracker = Tracker(
                pl_module, every=self.every, out=out, measures=self.measures, **self.kwargs
            )
            self.tracker.step(trainer.global_step)

        def on_train_batch_end(
            self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
        ) -> None:
            if self.tracker is not None:
                self.tracker.step(trainer.global_step, **dict(trainer.callback_metrics))

        def on_train_end(self, trainer: Any, pl_module: Any) -> None:
            if self.tracker is not None:
                self.tracker.close()

    return SpecboundLightningCallback


_LAZY = {
    "SpecboundCallback": _make_trainer_callback,
    "SpecboundLightningCallback": lambda: lightning_callback(None),
}
_BUILT: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        if name not in _BUILT:
            _BUILT[name] = _LAZY[name]()
        return _BUILT[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
