"""Resume records of a model sweep (io.records, analysis.records) on the one growing-folder
mechanism (io.growing.GrowingDir): listed in io.outdir's one manifest schema before they are
written, read back on a re-run, cleared to exactly what specbound wrote; the older layout's
folders (their list in .specbound-records.json) are read and cleared too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specbound.analysis.sweep import analyze_models
from specbound.engines import get_engine
from specbound.errors import SpecboundError
from specbound.io.records import (
    FOLDER_KIND,
    MANIFEST,
    OLD_MANIFEST,
    RecordStore,
    clear_records,
    state_dir_for,
)
from tests.support.checkpoints import write_tiny_bert

KEY = "ab" * 16


def test_a_sweep_resumes_from_its_records_and_clears_them(tmp_path: Path) -> None:
    models = [write_tiny_bert(tmp_path / f"m{i}", seed=i) for i in range(2)]
    state = state_dir_for(tmp_path / "out")
    kw = {"cache": False}
    first = analyze_models(
        get_engine("local"), models, analyze_kwargs=kw, records=RecordStore(state)
    )
    manifest = json.loads((state / MANIFEST).read_text())
    assert manifest["kind"] == FOLDER_KIND and manifest["sha256"] == {}
    keys = RecordStore(state).written()
    assert len(keys) == 2
    names = sorted(f"{k}.{x}" for k in keys for x in ("json", "npz"))
    assert sorted(manifest["files"][1:]) == names  # after the lock file's name

    resumed: list[str] = []
    again = analyze_models(
        get_engine("local"),
        models,
        analyze_kwargs=kw,
        records=RecordStore(state),
        on_resume=resumed.append,
    )
    assert resumed == [str(m) for m in models]
    for a, b in zip(first.analyses, again.analyses, strict=True):
        assert a.summary() == b.summary()
    (state / "notes.txt").write_text("mine")
    clear_records(state)
    assert sorted(p.name for p in state.iterdir()) == ["notes.txt"]


def _old_layout(state: Path) -> None:
    state.mkdir(parents=True)
    for suffix in ("json", "npz"):
        (state / f"{KEY}.{suffix}").write_text("{}")
    (state / OLD_MANIFEST).write_text(json.dumps({"format": "x", "records": [KEY]}))


def test_a_folder_of_the_older_layout_is_read_and_cleared(tmp_path: Path) -> None:
    state = tmp_path / ".out.specbound-sweep"
    _old_layout(state)
    (state / "notes.txt").write_text("mine")
    store = RecordStore(state)
    assert store.written() == [KEY]
    store._remember("cd" * 16)  # a new record beside the old ones: both listed
    assert store.written() == ["cd" * 16, KEY]
    clear_records(state)
    assert sorted(p.name for p in state.iterdir()) == ["notes.txt"]
    (state / "notes.txt").unlink()
    _old_layout(state.parent / "again")
    clear_records(state.parent / "again")
    assert not (state.parent / "again").exists()


def test_only_well_formed_record_names_are_deleted(tmp_path: Path) -> None:
    """The folder is writable by others: a manifest of our kind that lists a user's file does
    not make clear() delete it."""
    state = tmp_path / "state"
    store = RecordStore(state)
    store._remember(KEY)
    doc = json.loads((state / MANIFEST).read_text())
    doc["files"].append("notes.txt")
    (state / MANIFEST).write_text(json.dumps(doc))
    (state / "notes.txt").write_text("mine")
    assert store.written() == [KEY]
    clear_records(state)
    assert sorted(p.name for p in state.iterdir()) == ["notes.txt"]


def test_a_manifest_of_another_kind_is_refused_and_kept(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    other = json.dumps({"written_by": "specbound", "kind": "zoo", "files": [], "sha256": {}})
    (state / MANIFEST).write_text(other)
    with pytest.raises(SpecboundError, match="was not written by specbound for a sweep-records"):
        RecordStore(state)._remember(KEY)
    assert (state / MANIFEST).read_text() == other
    clear_records(state)
    assert (state / MANIFEST).read_text() == other


def test_a_record_that_does_not_fit_its_checkpoint_is_recomputed(tmp_path: Path) -> None:
    """A record that verifies as a file but whose spectra do not fit the checkpoint is treated
    as absent (analysis.records.load), with one warning naming it."""
    import numpy as np

    from specbound.analysis.records import load
    from specbound.analysis.sweep import ModelJob

    model = write_tiny_bert(tmp_path / "m", seed=0)
    warned: list[str] = []
    store = RecordStore(tmp_path / "state", warn=warned.append)
    store.store(KEY, {"model": "m"}, {"x": np.zeros(2)})
    job = ModelJob(str(model), None, {"cache": False}, "m", 0)
    assert load(store, KEY, job) is None
    assert len(warned) == 1 and "is invalid" in warned[0] and "recomputing m" in warned[0]
    assert load(store, "cd" * 16, job) is None and len(warned) == 1  # absent: no warning
