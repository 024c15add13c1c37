"""The Ray engine: sweeps over many checkpoints, and one very large checkpoint split by block.

Needs the ``ray`` extra (``pip install 'specbound[ray]'``); nothing here is imported by the
local path.

Connecting: ``address`` (``--ray-address``), else ``$RAY_ADDRESS``, joins an existing cluster;
without either a local Ray runtime is started (``num_cpus`` of this machine, or the number
given). Every node needs specbound installed and the checkpoints readable under the same path
(a shared file system), or hub ids resolvable there (each node's own Hugging Face cache).

Sweeps (``analyze_models``): one task per model. Workers read the weights themselves (from the
path or hub id: no weight array travels through the object store; only the results come back).
Each task declares ``num_cpus = threads`` (the BLAS threads it may use) and
``memory = task_memory(model)`` bytes, so Ray never schedules more concurrent models on a node
than its RAM holds. A task whose worker dies (out of memory, killed, node lost) is retried
``max_retries`` times; a model that still fails, or fails on bad input, is reported by name in
``skipped`` and the sweep goes on.

Resume: with ``state_dir``, each finished model is written there by the driver as it completes,
as ``<key>.json`` (its ``summary()``, measures included) and ``<key>.pkl`` (the ``Analysis``, to
rebuild the study). ``key`` (``sweep_key``) is ``specbound.cache.cache_key`` of the checkpoint
(config, weight-file stamps and sampled bytes, spec, adapter) plus the name and the analysis
options, so a re-run skips exactly the models already done and recomputes any whose files
changed. Hub ids not in the local cache are keyed by their name (pin ``@revision``).

One model (``analyze``): one task per transformer block (shared ALBERT blocks once); each task
opens the checkpoint itself, reads that block's tensors by name (sharded safetensors read only
the shards holding them) and returns ``analysis.compute_block``; the driver concatenates the
blocks in layer order and computes bounds and measures as the local engine does, so the result
is identical.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SpecboundError

if TYPE_CHECKING:
    from ..analysis import Analysis

#: Retries of a task whose worker process died (Ray ``max_retries``).
DEFAULT_MAX_RETRIES = 3
#: Memory a task needs besides the block in flight (interpreter, numpy, specbound).
BASE_MEMORY = 512 * 2**20
#: A block's tensors as read (bf16/fp16 -> float64 is 4x) plus the SVD workspaces.
BLOCK_FACTOR = 12
#: Declared for a hub id that is not in the local cache (its size is unknown here).
UNKNOWN_MEMORY = 2 * 2**30
#: Suffix of the sweep state directory the CLI keeps beside ``--out``.
STATE_SUFFIX = ".specbound-sweep"
_KEY_VERSION = "1"
_WEIGHT_SUFFIXES = (".safetensors", ".bin")


def require_ray() -> Any:
    """The ``ray`` module, or a one-line SpecboundError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise SpecboundError(
            "--engine ray needs Ray; install it with pip install 'specbound[ray]' or use "
            "--engine local"
        ) from None
    return ray


def connect(address: str | None = None, num_cpus: int | None = None) -> Any:
    """Join the cluster at ``address`` (else ``$RAY_ADDRESS``), or start a local Ray runtime.

    Reuses the connection when Ray is already initialized in this process.
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        _probe(address)
    opts: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    try:
        if address:
            ray.init(address=address, **opts)
        else:
            ray.init(num_cpus=num_cpus, include_dashboard=False, **opts)
    except Exception as exc:  # ConnectionError, RuntimeError, ValueError ... from ray.init
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        where = f"the Ray cluster at {address}" if address else "a local Ray runtime"
        raise SpecboundError(
            f"cannot connect to {where} ({first}); check --ray-address / RAY_ADDRESS, or omit "
            "both to start a local runtime"
        ) from None
    return ray


def _probe(address: str, timeout: float = 5.0) -> None:
    """Fail fast (one line) when a ``host:port`` address does not answer: ``ray.init`` would
    retry for minutes. Other forms (``auto``, ``ray://...``) are left to Ray."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "/" in host or not host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise SpecboundError(
            f"no Ray cluster answers at {address} ({exc.strerror or type(exc).__name__}); check "
            "--ray-address / RAY_ADDRESS (the head's GCS address, e.g. 10.0.0.5:6379), or omit "
            "both to start a local runtime"
        ) from None


