"""The one folder writer (io.outdir.output_dir) under concurrency and next to names it did not
write (issue 44): sibling writers into one parent, writers racing into one folder (the last to
commit wins), a reader racing them, owner-marked temps, the sweep of dead writers' temps only.

The concurrency test runs 4 writer processes and 1 reader process for a fixed number of loops
(no timing): every write a process reports as done must have left a whole folder, and no process
may see an error. Each folder written holds files that all carry one token, so a file from two
writes, a truncated file or a missing one is detected by reading it back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from specbound.io import MANIFEST, output_dir
from specbound.io.files import TEMP_RE, host_tag, temp_name
from specbound.io.outdir import TMP_MARKER, TempDir, sweep_stale

ROOT = Path(__file__).resolve().parents[2]
FILES = ("a.json", "b.json", "sub/c.json")

#: One writer: waits for the go file, then ``loops`` times writes a whole folder into its own
#: sibling ``own`` and into the ``shared`` folder, and checks its own folder right after.
WRITER = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    from specbound.io import output_dir

    parent, name, loops = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    FILES = ("a.json", "b.json", "sub/c.json")
    while not (parent / "go").exists():
        time.sleep(0.01)
    report = {"done": 0, "errors": [], "incomplete": []}
    for i in range(loops):
        for dest in (parent / name, parent / "shared"):
            token = f"{name}-{i}-{dest.name}"
            try:
                with output_dir(dest) as tmp:
                    (tmp / "sub").mkdir()
                    for f in FILES:
                        (tmp / f).write_text(json.dumps({"token": token, "pad": "x" * 4000}))
            except Exception as exc:
                report["errors"].append(f"{type(exc).__name__}: {exc}")
                continue
            report["done"] += 1
            if dest.name == name:  # nobody else writes there: exactly what we wrote
                try:
                    got = {json.loads((dest / f).read_text())["token"] for f in FILES}
                except Exception as exc:
                    got = {repr(exc)}
                if got != {token}:
                    report["incomplete"].append([token, sorted(got)])
    print(json.dumps(report))
    """
)

