"""io.growing: a folder written in place over runs (the zoo's), on io.outdir's one manifest."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from specbound.errors import SpecboundError
from specbound.io.growing import GrowingDir, file_sha256
from specbound.io.outdir import MANIFEST, read_manifest


def _folder(root: Path) -> GrowingDir:
    return GrowingDir(root, kind="k", files=("a.json", "b.csv"), dirs=("items",), lock=".l.lock")


def _busy() -> SpecboundError:
    return SpecboundError("busy")


def test_lock_creates_the_folder_and_its_manifest(tmp_path: Path) -> None:
    g = _folder(tmp_path / "f")
    assert g.manifest() is None
    with g.locked(_busy):
        g.write("a.json", '{"x": 1}\n')
    doc = json.loads((tmp_path / "f" / MANIFEST).read_text())
    assert doc["kind"] == "k" and doc["files"] == ["a.json", "b.csv", ".l.lock"]
    assert doc["dirs"] == ["items"] and doc["written_by"].startswith("specbound ")
    assert doc["sha256"] == {"a.json": hashlib.sha256(b'{"x": 1}\n').hexdigest()}
    assert read_manifest(tmp_path / "f", kind="k") == doc
    assert read_manifest(tmp_path / "f", kind="other") is None
    assert g.changed() == []


def test_a_file_changed_by_someone_else_is_reported(tmp_path: Path) -> None:
    g = _folder(tmp_path)
    with g.locked(_busy):
        g.write("a.json", "1\n")
        g.write("b.csv", "x\n")
    (tmp_path / "b.csv").write_text("y\n")
    assert g.changed() == ["b.csv"]
    assert file_sha256(tmp_path / "b.csv") == hashlib.sha256(b"y\n").hexdigest()
    assert file_sha256(tmp_path / "absent") is None


def test_a_second_writer_gets_busy(tmp_path: Path) -> None:
    g = _folder(tmp_path)
    with (
        g.locked(_busy),
        pytest.raises(SpecboundError, match="busy"),
        _folder(tmp_path).locked(_busy),
    ):
        pass
    with g.locked(_busy):  # released
        pass


def test_the_lock_file_is_never_truncated(tmp_path: Path) -> None:
    (tmp_path / ".l.lock").write_text("a user's text")
    with _folder(tmp_path).locked(_busy):
        pass
    assert (tmp_path / ".l.lock").read_text() == "a user's text"


def test_a_lock_that_is_a_directory_is_one_error(tmp_path: Path) -> None:
    (tmp_path / ".l.lock").mkdir()
    with pytest.raises(SpecboundError, match="is a directory"), _folder(tmp_path).locked(_busy):
        pass


# --- a file appended row by row (a tracker's track.csv) ----------------------------------------


def test_append_records_the_file_after_it_grew(tmp_path: Path) -> None:
    g = _folder(tmp_path)
    with g.locked(_busy):
        g.replace("b.csv", b"h\n")
        g.append("b.csv", b"1\n")
        g.append("b.csv", b"2\n")
    assert (tmp_path / "b.csv").read_bytes() == b"h\n1\n2\n"
    assert g.recorded("b.csv") == hashlib.sha256(b"h\n1\n2\n").hexdigest()
    assert g.changed() == []


def test_a_failed_append_is_cut_back_and_a_failed_replace_keeps_the_checksum(
    tmp_path: Path, monkeypatch
) -> None:
    import errno
    import os

    import specbound.io.growing as growing

    g = _folder(tmp_path)
    with g.locked(_busy):
        g.replace("b.csv", b"h\n1\n")

    def half_then_full(fd, data):
        os.write(fd, bytes(data[:1]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(growing, "_write", half_then_full)
    with g.locked(_busy), pytest.raises(OSError, match="No space"):
        g.append("b.csv", b"22\n")
    assert (tmp_path / "b.csv").read_bytes() == b"h\n1\n" and g.changed() == []

    def full(path, mode="wb", sync=False):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(growing, "atomic_file", full)
    with g.locked(_busy), pytest.raises(OSError, match="No space"):
        g.replace("b.csv", b"other\n")
    assert (tmp_path / "b.csv").read_bytes() == b"h\n1\n" and g.changed() == []


@pytest.mark.parametrize(
    ("extra", "after"),
    [(b"2", b"h\n1\n"), (b"2\n", b"h\n1\n2\n")],
    ids=["cut line: cut off", "whole line: recorded"],
)
def test_recover_takes_back_one_unrecorded_line(tmp_path: Path, extra: bytes, after) -> None:
    g = _folder(tmp_path)
    with g.locked(_busy):
        g.replace("b.csv", b"h\n1\n")
    with (tmp_path / "b.csv").open("ab") as fh:  # appended, the record missed
        fh.write(extra)
    assert g.changed() == ["b.csv"] and g.changed(appended=("b.csv",)) == []
    with g.locked(_busy):
        assert g.recover("b.csv") is True
        assert g.recover("b.csv") is False  # nothing left to take back
    assert (tmp_path / "b.csv").read_bytes() == after and g.changed() == []


def test_two_unrecorded_lines_or_an_edit_are_changes(tmp_path: Path) -> None:
    g = _folder(tmp_path)
    with g.locked(_busy):
        g.replace("b.csv", b"h\n1\n")
    (tmp_path / "b.csv").write_bytes(b"h\n1\n2\n3\n")
    assert g.changed(appended=("b.csv",)) == ["b.csv"]
    (tmp_path / "b.csv").write_bytes(b"h\n9\n")
    assert g.changed(appended=("b.csv",)) == ["b.csv"]
    with g.locked(_busy):
        assert g.recover("b.csv") is False
    assert (tmp_path / "b.csv").read_bytes() == b"h\n9\n"


def test_record_adopts_files_written_before_the_manifest(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("{}\n")
    g = _folder(tmp_path)
    with g.locked(_busy):
        g.record("a.json", "b.csv")  # b.csv absent: not recorded
    assert g.recorded("a.json") == hashlib.sha256(b"{}\n").hexdigest()
    assert g.recorded("b.csv") is None and g.changed() == []


def test_a_lock_held_past_the_wait_is_busy(tmp_path: Path) -> None:
    g = _folder(tmp_path)
    with (
        g.locked(_busy),
        pytest.raises(SpecboundError, match="busy"),
        _folder(tmp_path).locked(_busy, wait=0.05),
    ):
        pass