# --- sizes and keys --------------------------------------------------------------------------


def local_dir(model: Any) -> Path | None:
    """The checkpoint directory of ``model`` on this machine: the path itself, or the cached
    snapshot of a hub id (no network); None when it is not here."""
    if not isinstance(model, (str, os.PathLike)):
        return None
    path = Path(os.fspath(model)).expanduser()
    if path.is_dir():
        return path
    from ..checkpoint import looks_like_hub_id

    text = os.fspath(model)
    if path.exists() or not looks_like_hub_id(text):
        return None
    try:
        import huggingface_hub as hf

        from ..hub import split_revision

        repo, rev = split_revision(text)
        snap = Path(hf.snapshot_download(repo, revision=rev, local_files_only=True))
    except Exception:
        return None
    return snap if (snap / "config.json").is_file() else None


def _num_layers(directory: Path) -> int:
    try:
        cfg = json.loads((directory / "config.json").read_text())
    except (OSError, ValueError):
        return 1
    if not isinstance(cfg, dict):
        return 1
    for k in ("num_hidden_layers", "n_layer", "num_layers", "n_layers"):
        v = cfg.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return 1


def weight_bytes(directory: Path) -> int:
    """Bytes of the weight files (``*.safetensors``, ``*.bin``) in ``directory``."""
    total = 0
    for p in directory.iterdir():
        if p.suffix in _WEIGHT_SUFFIXES and p.is_file():
            total += p.stat().st_size
    return total


def task_memory(model: Any) -> int:
    """Bytes a task analyzing ``model`` declares: BASE_MEMORY + BLOCK_FACTOR x (weight bytes /
    number of blocks), as only one block is in memory at a time; UNKNOWN_MEMORY when the
    checkpoint is not on this machine."""
    d = local_dir(model)
    if d is None:
        return UNKNOWN_MEMORY
    return BASE_MEMORY + BLOCK_FACTOR * weight_bytes(d) // _num_layers(d)


def _options_text(analyze_kwargs: Mapping[str, Any]) -> str:
    kw = {k: v for k, v in analyze_kwargs.items() if k not in ("progress", "spectra_fn")}
    return json.dumps(kw, sort_keys=True, default=str)


def sweep_key(model: Any, name: str | None, analyze_kwargs: Mapping[str, Any]) -> str:
    """The key of one model's record: ``cache.cache_key`` of the checkpoint when it is on this
    machine (else its name), the display name and the analysis options (32 hex digits)."""
    ident = None
    d = local_dir(model)
    if d is not None:
        try:
            from ..adapters.registry import adapter_for
            from ..cache import cache_key
            from ..checkpoint import load_checkpoint

            ckpt = load_checkpoint(str(d), analyze_kwargs.get("config"), name=name)
            extra = (
                {"prefix": analyze_kwargs["prefix"]}
                if analyze_kwargs.get("prefix") is not None
                else {}
            )
            adapter = adapter_for(ckpt, analyze_kwargs.get("mapping"), **extra)
            ident = cache_key(ckpt, adapter.spec(), adapter)
        except Exception:  # the task will report the problem; key by name meanwhile
            ident = None
    if ident is None:
        ident = f"name:{os.fspath(model)}"
    from .._version import __version__

    text = f"{_KEY_VERSION}|{__version__}|{ident}|{name}|{_options_text(analyze_kwargs)}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def state_dir_for(out: str | os.PathLike[str]) -> Path:
    """The sweep state directory the CLI uses for ``--out OUT``: ``.OUT.specbound-sweep`` beside
    it (outside OUT, which is written as a whole at the end)."""
    out = Path(os.path.abspath(out))
    return out.parent / f".{out.name}{STATE_SUFFIX}"


# --- per-model records -------------------------------------------------------------------------


