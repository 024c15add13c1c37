"""What several commands share: demo aliases, the progress bar, strict JSON on stdout, engines."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..demo import resolve_alias
from ..engines import get_engine, options_for
from ..naming import printable

#: MODEL as a checkpoint: a demo alias (``demo.DEMO_ALIASES``) -> the bundled MiniLM's folder.
resolve_model = resolve_alias


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


#: Seconds of work before the first progress line: a command that ends (or fails) sooner
#: prints nothing on stderr but its own lines (one ``error:`` line for bad input).
PROGRESS_AFTER_S = 5.0
#: Seconds between two lines of one counted stage.
PROGRESS_EVERY_S = 10.0


class StageLines:
    """Progress as one line per stage on stderr (``reading X``, ``spectra: 3/6 blocks (12 s)``,
    ``writing OUT``), with or without a terminal: a pipe or a log file sees that long work goes
    on. Nothing when ``quiet``, and nothing before ``after`` seconds (default
    :data:`PROGRESS_AFTER_S`): a stage announced sooner is held, and printed before the first
    line that is due. A counted stage (:meth:`counter`) then prints at most one line every
    ``every`` seconds, and always its last step."""

    def __init__(
        self,
        quiet: bool,
        after: float | None = None,
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quiet = quiet
        self.after = PROGRESS_AFTER_S if after is None else after
        self.every = PROGRESS_EVERY_S if every is None else every
        self.clock = clock
        self.start = clock()
        self.held: list[str] = []
        self.shown = False

    def _due(self, now: float) -> bool:
        return not self.quiet and now - self.start >= self.after

    def _write(self, lines: list[str]) -> None:
        sys.stderr.write("".join(printable(t) + "\n" for t in lines))
        sys.stderr.flush()
        self.shown = True

    def say(self, text: str) -> None:
        """A stage begins: its line now when due, else held for the first due line."""
        if self._due(self.clock()):
            self._write([*self.held, text])
            self.held = []
        elif not self.quiet:
            self.held.append(text)

    def counter(self, what: str, unit: str) -> Callable[[int, int], None]:
        """``update(done, total)`` printing ``what: done/total unit (elapsed s)``, throttled."""
        last: list[float | None] = [None]

        def update(done: int, total: int) -> None:
            now = self.clock()
            if not self._due(now):
                return
            if done < total and last[0] is not None and now - last[0] < self.every:
                return
            last[0] = now
            self._write([*self.held, f"{what}: {done}/{total} {unit} ({now - self.start:.0f} s)"])
            self.held = []

        return update


def print_json(value: Any) -> None:
    """``value`` as strict JSON (RFC 8259: no NaN/Infinity) on stdout, through
    ``io.files.json_safe`` (NaN and values beyond float64 -> null; DataFrames -> lists of
    records; an object JSON cannot hold -> its ``str``)."""
    from ..io.files import dumps_json

    sys.stdout.write(dumps_json(value, indent=2, default=str) + "\n")
    sys.stdout.flush()


# ---------------------------------------------------------------------------------- engines
def make_engine(engine: str, ray_address: str | None) -> Any:
    """The engine named by ``--engine`` with its options built from the flags (``--ray-address``
    is the Ray engine's ``address``: given with an engine that has no address, the library's
    ``EngineOptionError`` names the flag and the command exits 2). Constructing the engine
    checks its options before any work."""
    return get_engine(engine, options_for(engine, address=ray_address))


def sweep_state(eng: Any, out: Path, quiet: bool) -> dict[str, Any]:
    """``state_dir``/``on_resume`` of a study on a distributed engine: per-model resume records
    beside ``--out`` (``.OUT.specbound-sweep``); none for an in-process engine."""
    if not eng.distributed:
        return {}
    from ..io.records import state_dir_for

    def resumed(name: str) -> None:
        if not quiet:
            sys.stderr.write(f"resumed {printable(name)} (finished earlier)\n")

    return {"state_dir": state_dir_for(out), "on_resume": resumed}


def clear_sweep_state(eng: Any, out: Path, done: bool) -> None:
    """All models done: the resume records have served; delete those specbound wrote (a user's
    file in the state folder stays, and so does the folder then)."""
    if eng.distributed and done:
        from ..io.records import clear_records, state_dir_for

        clear_records(state_dir_for(out))
