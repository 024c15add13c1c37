"""Trust on the output side: no lost user files, no stale results, no inf/NaN, one-line errors.

Issue 8: ``--out`` never deletes what specbound did not write and is replaced as a whole;
SIGTERM/SIGKILL leave no temp dirs behind (for long); folders follow the umask; no inf/NaN in
CSV/JSON/HTML; bad options are SpecboundErrors; the CLI prints one line (exit 2 for bad input,
1 for bugs); a broken model in a study is skipped by name.
"""

from __future__ import annotations

import errno
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specbound import cli, extras
from specbound.analysis import analyze
from specbound.errors import SpecboundError
from specbound.io import MANIFEST, TMP_MARKER
from tests.support.checkpoints import write_tiny_bert
from tests.support.tables import check_each

# ---------------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("trust_models")
    return {"m1": write_tiny_bert(d / "m1"), "m2": write_tiny_bert(d / "m2", layers=3, seed=1)}


@pytest.fixture(scope="module")
def tiny(models):
    return analyze(models["m1"], cache=False)


def run_main(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """The console entry point in-process: (exit code, stdout, stderr)."""
    monkeypatch.setattr(cli, "DEBUG", False)
    old = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as exc:
            cli.main(list(args))
    finally:
        signal.signal(signal.SIGTERM, old)
    out, err = capsys.readouterr()
    code = exc.value.code
    return (0 if code is None else int(code)), out, err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def our_temps(parent: Path) -> list[Path]:
    return [p for p in parent.iterdir() if p.name.startswith(".specbound-")]


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "specbound.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
        cwd=cwd,
    )


def tree(d: Path) -> dict[str, bytes]:
    return {
        p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()
    }


# ------------------------------------------------------ 1. never lose what we did not write


def test_foreign_nonempty_dir_is_refused_and_untouched(tmp_path, tiny):
    out = tmp_path / "o"
    out.mkdir()
    (out / "models.csv").write_text("my own data\n")
    (out / "figures").mkdir()
    (out / "figures" / "keep.png").write_bytes(b"png")
    before = tree(out)
    with pytest.raises(SpecboundError, match="not written by specbound"):
        tiny.to_dir(out)
    assert tree(out) == before
    assert not our_temps(tmp_path)


def test_out_dot_in_a_user_directory_is_refused(tmp_path, tiny, monkeypatch):
    (tmp_path / "notes.txt").write_text("mine")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecboundError, match="not written by specbound"):
        tiny.to_dir(".")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_scale_out_with_user_models_csv_refused_before_work(tmp_path, models, monkeypatch, capsys):
    out = tmp_path / "u"
    out.mkdir()
    (out / "models.csv").write_text("precious\n")
    code, _, err = run_main(
        monkeypatch, capsys, "scale", str(models["m1"]), str(models["m2"]), "--out", str(out), "-q"
    )
    assert code == 2
    assert str(out) in one_error_line(err)
    assert (out / "models.csv").read_text() == "precious\n"
    assert "[1/2]" not in err  # refused before analyzing anything


def test_file_added_to_earlier_output_is_refused(tmp_path, tiny):
    out = tmp_path / "o"
    tiny.to_dir(out)
    (out / "my_notes.txt").write_text("keep me")
    with pytest.raises(SpecboundError, match=r"my_notes\.txt"):
        tiny.to_dir(out)
    assert (out / "my_notes.txt").read_text() == "keep me"
    assert (out / "summary.json").is_file()


def fast_page(analysis, d: Path, *args, **kwargs) -> str:
    """Stands in for the matplotlib page (slow): a figure, and the page's text (which the CLI
    writes to report.html through io)."""
    (d / "figures").mkdir()
    (d / "figures" / "alpha.png").write_bytes(b"png")
    return f"<html>{analysis.model}</html>"