def load_record(state_dir: Path, key: str) -> Analysis | None:
    """The finished ``Analysis`` stored under ``key``; None when absent or unreadable."""
    js, pk = state_dir / f"{key}.json", state_dir / f"{key}.pkl"
    if not (js.is_file() and pk.is_file()):
        return None
    try:
        with open(pk, "rb") as fh:
            return pickle.load(fh)  # our own file, written by store_record
    except Exception:
        return None


def store_record(state_dir: Path, key: str, source: Any, analysis: Analysis) -> None:
    """Write ``<key>.pkl`` then ``<key>.json`` (the JSON, written last, marks it done)."""
    from ..io import atomic_file

    state_dir.mkdir(parents=True, exist_ok=True)
    with atomic_file(state_dir / f"{key}.pkl") as fh:
        pickle.dump(analysis, fh, protocol=pickle.HIGHEST_PROTOCOL)
    record = {
        "model": analysis.model,
        "source": os.fspath(source),
        "key": key,
        "summary": analysis.summary(),
    }
    with atomic_file(state_dir / f"{key}.json", "w") as fh:
        fh.write(json.dumps(record, indent=1, default=str) + "\n")


# --- the tasks -------------------------------------------------------------------------------


def run_model(model: Any, name: str | None, analyze_kwargs: Mapping[str, Any]) -> Analysis:
    """What one sweep task runs in its worker: ``analyze(model, ...)``."""
    from ..analysis import analyze as run

    return run(model, name=name, **analyze_kwargs)


@contextlib.contextmanager
def _cpu_budget(threads: int) -> Iterator[None]:
    """Hold a task to the CPUs it declared: BLAS at ``threads``; with one CPU the block's four
    jobs also run one after the other (``SPECBOUND_PARALLEL=blas``) instead of on a pool."""
    from threadpoolctl import threadpool_limits

    old = os.environ.get("SPECBOUND_PARALLEL")
    if threads == 1:
        os.environ["SPECBOUND_PARALLEL"] = "blas"
    try:
        with threadpool_limits(limits=threads):
            yield
    finally:
        if old is None:
            os.environ.pop("SPECBOUND_PARALLEL", None)
        else:
            os.environ["SPECBOUND_PARALLEL"] = old


def _model_task(
    fn: Callable[..., Any],
    model: Any,
    name: str | None,
    analyze_kwargs: Mapping[str, Any],
    threads: int,
) -> Any:
    with _cpu_budget(threads):
        return fn(model, name, analyze_kwargs)


def _block_task(
    source: str,
    config: Mapping[str, Any],
    mapping: Any,
    prefix: str | None,
    layer: int,
    device: str | None,
    threads: int,
    weights: bool = True,
) -> Any:
    from ..adapters.registry import adapter_for
    from ..analysis import compute_block
    from ..checkpoint import load_checkpoint

    with _cpu_budget(threads):
        ckpt = load_checkpoint(source, dict(config))
        adapter = adapter_for(ckpt, mapping, **({"prefix": prefix} if prefix is not None else {}))
        return compute_block(adapter, layer, device, weights)


def _reason(exc: BaseException, ray: Any, retries: int) -> str:
    """One line for a failed task: the worker's own error, or how the worker died."""
    if isinstance(exc, ray.exceptions.RayTaskError):
        cause = getattr(exc, "cause", None)
        if cause is not None and not isinstance(cause, ray.exceptions.RayError):
            text = (
                str(cause)
                if isinstance(cause, SpecboundError)
                else f"{type(cause).__name__}: {cause}"
            )
            return " ".join(text.split()) or type(cause).__name__
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return (
        f"the worker failed {retries + 1} times ({type(exc).__name__}: {first}); "
        "out of memory or killed? see the Ray logs"
    )


def _capper(ray: Any) -> Callable[[int], int]:
    """Clamp a memory request to the cluster's total (a larger one could never be scheduled)."""
    total = int(ray.cluster_resources().get("memory", 0))
    return lambda memory: max(1, min(memory, total) if total > 0 else memory)


