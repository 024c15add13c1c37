"""Issue 44: Ctrl-C or SIGTERM while Ray starts or stops exits 130 / 143 with one line.

No Ray is started: ``tests.support.fakeray`` stands in for the module, sending the signal in
the middle of ``ray.init`` / ``ray.shutdown`` (ray.init replaces the SIGTERM handler with one
that calls ``sys.exit(15)``, as Ray's does). Ray's own start and stop are deferred-signal
regions: the signal is acted on once Ray is done, by the handler that was in place before.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from specbound.engines.ray import runtime
from tests.support import fakeray, procjobs

ROOT = Path(__file__).resolve().parents[2]


class Stop(Exception):
    """What the handlers of these tests raise (the CLI's raise KeyboardInterrupt/Terminated)."""


def _raise(signum, frame):
    raise Stop(signal.Signals(signum).name)


@pytest.fixture
def handlers():
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in old:
        signal.signal(s, _raise)
    yield
    for s, h in old.items():
        signal.signal(s, h)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_ray_starts_is_acted_on_once_it_has_started_and_stopped(
    handlers, monkeypatch, sig
):
    ray = fakeray.make(init_signal=sig)
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(Stop, match=signal.Signals(sig).name):
        runtime.connect()
    # a SIGTERM cuts the start short (ray.init's own handler exits), a Ctrl-C waits for it
    started = ["init", "init done"] if sig == signal.SIGINT else ["init"]
    assert ray.log == [*started, "shutdown", "shutdown done"]
    assert signal.getsignal(signal.SIGTERM) is _raise  # ray.init's own handler is gone
    assert signal.getsignal(signal.SIGINT) is _raise


def test_a_quiet_start_keeps_the_runtime_and_the_handlers(handlers, monkeypatch):
    ray = fakeray.make()
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert runtime.connect() is ray and ray.is_initialized()
    assert signal.getsignal(signal.SIGTERM) is _raise
    runtime.shutdown()
    assert ray.log == ["init", "init done", "shutdown", "shutdown done"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_ray_stops_is_acted_on_once_it_has_stopped(handlers, monkeypatch, sig):
    ray = fakeray.make(shutdown_signal=sig)
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    runtime.connect()
    with pytest.raises(Stop, match=signal.Signals(sig).name):
        runtime.shutdown()
    assert ray.log[-2:] == ["shutdown", "shutdown done"]


@pytest.mark.parametrize(
    ("where", "sig", "code", "word"),
    [
        ("init_signal", signal.SIGTERM, 143, "terminated"),
        ("shutdown_signal", signal.SIGTERM, 143, "terminated"),
        ("shutdown_signal", signal.SIGINT, 130, "interrupted"),
    ],
)
def test_cli_exit_code_and_one_line_when_ray_starts_or_stops(where, sig, code, word):
    """The CLI ends Ray itself once the command is done (not in atexit, where a signal
    printed a traceback and exited 0, or 15 from ray.init's handler)."""
    start = "from specbound.engines.ray import runtime; runtime.connect()"
    script = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.support import fakeray; "
        f"fakeray.install({where}={int(sig)}); "
        "from specbound.cli.app import Command, app, handle_errors; "
        f"f = handle_errors(lambda: exec({start!r})); "
        "from specbound.cli import main; "
        "app.command('ray-probe', cls=Command)(f); "
        "sys.argv[0] = 'specbound'; main()"
    )
    r = subprocess.run(
        [sys.executable, "-c", script, "ray-probe"],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=procjobs.fresh_sigint,
    )
    assert r.returncode == code, r.stderr
    assert r.stderr == f"{word}\n", r.stderr
