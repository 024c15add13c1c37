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
