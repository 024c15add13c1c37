"""Progress of ``analyze`` without a terminal: one line per stage on stderr (reading, spectra
counted by block, writing), quiet with ``-q``, and nothing for work shorter than
``PROGRESS_AFTER_S`` (so a quick failure stays one ``error:`` line)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from specbound.naming import short_path
from tests.support.checkpoints import write_tiny_bert

#: ``specbound ARGS`` in a subprocess whose stderr is a pipe, with the first progress line due
#: at once (the default waits PROGRESS_AFTER_S seconds, longer than a tiny model takes).
RUN_NOW = (
    "import sys; import specbound.cli.common as c; c.PROGRESS_AFTER_S = 0.0; "
    "from specbound.cli import main; main(sys.argv[1:])"
)


def _run(*args: str | Path, after_now: bool = True) -> subprocess.CompletedProcess:
    plain = "import sys; from specbound.cli import main; main(sys.argv[1:])"
    return subprocess.run(
        [sys.executable, "-c", RUN_NOW if after_now else plain, *map(str, args)],
        capture_output=True,  # stderr is a pipe, not a terminal: no bar, lines instead
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_bert(tmp_path_factory.mktemp("progress") / "m", layers=3)


def test_stage_lines_on_a_pipe(tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = _run("analyze", tiny, "--no-cache", "--out", out)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0] == f"reading {tiny}", r.stderr
    counted = [ln for ln in lines if ln.startswith("spectra: ")]
    # the first block, then (throttled) the last one: never more lines than blocks
    assert counted[0].startswith("spectra: 1/3 blocks (") and counted[-1].startswith(
        "spectra: 3/3 blocks ("
    ), r.stderr
    assert len(counted) <= 3
    # a long path (pytest-xdist's worker folders make it longer) is shortened on the left
    assert lines[-1] == f"writing {short_path(out, 70)}", r.stderr
    assert "\x1b" not in r.stderr and "\r" not in r.stderr  # plain lines, no bar redraws
    assert "bounds" in r.stdout.splitlines()  # the summary still goes to stdout

    assert _run("analyze", tiny).returncode == 0  # stores the spectra in the (test's) cache
    again = _run("analyze", tiny)
    assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines() == [f"reading {tiny}", "spectra: from the cache"]


def test_quiet_prints_no_progress(tiny: Path, tmp_path: Path) -> None:
    r = _run("analyze", tiny, "--no-cache", "-q", "--out", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert r.stderr == "" and r.stdout == ""
    assert (tmp_path / "out" / "summary.json").is_file()


def test_no_lines_before_the_delay(tiny: Path) -> None:
    from specbound.cli import common

    assert common.PROGRESS_AFTER_S >= 5.0  # a tiny model is done long before
    r = _run("analyze", tiny, "--json", after_now=False)
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_held_lines_and_throttle(capsys: pytest.CaptureFixture[str]) -> None:
    from specbound.cli.common import StageLines

    now = [0.0]
    s = StageLines(False, after=5.0, every=10.0, clock=lambda: now[0])
    s.say("reading m")
    update = s.counter("spectra", "blocks")
    update(1, 30)  # t = 0: not due, held
    now[0] = 6.0
    update(2, 30)  # due: the held stage first
    now[0] = 9.0
    update(3, 30)  # throttled
    now[0] = 16.5
    update(4, 30)
    update(30, 30)  # the last step always
    s.say("writing o")
    assert capsys.readouterr().err.splitlines() == [
        "reading m",
        "spectra: 2/30 blocks (6 s)",
        "spectra: 4/30 blocks (16 s)",
        "spectra: 30/30 blocks (16 s)",
        "writing o",
    ]
    q = StageLines(True, after=0.0)
    q.say("reading m")
    q.counter("spectra", "blocks")(1, 1)
    assert capsys.readouterr().err == ""