def analyze_models(
    models: Sequence[Any],
    *,
    names: Sequence[str | None] | None = None,
    analyze_kwargs: Mapping[str, Any] | None = None,
    on_model: Callable[[int, int, str], None] | None = None,
    on_skip: Callable[[str, str], None] | None = None,
    address: str | None = None,
    num_cpus: int | None = None,
    threads: int = 1,
    max_retries: int = DEFAULT_MAX_RETRIES,
    state_dir: str | os.PathLike[str] | None = None,
    on_resume: Callable[[str], None] | None = None,
    worker_fn: Callable[..., Any] | None = None,
    per_model_kwargs: Sequence[Mapping[str, Any]] | None = None,
) -> tuple[list[Analysis], list[tuple[str, str]]]:
    """(analyses in input order, (name, reason) of each model that failed) over a Ray cluster.

    ``on_model(done, n, name)`` as each model finishes (or is found in ``state_dir``:
    ``on_resume(name)``); ``on_skip(name, reason)`` for each failure. ``threads``: CPUs (and
    BLAS threads) per task. ``worker_fn(model, name, analyze_kwargs) -> Analysis`` replaces
    ``run_model`` in the workers (tests, custom pipelines); it must be importable there or
    pickled by value. ``per_model_kwargs[i]`` adds to ``analyze_kwargs`` for model i (e.g. its
    ``init``).
    """
    kw = dict(analyze_kwargs or {})
    for bad in ("progress", "spectra_fn"):
        kw.pop(bad, None)
    for m in models:
        if not isinstance(m, (str, os.PathLike)):
            raise SpecboundError(
                f"the ray engine reads each checkpoint in its worker: pass directories or hub "
                f"ids, not a {type(m).__name__}"
            )
    if threads < 1 or max_retries < 0:
        raise SpecboundError("threads must be >= 1 and max_retries >= 0")
    ray = connect(address, num_cpus)
    task = ray.remote(_model_task)
    cap = _capper(ray)
    fn = worker_fn or run_model
    sdir = Path(state_dir) if state_dir is not None else None
    n = len(models)
    labels = [str((names[i] if names is not None else None) or models[i]) for i in range(n)]
    results: list[Analysis | None] = [None] * n
    failures: dict[int, str] = {}
    keys: list[str | None] = [None] * n
    pending: dict[Any, int] = {}
    done = 0
    for i, m in enumerate(models):
        name = names[i] if names is not None else None
        kw_i = {**kw, **(per_model_kwargs[i] if per_model_kwargs is not None else {})}
        if sdir is not None:
            keys[i] = sweep_key(m, name, kw_i)
            rec = load_record(sdir, keys[i])
            if rec is not None:
                results[i] = rec
                done += 1
                if on_resume is not None:
                    on_resume(labels[i])
                if on_model is not None:
                    on_model(done, n, labels[i])
                continue
        ref = task.options(
            num_cpus=threads,
            memory=cap(task_memory(m)),
            max_retries=max_retries,
            retry_exceptions=False,
            name=f"specbound:{labels[i]}",
        ).remote(fn, os.fspath(m), name, kw_i, threads)
        pending[ref] = i
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                i = pending.pop(ref)
                try:
                    a = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    failures[i] = _reason(exc, ray, max_retries)
                    if on_skip is not None:
                        on_skip(labels[i], failures[i])
                else:
                    results[i] = a
                    if sdir is not None:
                        store_record(sdir, keys[i] or "", models[i], a)
                done += 1
                if on_model is not None:
                    on_model(done, n, labels[i])
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    analyses = [a for a in results if a is not None]
    skipped = [(labels[i], failures[i]) for i in sorted(failures)]
    return analyses, skipped


