"""``correlate --data-measures``: SPEC 12's data-dependent measures of every zoo model, as
columns of models.csv next to the weight measures (issue 18).

Which models: a zoo directory's, or a manifest's when every row's ``model`` is a zoo model
directory (it holds ``data.json``, written by ``specbound zoo train``); otherwise the measures
are absent and :func:`eligible` says why in one line. Per model: the checkpoint is loaded with
``transformers`` (``AutoModelForImageClassification`` for a ``*ForImageClassification``
architecture such as the digits ViT, else ``AutoModelForSequenceClassification``), its training
examples are ``zoo.training_data(model_dir)`` (checksum-verified, exactly as training used them)
and the values are ``specbound.data_measures(model, [(inputs, labels)], max_examples=2048,
seed=0, perturb="all", logits_fn=task.logits)``: every data measure, on the model's device.

Cache: the record ``<cache dir>/data_measures/<key>`` (:mod:`specbound.io.codec`: checksummed
JSON + npz, no pickles), key = sha256 of (``DATA_VERSION``, the sha256 of every weight file and
config.json of the model directory, the sha256 of data.json, the measure names, the
``DataMeasures.settings()`` of the call (examples m = min(max_examples, n), n, draws M, seed,
perturb, bisection and ascent constants), the device type, the torch version and the weight
measures the margin forms read). A record that
fails to verify is ignored with one warning line and recomputed (then overwritten).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ... import extras
from ...config import usable_cpus
from ...engines.base import JobError, closing_map
from ...engines.processes import ProcessEngine, ProcessOptions
from ...errors import SpecboundError, one_line_reason
from ...io.cache import cache_dir
from ...io.codec import read_record_or_none, sha256_file, write_record
from ...io.files import canonical_json
from ...measures.data import DataMeasures, data_measure_names
from ...track.live import data_measures, weight_measures_for_margins
from ..zoo.data import DATA_FILE, task_of, training_data
from . import manifest as M

#: Bump when the data measures' computation changes, so old cache records are not reused.
#: "2": every model on one torch thread (float32 logits, hence margins, change in the last
#: bits with the thread count; "1" used torch's default).
DATA_VERSION = "2"
#: The ``kind`` of a data-measure cache record.
KIND = "data-measures"
MAX_EXAMPLES = 2048
SEED = 0
PERTURB = "all"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def require() -> None:
    """One-line SpecboundError unless torch and transformers import (before any analysis)."""
    missing = [m for m in ("torch", "transformers") if not extras.available(m)]
    if missing:
        raise SpecboundError(
            f"data measures need {' and '.join(missing)}; install them with "
            f"{extras.install_hint('zoo')}"
        )


def data_names() -> list[str]:
    """Every data measure (SPEC 12 order): the models.csv columns ``--data-measures`` adds."""
    return data_measure_names()


def eligible(zoo: M.Zoo) -> tuple[list[str], str | None]:
    """(the model directory of every manifest row, None) when each is a zoo model directory;
    else ([], one line saying why the data measures are absent)."""
    base = zoo.manifest.parent
    dirs = []
    for i, m in enumerate(zoo.table["model"].astype(str).str.strip()):
        d = Path(M.resolve_entry(m, base))
        if not (d / DATA_FILE).is_file():
            return [], (
                f"no data measures: model '{m}' (row {i + 2} of {zoo.manifest.name}) is not a "
                f"zoo model directory (no {DATA_FILE}); they need the training data that "
                "'specbound zoo train' records (SPEC 12)"
            )
        dirs.append(str(d))
    return dirs, None


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return sha256_file(fh)


def checkpoint_digest(model_dir: Path) -> str:
    """``name:sha256`` of config.json and every weight file of ``model_dir``, joined by ``|``."""
    files = sorted(
        p
        for p in model_dir.iterdir()
        if p.is_file() and (p.suffix in _WEIGHT_SUFFIXES or p.name == "config.json")
    )
    return "|".join(f"{p.name}:{_sha256(p)}" for p in files)


def _settings(n: int) -> dict[str, Any]:
    """What ``DataMeasures.settings()`` of the call on ``n`` training examples will say."""
    return DataMeasures(
        measures={}, examples=min(MAX_EXAMPLES, n), n=n, seed=SEED, perturb=PERTURB
    ).settings()


def cache_key(
    model_dir: Path,
    names: Sequence[str],
    n: int,
    device: str,
    weights: dict[str, float | None] | None = None,
) -> str:
    """The record key of the data measures of ``model_dir`` (module doc); ``weights``: the
    weight-measure values the margin forms read (part of the key)."""
    torch = extras.torch()

    text = canonical_json(
        [
            DATA_VERSION,
            checkpoint_digest(model_dir),
            _sha256(model_dir / DATA_FILE),
            list(names),
            _settings(n),
            device,
            str(torch.__version__),
            {k: None if v is None else repr(float(v)) for k, v in sorted((weights or {}).items())},
        ]
    )
    return hashlib.sha256(text).hexdigest()[:32]


def _stem(key: str) -> Path:
    return cache_dir() / "data_measures" / key


def load_cached(key: str, names: Sequence[str]) -> tuple[dict[str, float | None], dict[str, str]]:
    """(values, notes) of record ``key``; empty when absent, damaged (one warning) or stale."""
    got = read_record_or_none(_stem(key), kind=KIND, what="data-measure cache entry")
    if got is None:
        return {}, {}
    meta, arrays = got
    vals, defined = arrays.get("values"), arrays.get("defined")
    ok = (
        meta.get("key") == key
        and meta.get("version") == DATA_VERSION
        and meta.get("names") == list(names)
        and isinstance(meta.get("notes"), dict)
        and vals is not None
        and defined is not None
        and vals.dtype == np.float64
        and vals.shape == defined.shape == (len(names),)
    )
    if not ok or vals is None or defined is None:
        return {}, {}
    if not bool(np.isfinite(vals[defined.astype(bool)]).all()):
        import logging

        logging.getLogger("specbound").warning(
            "warning: data-measure cache entry %s holds a non-finite value; recomputing it",
            _stem(key),
        )
        return {}, {}
    values = {
        m: (float(v) if bool(d) else None) for m, v, d in zip(names, vals, defined, strict=True)
    }
    return values, {str(k): str(v) for k, v in meta["notes"].items()}


def store(key: str, values: dict[str, float | None], notes: dict[str, str]) -> bool:
    """Write record ``key``; False (nothing written) when the cache folder cannot be written."""
    names = list(values)
    arrays = {
        "values": np.array([math.nan if v is None else float(v) for v in values.values()]),
        "defined": np.array([v is not None for v in values.values()], dtype=bool),
    }
    meta = {"key": key, "version": DATA_VERSION, "names": names, "notes": dict(notes)}
    try:
        write_record(_stem(key), meta, arrays, kind=KIND)
    except (OSError, ValueError):
        return False
    return True


def load_model(model_dir: str | Path, device: str = "cpu") -> Any:
    """The zoo model of ``model_dir`` as its transformers class (module doc), eval mode."""
    transformers = extras.transformers()
    hf_logging = extras.load("transformers.utils.logging")

    cfg = transformers.AutoConfig.from_pretrained(model_dir)
    archs = list(getattr(cfg, "architectures", None) or [])
    image = any(a.endswith("ForImageClassification") for a in archs) or cfg.model_type == "vit"
    cls = (
        transformers.AutoModelForImageClassification
        if image
        else transformers.AutoModelForSequenceClassification
    )
    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # one progress line per model is ours to print
    try:
        return cls.from_pretrained(model_dir).to(device).eval()
    finally:
        if bar:
            hf_logging.enable_progress_bar()


def torch_device(device: str | None) -> str:
    """Where the data measures run: a cuda device when ``device`` names one, else the CPU."""
    return str(device) if device is not None and str(device).startswith("cuda") else "cpu"


def _finite_or_none(v: Any) -> float | None:
    return None if v is None or not math.isfinite(float(v)) else float(v)


def _prepared(
    model_dir: str | Path, device: str | None, weights: Mapping[str, Any] | None
) -> tuple[Path, Any, Any, str, str, dict[str, float | None] | None]:
    """(directory, inputs, labels, device, cache key, the weights the margin forms read)."""
    d = Path(model_dir)
    names = data_names()
    w = None
    if weights is not None:
        w = {m: _finite_or_none(weights.get(m)) for m in weight_measures_for_margins(names)}
    x, y = training_data(d)  # checksum-verified; raises a one-line SpecboundError
    dev = torch_device(device)
    return d, x, y, dev, cache_key(d, names, len(y), dev.split(":")[0], w), w


@contextmanager
def one_thread() -> Iterator[None]:
    """torch's intra-op threads set to 1 (restored on exit): the data measures of a zoo model
    are computed single-threaded wherever they run, so their values do not depend on how many
    models run at once (``workers``)."""
    torch = extras.torch()

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def model_data_measures(
    model_dir: str | Path,
    *,
    cache: bool = True,
    device: str | None = None,
    weights: Mapping[str, Any] | None = None,
) -> tuple[dict[str, float | None], dict[str, str], bool]:
    """(values, notes, from the cache) of every data measure of one zoo model (module doc),
    computed with one torch thread (:func:`one_thread`).

    ``weights``: the model's weight measures (``Analysis.measures`` or a models.csv row; only
    ``log_spectral_product`` and the bounds are read, NaN counts as undefined) for the margin
    forms; None: ``analyze`` of the loaded model."""
    names = data_names()
    d, x, y, dev, key, w = _prepared(model_dir, device, weights)
    if cache:
        values, notes = load_cached(key, names)
        if values:
            return values, notes, True
    task = task_of(d)
    with one_thread():
        model = load_model(d, dev)
        dm = data_measures(
            model,
            [(x, y)],
            measures=names,
            max_examples=MAX_EXAMPLES,
            seed=SEED,
            perturb=PERTURB,
            logits_fn=task.logits,
            weights=w,
        )
    values, notes = dict(dm), dict(dm.notes)
    if dm.settings() == _settings(len(y)) and cache:
        store(key, values, notes)
    return values, notes, False


def cached_data_measures(
    model_dir: str | Path,
    *,
    device: str | None = None,
    weights: Mapping[str, Any] | None = None,
) -> tuple[dict[str, float | None], dict[str, str]] | None:
    """(values, notes) of one zoo model from the cache, or None when they must be computed."""
    _, _, _, _, key, _ = _prepared(model_dir, device, weights)
    values, notes = load_cached(key, data_names())
    return (values, notes) if values else None


def default_workers(device: str | None = None) -> int:
    """Worker processes for the data measures: one per usable CPU on the CPU, 1 on a GPU."""
    if torch_device(device) != "cpu":
        return 1
    return usable_cpus()


def _worker_job(
    job: tuple[str, bool, str | None, Mapping[str, Any] | None],
) -> tuple[tuple[dict[str, float | None], dict[str, str], bool], float]:
    """``model_data_measures`` of one job in a worker process, with its own time taken."""
    d, cache, device, weights = job
    t0 = time.perf_counter()
    got = model_data_measures(d, cache=cache, device=device, weights=weights)
    return got, time.perf_counter() - t0


@dataclass
class DataColumns:
    """The data measures of the analyzed models: row index -> values, and the notes; the
    models whose data measures failed: row index -> one-line reason."""

    values: dict[int, dict[str, float | None]] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


Outcome = tuple[dict[str, float | None], dict[str, str], bool] | BaseException


def _in_turn(
    jobs: Sequence[tuple[int, str, Mapping[str, Any] | None]], cache: bool, device: str | None
) -> Iterator[tuple[int, str, Outcome, float]]:
    for i, d, weights in jobs:
        t0 = time.perf_counter()
        try:
            out: Outcome = model_data_measures(d, cache=cache, device=device, weights=weights)
        except (KeyboardInterrupt, MemoryError):
            raise
        except Exception as exc:
            out = exc
        yield i, d, out, time.perf_counter() - t0


def _in_processes(
    jobs: Sequence[tuple[int, str, Mapping[str, Any] | None]],
    cache: bool,
    device: str | None,
    workers: int,
) -> Iterator[tuple[int, str, Outcome, float]]:
    """Each job in one of ``workers`` spawned processes (torch and the model reimported there),
    as they finish, through the process engine: a worker that dies costs only its model, which
    is retried once in a fresh worker; Ctrl-C stops every worker at once."""
    work = [(d, cache, device, None if w is None else dict(w)) for _, d, w in jobs]
    row = {id(job): i for job, (i, _, _) in zip(work, jobs, strict=True)}
    engine = ProcessEngine(ProcessOptions(workers=workers))
    with closing_map(engine.map(_worker_job, work)) as outcomes:
        for job, out in outcomes:
            if isinstance(out, JobError):
                yield row[id(job)], job[0], SpecboundError(out.reason), 0.0
            else:
                got, took = out
                yield row[id(job)], job[0], got, took


def compute_columns(
    jobs: Sequence[tuple[int, str, Mapping[str, Any] | None]],
    *,
    cache: bool = True,
    device: str | None = None,
    on_line: Callable[[str], None] | None = None,
    workers: int = 1,
) -> DataColumns:
    """The data measures of each ``(row index, model directory, its weight measures)``; a model
    whose data measures fail is in ``failed`` with its reason (counted in a note), never the end
    of the study.

    Cached models are read here; the others are computed in turn in this process
    (``workers`` 1) or in ``workers`` spawned processes (a script calling this with
    ``workers`` > 1 needs the ``if __name__ == "__main__":`` guard of ``multiprocessing``),
    each with one torch thread, so the values are the same for any ``workers``. ``on_line``: one
    progress line per model as it finishes (``[data i/n] DIR: 1.23 s``, ``: cached`` or
    ``: failed: ...``)."""
    out = DataColumns(names=data_names())
    failed: list[str] = []
    noted: dict[str, list[str]] = {}
    done = 0

    def record(i: int, d: str, got: Outcome, status: str) -> None:
        nonlocal done
        done += 1
        if isinstance(got, BaseException):
            out.failed[i] = one_line_reason(got)
            failed.append(f"{Path(d).name}: {one_line_reason(got)}")
            status = f"failed: {one_line_reason(got)}"
        else:
            values, notes, _ = got
            out.values[i] = values
            for m, text in notes.items():
                noted.setdefault(m, []).append(text)
        if on_line is not None:
            on_line(f"[data {done}/{len(jobs)}] {Path(d).name}: {status}")

    todo = []
    for i, d, weights in jobs:
        hit = None
        if cache:
            try:
                hit = cached_data_measures(d, device=device, weights=weights)
            except SpecboundError as exc:
                record(i, d, exc, "")
                continue
        if hit is not None:
            record(i, d, (hit[0], hit[1], True), "cached")
        else:
            todo.append((i, d, weights))
    n_workers = min(max(1, int(workers)), len(todo))
    runs = (
        _in_processes(todo, cache, device, n_workers)
        if n_workers > 1
        else _in_turn(todo, cache, device)
    )
    for i, d, got, took in runs:
        status = "cached" if not isinstance(got, BaseException) and got[2] else f"{took:.2f} s"
        record(i, d, got, status)
    out.notes.append(
        f"data measures (SPEC 12) of {len(out.values)} zoo models on their training data: at "
        f"most {MAX_EXAMPLES} examples, seed {SEED}, perturb={PERTURB!r} (every parameter), "
        "one torch thread per model"
    )
    if failed:
        out.notes.append(
            f"data measures failed for {len(failed)} models (listed in skipped.csv); first: "
            f"{failed[0]}"
        )
    for m in out.names:
        if m in noted:
            out.notes.append(f"{m}: {len(noted[m])} of {len(out.values)} models: {noted[m][0]}")
    return out