#: A reader of the shared folder: each file it opens must be whole (strict JSON with a token).
READER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path

    parent, loops = Path(sys.argv[1]), int(sys.argv[2])
    FILES = ("a.json", "b.json", "sub/c.json")
    while not (parent / "go").exists():
        time.sleep(0.01)
    report = {"reads": 0, "errors": []}
    for _ in range(loops):
        for f in FILES:
            try:
                json.loads((parent / "shared" / f).read_text())["token"]
                report["reads"] += 1
            except Exception as exc:
                report["errors"].append(f"{f}: {type(exc).__name__}: {exc}")
    print(json.dumps(report))
    """
)


def _whole(d: Path) -> str:
    """The one token all files of the folder ``d`` carry, and its manifest lists exactly them."""
    tokens = {json.loads((d / f).read_text())["token"] for f in FILES}
    assert len(tokens) == 1, tokens
    manifest = json.loads((d / MANIFEST).read_text())
    assert sorted(manifest["files"]) == sorted(FILES)
    return tokens.pop()


def test_concurrent_writers_siblings_same_folder_and_a_reader(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    (tmp_path / "writer.py").write_text(WRITER)
    (tmp_path / "reader.py").write_text(READER)
    parent = tmp_path / "results"
    parent.mkdir()
    names = [f"model{k}" for k in range(4)]
    loops = 25
    procs = [
        subprocess.Popen(
            [sys.executable, str(tmp_path / "writer.py"), str(parent), n, str(loops)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for n in names
    ]
    # the reader needs a shared folder to read from the start
    with output_dir(parent / "shared") as tmp:
        (tmp / "sub").mkdir()
        for f in FILES:
            (tmp / f).write_text(json.dumps({"token": "first"}))
    reader = subprocess.Popen(
        [sys.executable, str(tmp_path / "reader.py"), str(parent), "400"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    (parent / "go").write_text("")
    reports = []
    for p in [*procs, reader]:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        reports.append(json.loads(out))
    *writers, read = reports
    for n, r in zip(names, writers, strict=True):
        assert r["errors"] == [] and r["incomplete"] == [], (n, r)
        assert r["done"] == 2 * loops
        assert _whole(parent / n) == f"{n}-{loops - 1}-{n}"  # its last write
    assert read["errors"] == [] and read["reads"] == 400 * len(FILES)
    last = {f"{n}-{loops - 1}-shared" for n in names}
    assert _whole(parent / "shared") in last  # whole, and one writer's last write
    leftovers = sorted(p.name for p in parent.iterdir() if p.name.startswith(".specbound-"))
    assert leftovers == []
    assert sorted(p.name for p in parent.iterdir()) == sorted([*names, "go", "shared"])


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_temp_names_are_unique_and_name_their_owner():
    names = {temp_name() for _ in range(1000)}
    assert len(names) == 1000
    for n in names:
        m = TEMP_RE.match(n)
        assert m is not None and int(m["pid"]) == os.getpid() and m["host"] == host_tag()


def test_a_user_folder_named_like_a_temp_survives(tmp_path):
    """Earlier versions took any ``.specbound-XXXXXX.tmp`` holding a manifest (an earlier
    output) for a leftover of an interrupted swap and deleted it."""
    users = tmp_path / ".specbound-myrun01.tmp"
    with output_dir(users) as tmp:  # a real specbound output the user chose to name so
        (tmp / "x.txt").write_text("mine")
    plain = tmp_path / ".specbound-abcdef.tmp"
    plain.mkdir()
    (plain / "notes").write_text("mine too")
    with output_dir(tmp_path / "o") as tmp:
        (tmp / "y.txt").write_text("y")
    assert (users / "x.txt").read_text() == "mine"
    assert (plain / "notes").read_text() == "mine too"
    assert sweep_stale(tmp_path) == []


def test_only_dead_owners_temps_are_swept(tmp_path):
    dead = _dead_pid()
    host = host_tag()
    # a dead writer's folder (marker, lock free), its file temp and its marker-less folder
    gone = tmp_path / f".specbound-{dead}-{host}-0123456789ab.tmp"
    gone.mkdir()
    (gone / TMP_MARKER).write_text(json.dumps({"pid": dead, "host": "x"}))
    gone_file = tmp_path / f".specbound-{dead}-{host}-0123456789ac.tmp"
    gone_file.write_text("half a zoo.json")
    gone_bare = tmp_path / f".specbound-{dead}-{host}-0123456789ad.tmp"
    gone_bare.mkdir()
    # kept: a live writer (lock held), a live pid without marker, another host's, a user's
    live = TempDir(tmp_path / "sibling")
    mine = tmp_path / f".specbound-{os.getpid()}-{host}-0123456789ae.tmp"
    mine.mkdir()
    elsewhere = "0" * 8 if host != "0" * 8 else "1" * 8
    other_host = tmp_path / f".specbound-{dead}-{elsewhere}-0123456789af.tmp"
    other_host.mkdir()
    (other_host / TMP_MARKER).write_text(json.dumps({"pid": dead, "host": "x"}))  # lock free
    user = tmp_path / f".specbound-{dead}-{host}-0123456789ab.tmp.bak"
    user.mkdir()
    try:
        removed = sweep_stale(tmp_path)
        assert sorted(removed) == sorted([gone, gone_file, gone_bare])
        for p in (live.path, mine, other_host, user):
            assert p.exists(), p
    finally:
        live.discard()
    assert not live.path.exists()


def test_a_marker_being_created_is_not_taken_for_a_dead_one(tmp_path):
    """Between creating its marker and writing its pid a writer's lock may be free: an empty
    marker counts as held."""
    d = tmp_path / f".specbound-{_dead_pid()}-{host_tag()}-0123456789ab.tmp"
    d.mkdir()
    (d / TMP_MARKER).write_text("")
    assert sweep_stale(tmp_path) == [] and d.exists()


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_library_written_files_follow_the_umask(tmp_path, mask):
    """A file some library created 0600 (safetensors does) gets the umask's mode too."""
    from specbound.io import files

    old = os.umask(mask)
    files.umask.cache_clear()
    try:
        with output_dir(tmp_path / "o") as tmp:
            fd = os.open(tmp / "model.safetensors", os.O_WRONLY | os.O_CREAT, 0o600)
            os.close(fd)
            (tmp / "sub").mkdir(mode=0o700)
    finally:
        os.umask(old)
        files.umask.cache_clear()
    assert (tmp_path / "o" / "model.safetensors").stat().st_mode & 0o777 == 0o666 & ~mask
    assert (tmp_path / "o" / "sub").stat().st_mode & 0o777 == 0o777 & ~mask
    assert (tmp_path / "o").stat().st_mode & 0o777 == 0o777 & ~mask


def test_umask_is_read_once(monkeypatch):
    from specbound.io import files

    files.umask.cache_clear()
    first = files.umask()
    calls = []
    monkeypatch.setattr(os, "umask", lambda m: calls.append(m) or 0o022)
    assert files.umask() == first and files.file_mode() == 0o666 & ~first
    assert calls == []
    files.umask.cache_clear()