def test_earlier_output_replaced_as_a_whole(tmp_path, models, monkeypatch, capsys):
    pytest.importorskip("matplotlib")  # needs the extra
    import specbound.report.pages.analysis

    monkeypatch.setattr(specbound.report.pages.analysis, "analysis_page", fast_page)
    out = tmp_path / "o"
    code, _, err = run_main(
        monkeypatch, capsys, "analyze", str(models["m1"]), "--out", str(out), "--report", "-q"
    )
    assert code == 0, err
    assert (out / "report.html").read_text() == f"<html>{models['m1']}</html>"
    assert (out / "figures").is_dir()
    manifest = json.loads((out / MANIFEST).read_text())
    on_disk = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert sorted(manifest["files"] + [MANIFEST]) == on_disk
    code, _, err = run_main(
        monkeypatch, capsys, "analyze", str(models["m2"]), "--out", str(out), "-q"
    )
    assert code == 0, err
    assert not (out / "report.html").exists() and not (out / "figures").exists()
    assert json.loads((out / "summary.json").read_text())["num_layers"] == 3
    assert not our_temps(tmp_path)


def test_extra_files_join_the_same_atomic_write(tmp_path, tiny):
    out = tmp_path / "o"

    def report(d: Path) -> None:
        (d / "report.html").write_text("<html>")
        raise RuntimeError("the report failed")

    with pytest.raises(RuntimeError):
        tiny.to_dir(out, extra=report)
    assert not out.exists() and not our_temps(tmp_path)
    tiny.to_dir(out, extra=lambda d: (d / "report.html").write_text("<html>"))
    assert (out / "report.html").read_text() == "<html>" and (out / "matrices.csv").is_file()


def test_failed_rewrite_keeps_the_earlier_output(tmp_path, tiny):
    out = tmp_path / "o"
    tiny.to_dir(out)
    before = tree(out)

    def boom(d: Path) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tiny.to_dir(out, extra=boom)
    assert tree(out) == before and not our_temps(tmp_path)


def test_swap_without_renameat2(tmp_path, tiny, models, monkeypatch):
    from specbound.io import outdir

    monkeypatch.setattr(outdir, "_exchange", lambda a, b: False)  # two-rename fallback
    out = tmp_path / "o"
    tiny.to_dir(out, extra=lambda d: (d / "report.html").write_text("old"))
    analyze(models["m2"], cache=False).to_dir(out)
    assert not (out / "report.html").exists()
    assert json.loads((out / "summary.json").read_text())["num_layers"] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


def test_empty_existing_dir_and_symlink_to_earlier_output(tmp_path, tiny):
    empty = tmp_path / "empty"
    empty.mkdir()
    tiny.to_dir(empty)
    assert (empty / "summary.json").is_file()
    link = tmp_path / "link"
    link.symlink_to(empty)
    tiny.to_dir(link)
    assert link.is_symlink() and (link / "summary.json").is_file()


# ------------------------------------------------------------- 3. folders follow the umask


def test_new_output_dir_follows_umask(tmp_path, tiny):
    from specbound.io import files

    def check(mask: int) -> None:
        old = os.umask(mask)
        files.umask.cache_clear()  # specbound reads the umask once per process
        try:
            tiny.to_dir(tmp_path / f"o{mask:o}")
            (tmp_path / f"plain{mask:o}").mkdir()  # what the OS does for a plain new folder
        finally:
            os.umask(old)
            files.umask.cache_clear()
        mode = (tmp_path / f"o{mask:o}").stat().st_mode & 0o777
        assert mode == 0o777 & ~mask == (tmp_path / f"plain{mask:o}").stat().st_mode & 0o777

    check_each([0o022, 0o027], check, label=oct)


