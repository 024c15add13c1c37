"""The track directory is a growing folder (io.growing, the one manifest schema): track.json and
track.csv checksummed, written under its lock, a file changed since specbound wrote it refused,
an interrupted row taken back on resume, a track written before manifests adopted as it is.
TrackFile alone, without torch."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from specbound.errors import SpecboundError
from specbound.io.outdir import MANIFEST, check_output_dir, read_manifest
from specbound.track.trackfile import (
    TRACK_LOCK,
    TrackFile,
    read_track,
    track_folder,
)

META = {"measures": ["frobenius_sum"], "every": 1}
TAIL = ["frobenius_sum"]
GROKKING = Path(__file__).resolve().parents[2] / "benchmarks" / "grokking" / "track"


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _two_rows(out: Path) -> TrackFile:
    f = TrackFile(out, META)
    f.append({"step": 0, "wall_s": 0.5, "analysis_s": 0.25, "loss": 2.0, "frobenius_sum": 3}, TAIL)
    f.append({"step": 1, "wall_s": 1.5, "analysis_s": 0.5, "loss": 1.0, "frobenius_sum": 4}, TAIL)
    return f


def test_a_new_track_has_the_same_files_and_a_manifest_of_kind_track(tmp_path: Path) -> None:
    _two_rows(tmp_path)
    # the two files as a tracker wrote them before track folders had a manifest, byte for byte
    assert (tmp_path / "track.csv").read_bytes() == (
        b"step,wall_s,analysis_s,loss,frobenius_sum,nonfinite\n"
        b"0,0.5,0.25,2.0,3,0\n1,1.5,0.5,1.0,4,0\n"
    )
    meta = json.loads((tmp_path / "track.json").read_text())
    assert (tmp_path / "track.json").read_text() == json.dumps(meta, indent=1) + "\n"
    assert meta["format"] == "specbound-track/1" and meta["measures"] == ["frobenius_sum"]
    man = read_manifest(tmp_path, kind="track")
    assert man is not None
    assert man["files"] == ["track.json", "track.csv", TRACK_LOCK]
    assert man["dirs"] == ["tensorboard"]
    assert man["sha256"] == {n: _sha(tmp_path / n) for n in ("track.json", "track.csv")}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [MANIFEST, TRACK_LOCK, "track.csv", "track.json"]
    )


def test_a_changed_track_is_refused_and_kept(tmp_path: Path) -> None:
    _two_rows(tmp_path)
    text = (tmp_path / "track.csv").read_text().replace("2.0", "2.5")
    (tmp_path / "track.csv").write_text(text)
    for kw in ({"resume": True}, {"overwrite": True}, {}):
        with pytest.raises(SpecboundError, match="was changed since specbound wrote it"):
            TrackFile(tmp_path, META, **kw)
    assert (tmp_path / "track.csv").read_text() == text


@pytest.mark.filterwarnings("ignore:.*interrupted row")
@pytest.mark.parametrize(
    ("tail", "steps"),
    [("2,2.5,0.5", [0, 1]), ("2,2.5,0.5,0.5,5,0\n", [0, 1, 2])],
    ids=["a cut row is taken back", "a whole row is kept"],
)
def test_resume_takes_back_the_row_a_stopped_run_was_writing(tmp_path, tail, steps) -> None:
    _two_rows(tmp_path)
    with (tmp_path / "track.csv").open("a") as fh:  # written, its checksum not yet recorded
        fh.write(tail)
    with pytest.raises(SpecboundError, match="already holds"):  # no resume: nothing changed
        TrackFile(tmp_path, META)
    assert (tmp_path / "track.csv").read_text().endswith(tail)
    f = TrackFile(tmp_path, META, resume=True)
    assert sorted(f.steps) == steps
    f.append({"step": 7, "wall_s": 9.0, "analysis_s": 0.5, "loss": 0.5, "frobenius_sum": 5}, TAIL)
    assert list(read_track(tmp_path)["step"]) == [*steps, 7]
    assert track_folder(tmp_path).changed() == []


def test_a_track_written_before_manifests_reads_the_same_and_is_adopted(tmp_path: Path) -> None:
    d = tmp_path / "track"
    shutil.copytree(GROKKING, d)
    before = {n: (d / n).read_bytes() for n in ("track.csv", "track.json")}
    a, b = read_track(GROKKING), read_track(d)
    assert a.equals(b)
    with pytest.raises(SpecboundError, match="already holds"):
        TrackFile(d, META)
    assert not (d / MANIFEST).exists()
    f = TrackFile(d, META, resume=True)  # adopted: recorded as it is
    assert {n: (d / n).read_bytes() for n in before} == before
    man = read_manifest(d, kind="track")
    assert man is not None and man["sha256"]["track.csv"] == _sha(d / "track.csv")
    last = int(max(f.steps))
    f.append({**f.rows[-1], "step": last + 1}, [c for c in f.columns[3:-1]])
    assert (d / "track.csv").read_bytes().startswith(before["track.csv"])
    assert list(read_track(d)["step"])[-1] == last + 1


def test_a_second_tracker_that_wrote_in_between_is_refused(tmp_path: Path) -> None:
    first = _two_rows(tmp_path)
    second = TrackFile(tmp_path, META, resume=True)
    second.append({"step": 2, "wall_s": 2.0, "analysis_s": 0.5, "frobenius_sum": 5}, TAIL)
    with pytest.raises(SpecboundError, match="written by another specbound Tracker"):
        first.append({"step": 3, "wall_s": 3.0, "analysis_s": 0.5, "frobenius_sum": 5}, TAIL)
    assert list(read_track(tmp_path)["step"]) == [0, 1, 2]


def test_a_busy_track_folder_is_one_line(tmp_path: Path, monkeypatch) -> None:
    import specbound.track.trackfile as trackfile

    f = _two_rows(tmp_path)
    monkeypatch.setattr(trackfile, "LOCK_WAIT", 0.0)
    with (
        track_folder(tmp_path).locked(lambda: SpecboundError("held")),
        pytest.raises(SpecboundError, match="another specbound Tracker is writing to") as e,
    ):
        f.append({"step": 2, "wall_s": 2.0, "analysis_s": 0.5, "frobenius_sum": 5}, TAIL)
    assert "choose another out directory" in str(e.value)
    assert list(read_track(tmp_path)["step"]) == [0, 1]


def test_a_results_folder_is_no_track_and_a_track_no_results_folder(tmp_path: Path) -> None:
    from specbound.io.outdir import output_dir

    with output_dir(tmp_path / "results") as tmp:
        (tmp / "models.csv").write_text("x\n")
    with pytest.raises(SpecboundError, match="holds a specbound results folder"):
        TrackFile(tmp_path / "results", META)
    _two_rows(tmp_path / "t")
    with pytest.raises(
        SpecboundError, match=r"is a track folder \(written by a specbound Tracker\)"
    ):
        check_output_dir(tmp_path / "t")