def analyze(
    model: Any,
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    threads: int = 1,
    max_retries: int = DEFAULT_MAX_RETRIES,
    **analyze_kwargs: Any,
) -> Analysis:
    """``analysis.analyze`` with the spectra computed by one Ray task per block (module doc)."""
    from ..analysis import analyze as run

    mapping = analyze_kwargs.get("mapping")
    prefix = analyze_kwargs.get("prefix")
    if threads < 1 or max_retries < 0:
        raise SpecboundError("threads must be >= 1 and max_retries >= 0")

    def spectra_fn(
        ckpt: Any,
        adapter: Any,
        device: str | None,
        progress: Callable[[int, int], None] | None,
        weights: bool,
    ) -> Any:
        from ..spectra import Spectra
        from ..weights import WeightSpectra

        if ckpt.path is None:
            raise SpecboundError(
                f"--engine ray reads {ckpt.name} in every task: pass a checkpoint directory or "
                "hub id, not an in-memory model"
            )
        ray = connect(address, num_cpus)
        task = ray.remote(_block_task)
        L = adapter.spec().num_layers
        memory = _capper(ray)(
            BASE_MEMORY + BLOCK_FACTOR * weight_bytes(Path(ckpt.path)) // max(L, 1)
        )
        source: dict[int, int] = {}  # layer -> the layer whose block it shares (itself if none)
        first: dict[Any, int] = {}
        for l in range(L):
            k = adapter.share_key(l)
            source[l] = first.setdefault(k, l) if k is not None else l
        pending = {
            task.options(
                num_cpus=threads,
                memory=memory,
                max_retries=max_retries,
                retry_exceptions=False,
                name=f"specbound:{ckpt.name}:block{l}",
            ).remote(str(ckpt.path), ckpt.config, mapping, prefix, l, device, threads, weights): l
            for l in sorted(set(source.values()))
        }
        blocks: dict[int, Any] = {}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    l = pending.pop(ref)
                    try:
                        blocks[l] = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        raise SpecboundError(
                            f"block {l} of {ckpt.name}: {_reason(exc, ray, max_retries)}"
                        ) from None
                    if progress is not None:
                        progress(len(blocks), len(set(source.values())))
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        parts, wparts = [], []
        for l in range(L):
            part, wpart = blocks[source[l]]
            if source[l] != l:
                part = part.with_layers(l)
                wpart = wpart.with_layers(l) if wpart is not None else None
            parts.append(part)
            if wpart is not None:
                wparts.append(wpart)
        return Spectra.concat(parts), (WeightSpectra.concat(wparts) if weights else None)

    return run(model, spectra_fn=spectra_fn, **analyze_kwargs)


def correlate(
    zoo: Any,
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    threads: int = 1,
    max_retries: int = DEFAULT_MAX_RETRIES,
    state_dir: str | os.PathLike[str] | None = None,
    on_resume: Callable[[str], None] | None = None,
    **correlate_kwargs: Any,
) -> Any:
    """``studies.correlate.correlate`` with every model analyzed by one Ray task.

    A first pass of ``correlate`` (no analysis) lists the models it would analyze (after its own
    convergence and metric filters); they run as a Ray sweep (``analyze_models``); the real pass
    then reads their measures from the sweep, so tables and skips are the local engine's.
    """
    from ..studies.correlate import correlate as run

    calls: list[tuple[str, str | None, bool, str | None, str]] = []

    class _Listed(Exception):
        pass

    def collect(path: str, init: str | None, cache: bool, device: str | None, name: str) -> Any:
        calls.append((path, init, cache, device, name))
        raise _Listed

    first = {k: v for k, v in correlate_kwargs.items() if k not in ("on_model", "analyzer")}
    first["bootstrap"] = 0
    try:
        run(zoo, analyzer=collect, **first)
    except SpecboundError:
        pass  # every model was "skipped" by design; real input errors recur below
    results: dict[tuple[str, str | None], Any] = {}
    failed: dict[tuple[str, str | None], str] = {}
    if calls:
        models = [c[0] for c in calls]
        analyses, skipped = analyze_models(
            models,
            names=[c[4] for c in calls],
            address=address,
            num_cpus=num_cpus,
            threads=threads,
            max_retries=max_retries,
            state_dir=state_dir,
            on_resume=on_resume,
            analyze_kwargs={"cache": calls[0][2], "device": calls[0][3]},
            per_model_kwargs=[{"init": c[1]} for c in calls],
        )
        reasons = dict(skipped)
        it = iter(analyses)
        for path, init, _, _, name in calls:
            if name in reasons:
                failed[(path, init)] = reasons[name]
            else:
                results[(path, init)] = next(it)

    def lookup(
        path: str, init: str | None, cache: bool, device: str | None, name: str
    ) -> dict[str, float | None]:
        key = (path, init)
        if key in failed:
            raise SpecboundError(failed[key])
        return dict(results[key].measures)

    return run(zoo, analyzer=lookup, **correlate_kwargs)
