"""The ``specbound`` Typer app, its errors and exit codes (every command module registers here).

Exit codes and messages (one line on stderr, never a traceback unless ``--debug``):

- bad input (``SpecboundError`` and subclasses, usage errors such as ``--grid-m abc``):
  ``error: ...``, exit 2; a library message names Python parameters (``errors.Param``), and
  the CLI writes their flags instead (``--grid-m must be ...``) through :data:`FLAGS` and the
  command's own options (:func:`cli_message`);
- a bug (any other exception): ``error: internal error (...)``, exit 1; ``specbound --debug
  COMMAND`` (or ``SPECBOUND_DEBUG=1``) prints the traceback;
- out of memory, or jobs that an engine lost (a worker killed twice: ``JobsLostError``): one
  line, exit 1;
- Ctrl-C: exit 130, SIGTERM: exit 143, after cleanup (no temp dirs left behind), at any
  moment: a Ray runtime is started and stopped with both deferred (``engines.ray.runtime``).

New commands: a module in this package with ``@app.command(cls=Command)`` and
``@handle_errors``, options from :mod:`.options`; write output dirs through
``specbound.io.output_dir``; print user strings with rich only through ``rich.markup.escape``.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import sys
import warnings
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from .. import config
from .._version import __version__
from ..engines.base import JobsLostError
from ..errors import SpecboundError, os_error_line
from ..naming import printable  # a path's ANSI escapes are shown, not obeyed

try:  # typer >= 0.20 vendors click as typer._click; older typer uses click itself
    from typer._click import exceptions as _cx
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover
    from click import exceptions as _cx  # type: ignore[no-redef]
    from click.globals import get_current_context  # type: ignore[no-redef]

F = TypeVar("F", bound=Callable[..., Any])

#: Set by the global ``--debug`` flag (or SPECBOUND_DEBUG=1): print tracebacks of bugs.
DEBUG = False

#: ``-h`` and ``--help`` on the app and every command (click passes them down to subcommands).
CONTEXT = {"help_option_names": ["-h", "--help"]}


def _flag_style(params: list[Any]) -> list[Any]:
    """Boolean flags take no value: show them as ``--quiet``, not ``--quiet <bool>``."""
    for p in params:
        if getattr(p, "is_flag", False) and p.metavar is None:
            p.metavar = ""
    return params


class Group(TyperGroup):
    """The app and its sub-apps (cache, zoo): flags shown without a type."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _flag_style(super().get_params(ctx))


class Command(TyperCommand):
    """Every command: flags shown without a type."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _flag_style(super().get_params(ctx))


def sub_app(help: str) -> typer.Typer:
    """A command group (``specbound cache ...``) with the app's conventions."""
    return typer.Typer(cls=Group, help=help, no_args_is_help=True, context_settings=CONTEXT)


app = typer.Typer(
    cls=Group,
    add_completion=True,  # --install-completion / --show-completion
    no_args_is_help=True,
    help="Spectral complexity and generalization-bound proxies of trained Transformers.",
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,
)
cache_app = sub_app("The on-disk spectra cache.")
app.add_typer(cache_app, name="cache")
zoo_app = sub_app("Model zoos: grids of small Transformers trained offline.")
app.add_typer(zoo_app, name="zoo")


class Terminated(KeyboardInterrupt):
    """Raised by the CLI's SIGTERM handler, so that ``finally`` blocks clean up as on Ctrl-C."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()


def _error_line(message: str) -> None:
    sys.stderr.write(f"error: {printable(' '.join(str(message).split()))}\n")
    sys.stderr.flush()


def _warning_line(message: Warning | str, *_: Any, **__: Any) -> None:
    """``warnings.showwarning`` for the CLI: one ``warning:`` line, without the library's
    ``specbound:`` prefix and the source line Python adds (a user did not write that code)."""
    text = " ".join(str(message).split()).removeprefix("specbound: ")
    sys.stderr.write(f"warning: {printable(text)}\n")
    sys.stderr.flush()


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one ``error:`` line and exit with ``code`` (2: bad input)."""
    _error_line(message)
    raise typer.Exit(code)


#: The table from library parameter names to flags, for the parameters that a library message
#: names (``errors.Param``) whatever the command (``choose another out`` -> ``choose another
#: --out``), and for the library names whose flag is spelled otherwise (RayOptions' ``address``
#: is ``--ray-address``). The running command's own options come first (:func:`command_flags`);
#: a parameter in neither keeps its Python name.
FLAGS: dict[str, str] = {
    "address": "--ray-address",
    "axes": "--axes",
    "device": "--device",
    "engine": "--engine",
    "ensemble": "--ensemble",
    "gap": "--gap",
    "gap_kind": "--gap",
    "grid": "--grid",
    "manifest": "--manifest",
    "mapping": "--mapping",
    "out": "--out",
    "prefix": "--prefix",
    "ray_address": "--ray-address",
    "revisions": "--revisions",
    "threads": "--threads",
    "workers": "--workers",
}


def given_on_command_line(name: str) -> bool:
    """Whether the running command's option ``name`` (its Python name) was given by the user
    (not its default): for options that only mean something beside another one."""
    ctx = get_current_context(silent=True)
    source = None if ctx is None else ctx.get_parameter_source(name)
    # by name: typer's vendored click has its own ParameterSource enum
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


