"""specbound.io.files: strict JSON out (no NaN/Infinity tokens), atomic single-file writes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from specbound.io.files import atomic_file, canonical_json, dumps_json, json_safe, write_json


def _strict_loads(text: str):
    def refuse(token: str):
        raise AssertionError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_written_as_null() -> None:
    obj = {
        "a": math.inf,
        "b": -math.inf,
        "c": math.nan,
        "d": np.float64("inf"),
        "e": np.float32("nan"),
        "f": [1.5, np.inf, (2, np.nan)],
        "g": np.array([1.0, np.nan, 3.0]),
        "h": {"log10": 400.0, "value": math.inf},  # beyond float64: the log10 is kept
    }
    text = dumps_json(obj, indent=2)
    assert "NaN" not in text and "Infinity" not in text
    back = _strict_loads(text)
    assert back == {
        "a": None,
        "b": None,
        "c": None,
        "d": None,
        "e": None,
        "f": [1.5, None, [2, None]],
        "g": [1.0, None, 3.0],
        "h": {"log10": 400.0, "value": None},
    }


def test_numpy_scalars_and_paths() -> None:
    obj = {
        "i": np.int64(3),
        "u": np.uint8(7),
        "b": np.bool_(True),
        "f": np.float32(0.5),
        "p": Path("/x/y"),
        "big": 10**30,
    }
    back = _strict_loads(dumps_json(obj))
    assert back == {"i": 3, "u": 7, "b": True, "f": 0.5, "p": "/x/y", "big": 10**30}
    assert type(json_safe(np.int64(3))) is int and type(json_safe(np.bool_(False))) is bool
    with pytest.raises(TypeError):
        dumps_json({"x": object()})


def test_canonical_json_refuses_rather_than_nulls() -> None:
    assert canonical_json({"b": 1, "a": [1.5]}) == b'{"a":[1.5],"b":1}'
    with pytest.raises(ValueError, match="Out of range float"):
        canonical_json({"x": math.nan})


def test_write_json_atomic(tmp_path: Path) -> None:
    p = tmp_path / "d" / "x.json"
    write_json(p, {"v": math.inf, "ok": 1})
    assert _strict_loads(p.read_text()) == {"v": None, "ok": 1}
    before = p.read_text()
    with pytest.raises(TypeError):
        write_json(p, {"v": object()})  # fails before the file is touched
    assert p.read_text() == before

    def interrupted() -> None:
        with atomic_file(p, "w") as fh:
            fh.write("half")
            raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        interrupted()
    assert p.read_text() == before
    assert sorted(q.name for q in p.parent.iterdir()) == ["x.json"]


def test_atomic_file_refuses_fifo_device_and_dir_without_opening(tmp_path: Path) -> None:
    """Opening a FIFO for writing blocks until a reader comes; replacing /dev/null would
    replace the device: both are refused before anything is opened or created."""
    import os

    from specbound.errors import SpecboundError

    fifo = tmp_path / "f.csv"
    os.mkfifo(fifo)
    for target, kind in ((fifo, "FIFO"), (Path("/dev/null"), "device"), (tmp_path, "directory")):
        with pytest.raises(SpecboundError, match=kind), atomic_file(target, "w") as fh:
            fh.write("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.csv"]


def test_write_report_page_is_the_atomic_page_writer(tmp_path: Path) -> None:
    """A page's text goes to FOLDER/report.html through atomic_file: UTF-8 exactly as given,
    an earlier page replaced whole, no temp left; a report.html that is a folder is refused
    and left alone."""
    from specbound.errors import SpecboundError
    from specbound.io.files import REPORT_PAGE, write_report_page

    html = "<!doctype html><p>τ ≥ 0 — x&lt;script&gt;</p>\n"
    path = write_report_page(tmp_path, html)
    assert path == tmp_path / REPORT_PAGE == tmp_path / "report.html"
    assert path.read_bytes() == html.encode("utf-8")
    write_report_page(tmp_path, "second")
    assert path.read_text(encoding="utf-8") == "second"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    other = tmp_path / "sub"
    (other / "report.html").mkdir(parents=True)
    with pytest.raises(SpecboundError, match="directory"):
        write_report_page(other, html)
    assert [p.name for p in (other / "report.html").iterdir()] == []


def test_copy_file_copies_bytes_atomically(tmp_path: Path) -> None:
    from specbound.io.files import copy_file

    src = tmp_path / "claims.csv"
    src.write_bytes(b"claim,text\r\nC1,\xc3\xa9\r\n")  # bytes kept: CRLF, UTF-8
    copy_file(src, tmp_path / "out" / "claims.csv")
    assert (tmp_path / "out" / "claims.csv").read_bytes() == src.read_bytes()
    with pytest.raises(FileNotFoundError):
        copy_file(tmp_path / "absent.csv", tmp_path / "out" / "x.csv")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["claims.csv"]


def test_atomic_file_temp_is_owner_marked_and_mode_follows_umask(tmp_path: Path) -> None:
    import hashlib
    import os
    import socket

    from specbound.io import files

    seen = []
    old = os.umask(0o027)
    files.umask.cache_clear()
    try:
        with files.atomic_file(tmp_path / "x.txt", "w") as fh:
            seen = [p.name for p in tmp_path.iterdir()]
            fh.write("x")
    finally:
        os.umask(old)
        files.umask.cache_clear()
    (name,) = seen
    m = files.TEMP_RE.match(name)
    assert m is not None and int(m["pid"]) == os.getpid()
    assert m["host"] == hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
    assert (tmp_path / "x.txt").stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["x.txt"]


def test_a_name_longer_than_the_file_system_allows_is_refused_before_the_write(tmp_path):
    """A 300-byte file name: one SpecboundError naming the limit (bad input, CLI exit 2), not
    an OSError from the final rename after all the work (``layers --out`` exited 1)."""
    from specbound.errors import SpecboundError
    from specbound.io.files import check_name_length, check_output_file

    long = tmp_path / "deeper" / ("n" * 300 + ".csv")
    with pytest.raises(SpecboundError, match="a name of 304 bytes, longer than the 255"):
        check_output_file(long)
    with pytest.raises(SpecboundError, match="longer than"), atomic_file(long, "w") as fh:
        fh.write("x")
    assert not (tmp_path / "deeper").exists()
    check_name_length(tmp_path / ("n" * 255))  # at the limit: fine
    with pytest.raises(SpecboundError, match="256 bytes"):
        check_name_length(tmp_path / ("é" * 128))  # bytes, not characters


def test_layers_out_with_a_name_too_long_is_one_line_exit_2(tmp_path):
    from tests.support.checkpoints import write_tiny_bert
    from tests.support.cli_runner import run_cli

    model = write_tiny_bert(tmp_path / "m")
    r = run_cli("layers", model, "--for", "alphapruning", "--out", tmp_path / ("n" * 300 + ".csv"),
                "--quiet")  # fmt: skip
    assert r.code == 2
    assert "longer than the 255 the file system allows" in r.one_error_line()
