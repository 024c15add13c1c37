"""The one way tests run the ``specbound`` command line.

``run_cli(*args)`` runs the console entry point ``specbound.cli.main`` in this process (fast;
the real argument parsing, error mapping and exit codes) and returns a :class:`CliResult`;
``run_cli_process(*args)`` runs ``python -m specbound`` in a subprocess (what a user's shell
does: signal handlers, the real stdout/stderr, environment variables read at start).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass
class CliResult:
    """Exit code, stdout and stderr of one run."""

    code: int
    out: str
    err: str

    @property
    def error_lines(self) -> list[str]:
        return self.err.strip().splitlines()

    def one_error_line(self) -> str:
        """The single ``error:`` line of a clean failure (asserts there is exactly one and no
        traceback)."""
        lines = self.error_lines
        assert len(lines) == 1 and lines[0].startswith("error: "), self.err
        assert "Traceback" not in self.err + self.out
        return lines[0]


@contextlib.contextmanager
def _environ(env: dict[str, str] | None):
    old = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_cli(*args: str | Path, env: dict[str, str] | None = None) -> CliResult:
    """``specbound ARGS...`` in this process: (exit code, stdout, stderr)."""
    from specbound.cli import main

    out, err = io.StringIO(), io.StringIO()
    old_term = signal.getsignal(signal.SIGTERM)
    code: int | str | None = 0
    try:
        with _environ(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main([str(a) for a in args])
            except SystemExit as exc:
                code = exc.code
    finally:
        signal.signal(signal.SIGTERM, old_term)
    return CliResult(0 if code is None else int(code), out.getvalue(), err.getvalue())


def run_cli_process(
    *args: str | Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 300,
) -> CliResult:
    """``python -m specbound ARGS...`` in a subprocess."""
    p = subprocess.run(
        [sys.executable, "-m", "specbound", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )
    return CliResult(p.returncode, p.stdout, p.stderr)