#: Library parameter names -> the option of the command that sets them, where they differ.
_PARAM_ALIASES = {"address": "ray_address", "ray_address": "ray_address", "gap_kind": "gap"}


def command_flags() -> dict[str, str]:
    """Python parameter name -> long flag (``grid_m`` -> ``--grid-m``) of the running command,
    read from its declared options (plus ``_PARAM_ALIASES``); empty outside a command."""
    ctx = get_current_context(silent=True)
    if ctx is None:
        return {}
    flags = {}
    for p in ctx.command.params:
        longs = [o for o in getattr(p, "opts", []) if o.startswith("--")]
        if longs and p.name:
            flags[p.name] = longs[0]
    for lib, cli in _PARAM_ALIASES.items():
        if cli in flags:
            flags.setdefault(lib, flags[cli])
    return flags


def cli_message(exc: SpecboundError, flags: dict[str, str] | None = None) -> str:
    """A library error in the CLI's words: each parameter the message names (``errors.Param``)
    becomes its flag (``grid_m must be ...`` -> ``--grid-m must be ...``, ``init=X`` ->
    ``--init X``): the running command's option of that name (``flags``, default
    :func:`command_flags`), else :data:`FLAGS`, else the parameter's Python name. The rest of
    the message is printed as it is."""
    return exc.render(
        flag_of if flags is None else (lambda name: flags.get(name) or FLAGS.get(name))
    )


def flag_of(name: str) -> str | None:
    """The flag that sets the library parameter ``name`` in the running command (its own
    option, else :data:`FLAGS`), None where there is none: the ``flag`` a library message
    (``errors.spelled``) is written with in the CLI."""
    return command_flags().get(name) or FLAGS.get(name)


#: Allocation failures of torch and CUDA, which raise RuntimeError rather than MemoryError.
_OOM_TEXT = ("can't allocate memory", "out of memory", "cannot allocate memory")


def _is_out_of_memory(exc: BaseException) -> bool:
    """MemoryError, torch.OutOfMemoryError (CUDA) or torch's CPU allocator RuntimeError."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    return isinstance(exc, RuntimeError) and any(t in str(exc).lower() for t in _OOM_TEXT)


def _debug() -> bool:
    return DEBUG or config.debug()


def _internal_error(exc: BaseException) -> int:
    if _debug():
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


def _ray_up() -> bool:
    """Whether this process is connected to Ray (never imports it)."""
    ray = sys.modules.get("ray")
    return ray is not None and bool(ray.is_initialized())


def _end_ray(was_up: bool) -> None:
    """Stop the Ray runtime a command started, here rather than in ``atexit`` (where a Ctrl-C
    or SIGTERM prints a traceback and exits 0 or crashes): a signal during it is acted on after
    it (``engines.ray.runtime.shutdown``). Nothing when Ray was not imported, and nothing when
    this process was already connected before the command (a caller's runtime, e.g. ``main()``
    called from a script or a test that started Ray, stays theirs)."""
    if not was_up and "ray" in sys.modules:
        from ..engines.ray.runtime import shutdown

        shutdown()


def handle_errors(fn: F) -> F:
    """Bad input (SpecboundError) -> one ``error:`` line naming the flag, exit 2; out of memory
    -> exit 1; Ctrl-C / SIGTERM -> exit 130 / 143 after cleanup; any other exception is a bug:
    one line, exit 1 (traceback with ``--debug``)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ray_was_up = _ray_up()
        try:
            try:
                fn(*args, **kwargs)  # a return value would become main()'s exit code: drop it
            finally:
                _end_ray(ray_was_up)
            return None
        except (typer.Exit, typer.Abort, _cx.ClickException):
            raise
        except JobsLostError as exc:  # not bad input: the machine lost work
            fail(cli_message(exc), code=1)
        except SpecboundError as exc:
            fail(cli_message(exc))
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
        except OSError as exc:  # disk full, name too long, permissions: the user's to fix
            fail(os_error_line(exc, "use"), code=1)
        except Exception as exc:
            raise typer.Exit(_internal_error(exc)) from None

    return wrapper  # type: ignore[return-value]


def _print_version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def _global_options(
    debug: bool = typer.Option(
        False, "--debug", help="Print the traceback of internal errors (bugs)."
    ),
    version: bool = typer.Option(
        False,
        "--version",
        "-V",
        help="Print the specbound version and exit.",
        is_eager=True,
        callback=_print_version,
    ),
) -> None:
    """Spectral complexity and generalization-bound proxies of trained Transformers."""
    global DEBUG
    DEBUG = DEBUG or debug


def main(argv: list[str] | None = None) -> None:
    """The console entry point: usage errors become one ``error:`` line too (exit 2)."""
    global DEBUG
    with contextlib.suppress(ValueError):  # not in the main thread: no handler
        signal.signal(signal.SIGTERM, _on_sigterm)
    argv = list(sys.argv[1:] if argv is None else argv)
    options = argv[: argv.index("--")] if "--" in argv else argv
    DEBUG = False
    if "--debug" in options[1:]:  # `specbound analyze X --debug` works like `specbound --debug`
        argv.remove("--debug")
        DEBUG = True
    command = typer.main.get_command(app)
    try:
        with warnings.catch_warnings():  # restored when main returns (tests call it in-process)
            warnings.showwarning = _warning_line
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
        _error_line(cli_message(exc))
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