# ---------------------------------------------------------- 2. stale temp dirs, SIGTERM


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_temp_dirs_swept_live_and_foreign_kept(tmp_path, tiny):
    from specbound.io.files import host_tag
    from specbound.io.outdir import TempDir

    dead = _dead_pid()
    stale = tmp_path / f".specbound-{dead}-{host_tag()}-0123456789ab.tmp"
    stale.mkdir()
    (stale / TMP_MARKER).write_text(json.dumps({"pid": dead, "host": "h"}))  # lock free
    (stale / "matrices.csv").write_text("half")
    live = TempDir(tmp_path / "sibling")  # a live writer: holds its marker's lock
    foreign = tmp_path / ".specbound-userdata.tmp"
    foreign.mkdir()
    (foreign / "x").write_text("not ours: no owner-marked name")
    elsewhere = tmp_path / f".specbound-{dead}-00000000-0123456789ab.tmp"  # another host's
    elsewhere.mkdir()
    try:
        tiny.to_dir(tmp_path / "o")
        assert not stale.exists()
        assert live.path.exists() and foreign.exists() and elsewhere.exists()
    finally:
        live.discard()


#: Runs the CLI with ``outdir._on_temp_ready`` replaced: once the temp dir exists it writes its
#: path into the flag file (argv[1]) and waits (up to 60 s) for the flag to be deleted.
_PAUSED_CLI = """
import os, sys, time
from pathlib import Path
from specbound.io import outdir
flag = sys.argv.pop(1)
def pause(tmp):
    Path(flag).write_text(str(tmp))
    for _ in range(6000):
        if not os.path.exists(flag):
            return
        time.sleep(0.01)
outdir._on_temp_ready = pause
from specbound.cli import main
main(sys.argv[1:])
"""


def _start_paused(tmp_path: Path, model: Path, out: Path) -> tuple[subprocess.Popen, Path]:
    flag = tmp_path / "paused.flag"
    proc = subprocess.Popen(
        [sys.executable, "-c", _PAUSED_CLI, str(flag), "analyze", str(model), "-q", "--out", out],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    while not flag.exists():  # synchronize on the temp dir existing, not on a sleep
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the write never started"
        time.sleep(0.05)
    assert Path(flag.read_text()).is_dir()
    return proc, flag


def test_sigterm_during_write_leaves_nothing(tmp_path, models):
    out = tmp_path / "o"
    proc, _ = _start_paused(tmp_path, models["m1"], out)
    assert len(our_temps(tmp_path)) == 1
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    assert not out.exists() and not our_temps(tmp_path)


def test_sigkill_leftover_swept_by_next_write(tmp_path, models, tiny):
    out = tmp_path / "o"
    proc, _ = _start_paused(tmp_path, models["m1"], out)
    proc.kill()
    proc.communicate(timeout=60)
    assert len(our_temps(tmp_path)) == 1  # nothing can clean up after SIGKILL...
    tiny.to_dir(tmp_path / "other")
    assert not our_temps(tmp_path)  # ...but the next write in the same folder does
    assert not out.exists()


# ------------------------------------------------- 5. realistic write trouble, one line


def test_disk_full_and_read_only_name_the_path(tmp_path, tiny, monkeypatch):
    from specbound.linalg.spectra import Spectra

    out = tmp_path / "o"

    def full(self, f):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Spectra, "save", full)
    with pytest.raises(SpecboundError, match="no space left") as e:
        tiny.to_dir(out)
    assert str(out) in str(e.value)
    assert not out.exists() and not our_temps(tmp_path)
    monkeypatch.undo()

    def rofs(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(os, "mkdir", rofs)
    with pytest.raises(SpecboundError, match="read-only"):
        tiny.to_dir(out)


def test_bad_out_paths_one_line(tmp_path, models, monkeypatch, capsys):
    (tmp_path / "file").write_text("x")
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    cases = {
        str(tmp_path / "file" / "sub"): "is not a directory",
        str(dangling): "dangling symlink",
        str(tmp_path / ("x" * 300)): "cannot",
    }
    for out, needle in cases.items():
        code, _, err = run_main(
            monkeypatch, capsys, "analyze", str(models["m1"]), "--out", out, "-q"
        )
        assert code == 2, (out, err)
        assert needle in one_error_line(err), err
    assert not (tmp_path / "nowhere").exists() and dangling.is_symlink()
    assert not our_temps(tmp_path)


def test_long_out_name_fits(tmp_path, tiny):
    out = tmp_path / ("n" * 250)  # fits the file system; ".<name>.xxxxxxxx.tmp" would not
    tiny.to_dir(out)
    assert (out / "summary.json").is_file()


# ------------------------------------------------------------- 4. no inf / NaN anywhere


@pytest.fixture(scope="module")
def deep(tmp_path_factory):
    d = write_tiny_bert(
        tmp_path_factory.mktemp("deep") / "m", layers=48, hidden=32, heads=4, ffn=128, seed=3
    )
    return analyze(d, cache=False)


def test_overflow_cells_empty_logs_present(tmp_path, deep):
    out = tmp_path / "o"
    deep.to_dir(out)
    text = {p.name: p.read_text() for p in out.iterdir() if p.suffix in (".csv", ".json")}
    assert {"matrices.csv", "layers.csv", "summary.json"} <= set(text)
    for n, t in text.items():
        low = t.lower()
        assert "inf" not in low and "nan" not in low, n
    json.loads(text["summary.json"], parse_constant=lambda c: pytest.fail(c))
    mats = pd.read_csv(out / "matrices.csv")
    layers = pd.read_csv(out / "layers.csv")
    big = math.log10(np.finfo(np.float64).max)
    for df, col in [
        (mats, "depth_factor"),
        (mats, "scale"),
        (mats, "gamma"),
        (mats, "contribution"),
        (layers, "depth_factor"),
        (layers, "contribution_total"),
    ]:
        logs = df[f"log10_{col}"].to_numpy()
        vals = df[col].to_numpy()
        assert np.isfinite(logs).all(), col
        over = logs > big
        assert np.isnan(vals[over]).all() and np.isfinite(vals[~over]).all(), col
        np.testing.assert_allclose(np.log10(vals[~over]), logs[~over], rtol=0, atol=1e-9)
    # the case in the issue: on today's numbers 40 of 480 depth-factor cells, 48 scale cells and
    # 4 layer depth factors exceed float64
    d = "log10_depth_factor"
    assert (mats[d] > big).sum() >= 30 and (layers[d] > big).sum() >= 2
    # layer totals agree with the per-matrix logs (independent log-sum-exp in base 10)
    for l in (0, 47):
        lg = mats.loc[mats.layer == l, "log10_contribution"].to_numpy()
        m = lg.max()
        expect = m + math.log10(np.sum(10.0 ** (lg - m)))
        assert math.isclose(layers.loc[l, "log10_contribution_total"], expect, abs_tol=1e-9)


def test_html_tables_say_beyond_float64(deep):
    from specbound.report import table_html

    html = table_html(deep.layers)
    assert "&gt; 1.8e308" in html
    assert ">inf<" not in html and "n/a" not in html


# ------------------------------------------------------------- 4. argument validation


#: (option of analyze and Analysis.with_options, a value it refuses)
BAD_OPTIONS = [
    *(("grid_m", bad) for bad in (2.5, True, 0, -3, 10_001, "3", float("nan"))),
    *(("l_phi", bad) for bad in (0.0, -1.0, float("nan"), float("inf"), True, "1")),
]


def test_bad_analysis_options_rejected(tiny):
    def check(case: tuple[str, object]) -> None:
        name, bad = case
        with pytest.raises(SpecboundError, match=name):
            tiny.with_options(**{name: bad})
        with pytest.raises(SpecboundError, match=name):
            analyze("/nonexistent/model", **{name: bad})  # options are checked before reading

    check_each(BAD_OPTIONS, check)


def test_compute_bounds_checks_layers(tiny):
    from specbound.measures.bounds import compute_bounds

    s = tiny.spectra
    for L in (1, 3, 0):
        with pytest.raises(SpecboundError, match="num_layers"):
            compute_bounds(s, L, tiny.spec.hidden_size, 1.0)
    ok = compute_bounds(s, 2, tiny.spec.hidden_size, 1.0, grid_m=4.0)
    assert (
        ok.bounds.grid_m == 4
        and ok.bounds.spectrum_adaptive.ln
        == tiny.with_options(l_phi=1.0, grid_m=4).bounds.spectrum_adaptive.ln
    )


# ---------------------------------------------------------------------- 5. CLI policy


def test_usage_errors_are_one_line(models, monkeypatch, capsys):
    def check(case: tuple[str, str]) -> None:
        value, needle = case
        code, _, err = run_main(
            monkeypatch, capsys, "analyze", str(models["m1"]), "--grid-m", value
        )
        assert code == 2
        assert needle in one_error_line(err)

    check_each([("abc", "--grid-m"), ("2.5", "error: ")], check)  # not an int; a fraction


def patch_analyze(monkeypatch, fake) -> None:
    """Replace analyze() where the analyze command's engine looks it up (imported at the top
    of analysis.sweep and analysis.records)."""
    import specbound.analysis.records
    import specbound.analysis.sweep

    monkeypatch.setattr(specbound.analysis.sweep, "analyze", fake)
    monkeypatch.setattr(specbound.analysis.records, "analyze", fake)


def test_internal_error_exit_1_and_debug_traceback(models, monkeypatch, capsys):

    def bug(*a, **k):
        raise ZeroDivisionError("a bug")

    patch_analyze(monkeypatch, bug)
    code, _, err = run_main(monkeypatch, capsys, "analyze", str(models["m1"]))
    assert code == 1
    line = one_error_line(err)
    assert "internal error" in line and "ZeroDivisionError" in line and "--debug" in line
    code, _, err = run_main(monkeypatch, capsys, "--debug", "analyze", str(models["m1"]))
    assert code == 1 and "Traceback" in err and "a bug" in err


def test_markup_in_paths_printed_verbatim(tmp_path, models, monkeypatch, capsys):
    out = tmp_path / "sweep[lr=3e-4]"
    code, stdout, err = run_main(
        monkeypatch, capsys, "analyze", str(models["m1"]), "--out", str(out)
    )
    assert code == 0, err
    assert "sweep[lr=3e-4]" in stdout.replace("\n", "")
    assert (out / "summary.json").is_file()


def test_device_checked_even_from_cache(models, monkeypatch, capsys):
    pytest.importorskip("torch")  # needs the extra
    code, _, err = run_main(monkeypatch, capsys, "analyze", str(models["m1"]), "-q")
    assert code == 0, err
    for dev in ("cuda:99", "mps"):
        code, _, err = run_main(
            monkeypatch, capsys, "analyze", str(models["m1"]), "-q", "--device", dev
        )
        assert code == 2, (dev, err)
        assert dev in one_error_line(err)


def test_subprocess_usage_error_and_sigterm_free_run(models):
    r = run_cli("analyze", str(models["m1"]), "--grid-m", "abc")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("error: ") and "Usage" not in r.stderr


# ------------------------------------------------------ 6. one broken model in a study


def test_scale_skips_broken_model(tmp_path, models, monkeypatch, capsys):
    pytest.importorskip("matplotlib")  # needs the extra
    import specbound.report.figures.scale

    monkeypatch.setattr(
        specbound.report.figures.scale, "study_figures", lambda study, d: []
    )  # speed
    bad = write_tiny_bert(tmp_path / "broken")
    (bad / "config.json").unlink()
    out = tmp_path / "study"
    code, _, err = run_main(
        monkeypatch,
        capsys,
        "scale",
        str(models["m1"]),
        str(bad),
        str(models["m2"]),
        "--out",
        str(out),
        "-q",
    )
    assert code == 0, err
    warnings = [ln for ln in err.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and str(bad) in warnings[0] and "config.json" in warnings[0]
    assert len(pd.read_csv(out / "models.csv")) == 2
    skipped = pd.read_csv(out / "skipped.csv")
    assert list(skipped["model"]) == [str(bad)]
    assert "Skipped (1)" in (out / "report.html").read_text()


def test_scale_all_broken_fails(tmp_path):
    from specbound.studies.scale import scale

    bad = write_tiny_bert(tmp_path / "broken")
    (bad / "config.json").unlink()
    seen = []
    with pytest.raises(SpecboundError, match="none of the 2 models"):
        scale([bad, tmp_path / "missing"], on_skip=lambda n, r: seen.append(n))
    assert len(seen) == 2
    with pytest.raises(SpecboundError, match="grid_m"):  # a bad option is not a broken model
        scale([bad], grid_m=0, on_skip=lambda n, r: pytest.fail("skipped"))


def test_debug_flag_after_the_command(models, monkeypatch, capsys):
    """`specbound analyze X --debug` (where users put it) works like `specbound --debug ...`."""

    def bug(*a, **k):
        raise ZeroDivisionError("a bug")

    patch_analyze(monkeypatch, bug)
    code, _, err = run_main(monkeypatch, capsys, "analyze", str(models["m1"]), "--debug")
    assert code == 1 and "Traceback" in err and "a bug" in err
    code, _, err = run_main(monkeypatch, capsys, "analyze", str(models["m1"]))
    assert code == 1 and "Traceback" not in err


def test_out_of_memory_is_not_reported_as_a_bug(models, monkeypatch, capsys):
    """torch's allocators raise RuntimeError/OutOfMemoryError: exit 1, 'out of memory', no
    'internal error ... please report it'."""
    errors: list[BaseException] = [
        RuntimeError(
            "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't "
            "allocate memory: you tried to allocate 96000000000 bytes."
        ),
        MemoryError(),
    ]
    if extras.available("torch"):
        errors.append(
            extras.torch().OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")
        )

    def check(exc: BaseException) -> None:
        def oom(*a, **k):
            raise exc

        patch_analyze(monkeypatch, oom)
        code, _, err = run_main(monkeypatch, capsys, "analyze", str(models["m1"]))
        line = one_error_line(err)
        assert code == 1 and "out of memory" in line and "internal error" not in line, line

    check_each(errors, check, label=lambda e: type(e).__name__)


# ------------------------------------- issue 44: one writer; --out vs inputs; odd --out paths

CORRELATED = (
    Path(__file__).resolve().parents[2]
    / "benchmarks"
    / "generalization"
    / "results"
    / "sparse-parity-fixed-n"
)


def test_fifo_and_device_out_refused_without_opening(tmp_path, models, monkeypatch, capsys):
    """Opening a FIFO for writing blocks until a reader comes: ``layers --out FIFO`` hung."""
    fifo, fifo_csv = tmp_path / "fifo", tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    os.mkfifo(fifo_csv)
    m = str(models["m1"])
    for args, needle in (
        (("analyze", m, "--out", str(fifo)), "FIFO"),
        (("analyze", m, "--out", "/dev/null"), "device"),
        (("layers", m, "--for", "alphapruning", "--out", "/dev/null"), "device"),
    ):
        code, _, err = run_main(monkeypatch, capsys, *args, "-q")
        assert code == 2 and needle in one_error_line(err), (args, err)
    # in a subprocess: a regression hangs there (killed by the timeout), not this test run
    cmd = ["layers", m, "--for", "alphapruning", "--out", str(fifo_csv), "-q"]
    r = subprocess.run(
        [sys.executable, "-m", "specbound.cli", *cmd],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "FIFO" in one_error_line(r.stderr), r.stderr
    assert fifo.exists() and fifo_csv.exists() and not our_temps(tmp_path)


def test_out_overlapping_a_model_is_refused(tmp_path, models, monkeypatch, capsys):
    m = models["m1"]
    before = tree(m)
    for args in (
        ("analyze", str(m), "--out", str(m)),
        ("analyze", str(m), "--out", str(m / "results")),
        ("layers", str(m), "--for", "tempbalance", "--out", str(m / "lr.csv")),
        ("scale", str(m), str(models["m2"]), "--out", str(m / "study")),
    ):
        code, _, err = run_main(monkeypatch, capsys, *args, "-q")
        line = one_error_line(err)
        assert code == 2 and "input" in line, (args, line)
    assert tree(m) == before


def test_out_containing_an_input_is_refused(tmp_path, tiny):
    from specbound.io import check_output_dir

    out = tmp_path / "o"
    tiny.to_dir(out)  # an earlier output: replacing it would remove the input it holds
    with pytest.raises(SpecboundError, match="contains the input"):
        check_output_dir(out, inputs=[out / "layers.csv"])
    with pytest.raises(SpecboundError, match="is the input"):
        check_output_dir(out, inputs=[out])
    assert check_output_dir(out, inputs=[out], replaces=out) == out.resolve()
    with pytest.raises(SpecboundError, match="contains the input"):  # replaces: equal only
        check_output_dir(out, inputs=[out / "layers.csv"], replaces=out / "layers.csv")


def _correlate_folder(root: Path, name: str, keep) -> Path:
    models = pd.read_csv(CORRELATED / "models.csv").drop(columns="zoo", errors="ignore")
    meta = json.loads((CORRELATED / "correlate.json").read_text())
    meta.pop("zoos", None)
    d = root / name
    d.mkdir()
    part = models[keep(models)]
    part.to_csv(d / "models.csv", index=False)
    # the reader checks these counts against models.csv (no skipped.csv here)
    meta.update(n_models=len(part), n_skipped=0, n_listed=len(part))
    (d / "correlate.json").write_text(json.dumps({**meta, "manifest": f"zoo-{name}/zoo.csv"}))
    return d


def test_pooling_or_a_study_into_one_of_its_inputs_is_refused(tmp_path, monkeypatch, capsys):
    """``correlate cA cB --out cB`` and ``study cA cB --out cA`` replaced an input (exit 0);
    ``correlate X --out X`` (re-evaluation in place) stays allowed."""
    pytest.importorskip("matplotlib")  # needs the extra
    a = _correlate_folder(tmp_path, "a", lambda m: m["seed"] == 0)
    b = _correlate_folder(tmp_path, "b", lambda m: m["seed"] != 0)
    ra, rb = tmp_path / "ra", tmp_path / "rb"
    for src, dst in ((a, ra), (b, rb)):
        assert run_main(monkeypatch, capsys, "correlate", str(src), "--out", str(dst), "-q")[0] == 0
    before = {d: tree(d) for d in (ra, rb)}
    for args in (
        ("correlate", str(ra), str(rb), "--out", str(rb)),
        ("correlate", str(ra), str(rb), "--out", str(ra / "pooled")),
        ("study", str(ra), str(rb), "--out", str(ra)),
        ("study", "--replicates", f"x={ra},{rb}", "--out", str(rb)),
    ):
        code, _, err = run_main(monkeypatch, capsys, *args, "-q")
        line = one_error_line(err)
        assert code == 2 and "input" in line, (args, line)
    assert {d: tree(d) for d in (ra, rb)} == before
    code, _, err = run_main(monkeypatch, capsys, "correlate", str(ra), "--out", str(ra), "-q")
    assert code == 0, err
    assert (ra / "correlation.csv").read_bytes() == before[ra]["correlation.csv"]


def test_trajectory_out_on_its_track_is_refused(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")  # needs the extra
    track = tmp_path / "track"
    track.mkdir()
    (track / "track.csv").write_text("step\n")
    code, _, err = run_main(monkeypatch, capsys, "trajectory", str(track), "--out", str(track))
    assert code == 2 and "contains the input" in one_error_line(err), err


def test_write_errors_through_the_cli_are_one_line(tmp_path, models, monkeypatch, capsys):
    from specbound.linalg.spectra import Spectra

    def full(self, f):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Spectra, "save", full)
    out = tmp_path / "o"
    code, _, err = run_main(
        monkeypatch, capsys, "analyze", str(models["m1"]), "--out", str(out), "-q", "--no-cache"
    )
    assert code == 2 and "no space left" in one_error_line(err), err
    assert not out.exists() and not our_temps(tmp_path)
    monkeypatch.undo()

    real_mkdir = os.mkdir

    def read_only(path, *a, **k):  # the parent refuses new entries (as root chmod would not)
        if Path(path).parent == tmp_path / "ro":
            raise OSError(errno.EACCES, "Permission denied", str(path))
        return real_mkdir(path, *a, **k)

    (tmp_path / "ro").mkdir()
    monkeypatch.setattr(os, "mkdir", read_only)
    code, _, err = run_main(
        monkeypatch, capsys, "analyze", str(models["m1"]), "--out", str(tmp_path / "ro" / "o")
    )
    assert code == 2 and "ermission denied" in one_error_line(err), err
    assert list((tmp_path / "ro").iterdir()) == []


ZOO_GRID = {
    "axes": {
        "depth": [1],
        "width": [8],
        "lr": [1e-2],
        "weight_decay": [0.0],
        "train_fraction": [0.3],
        "seed": [0],
    },
    "max_steps": 2,
}


def test_zoo_train_modes_long_out_and_grid_inside_out(tmp_path, monkeypatch, capsys):
    """``zoo train`` wrote model.safetensors 0600 and a 300-character --out was an internal
    error (exit 1)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from specbound.io import files
    from specbound.studies.zoo import train_zoo

    old = os.umask(0o022)
    files.umask.cache_clear()
    try:
        train_zoo("modular-addition", tmp_path / "z", preset="tiny", grid=ZOO_GRID)
    finally:
        os.umask(old)
        files.umask.cache_clear()
    paths = list((tmp_path / "z").rglob("*"))
    assert any(p.name == "model.safetensors" for p in paths)
    for p in paths:
        if not p.is_symlink():
            want = 0o755 if p.is_dir() else 0o644
            assert p.stat().st_mode & 0o777 == want, (p, oct(p.stat().st_mode))

    g = tmp_path / "g.json"
    g.write_text(json.dumps(ZOO_GRID))
    base = ("zoo", "train", "modular-addition", "--preset", "tiny", "-q", "--grid")
    code, _, err = run_main(
        monkeypatch, capsys, *base, str(g), "--out", str(tmp_path / ("z" * 300))
    )
    assert code == 2 and "name too long" in one_error_line(err), err
    zoo = tmp_path / "z2"
    zoo.mkdir()
    (zoo / "g.json").write_text(json.dumps(ZOO_GRID))
    code, _, err = run_main(monkeypatch, capsys, *base, str(zoo / "g.json"), "--out", str(zoo))
    assert code == 2 and "contains the input" in one_error_line(err), err
    assert [p.name for p in zoo.iterdir()] == ["g.json"]


# ------------------------------------------------------------------------ an empty --out

EMPTY_OUT_COMMANDS = [
    ["analyze", "MODEL"],
    ["layers", "MODEL", "--for", "alphapruning"],
    ["scale", "MODEL"],
    ["correlate", "MODEL"],
    ["study", "MODEL"],
    ["trajectory", "MODEL"],
    ["zoo", "train"],
    ["reproduce", "bert-miniatures"],
]


def test_an_empty_out_is_refused_and_nothing_is_written(models, tmp_path, monkeypatch, capsys):
    """``--out ''`` is not the current folder: Path('') is '.', which the user did not name
    (it wrote the results into the working folder)."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)

    def check(argv: list[str]) -> None:
        args = [str(models["m1"]) if a == "MODEL" else a for a in argv]
        code, _out, err = run_main(monkeypatch, capsys, *args, "--out", "")
        assert code == 2
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and "--out" in lines[0], err
        assert "empty" in lines[0]
        assert list(work.iterdir()) == []

    check_each(EMPTY_OUT_COMMANDS, check, label=" ".join)


def test_the_library_writers_refuse_an_empty_path(tmp_path, monkeypatch):
    from specbound.io.files import atomic_file
    from specbound.io.outdir import output_dir

    monkeypatch.chdir(tmp_path)

    def check(writer) -> None:
        with pytest.raises(SpecboundError, match="is empty"), writer(""):
            pass
        assert list(tmp_path.iterdir()) == []

    check_each([output_dir, atomic_file], check, label=lambda w: w.__name__)
