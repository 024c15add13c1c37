"""specbound.io.codec: the one record format (JSON + npz, checksummed, no pickles)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from specbound.io import codec
from specbound.io.codec import RecordError, read_record, record_paths, write_record
from specbound.io.files import canonical_json

META = {"key": "abc", "n": 3, "nested": {"x": [1.5, None, "s"]}}


def arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "sv_values": rng.standard_normal(50),
        "sv_offsets": np.arange(0, 51, 10, dtype=np.int64),
        "layer": np.array([0, 0, 1, 1, 1], dtype=np.int32),
        "flags": np.array([True, False]),
        "tensor": np.array(["q.weight", "k.weight"]),
        "matrix": rng.standard_normal((3, 4)).astype(np.float32),
        "empty": np.zeros((0, 2)),
    }


def rewrite_json(stem: Path, edit) -> None:
    """Apply ``edit`` to the record's JSON body and re-seal it (a consistent forgery)."""
    jp, _ = record_paths(stem)
    body = json.loads(jp.read_text())
    body.pop("body_sha256")
    edit(body)
    body["body_sha256"] = hashlib.sha256(canonical_json(body)).hexdigest()
    jp.write_bytes(canonical_json(body))


def test_round_trip(tmp_path: Path) -> None:
    stem = tmp_path / "sub" / "rec.v1"  # dots in a stem are kept
    a = arrays()
    write_record(stem, META, a, kind="spectra")
    jp, npz = record_paths(stem)
    assert jp.name == "rec.v1.json" and npz.name == "rec.v1.npz"
    meta, b = read_record(stem, kind="spectra", finite=True)
    assert meta == META and sorted(b) == sorted(a)
    for k in a:
        assert b[k].dtype == a[k].dtype and b[k].shape == a[k].shape
        np.testing.assert_array_equal(b[k], a[k])
    # only the two files, no temp files left over
    assert sorted(p.name for p in jp.parent.iterdir()) == ["rec.v1.json", "rec.v1.npz"]
    # deterministic: the same arrays give the same npz bytes
    first = npz.read_bytes()
    write_record(stem, META, a, kind="spectra")
    assert npz.read_bytes() == first


def test_missing_is_none_and_half_is_invalid(tmp_path: Path) -> None:
    stem = tmp_path / "r"
    assert read_record(stem) is None
    write_record(stem, {}, arrays())
    record_paths(stem)[1].unlink()
    with pytest.raises(RecordError, match="missing"):
        read_record(stem)
    write_record(stem, {}, arrays())
    record_paths(stem)[0].unlink()  # npz alone: no record
    assert read_record(stem) is None


def test_tampered_json_detected(tmp_path: Path) -> None:
    stem = tmp_path / "r"
    write_record(stem, {"num_parameters": 10}, arrays())
    jp, _ = record_paths(stem)
    text = jp.read_text().replace('"num_parameters":10', '"num_parameters":424242')
    assert "424242" in text
    jp.write_text(text)
    with pytest.raises(RecordError, match="metadata checksum"):
        read_record(stem)


def test_tampered_npz_detected(tmp_path: Path) -> None:
    stem = tmp_path / "r"
    write_record(stem, {}, arrays())
    _, npz = record_paths(stem)
    raw = bytearray(npz.read_bytes())
    raw[-200] ^= 0xFF
    npz.write_bytes(bytes(raw))
    with pytest.raises(RecordError, match="npz checksum"):
        read_record(stem)


@pytest.mark.parametrize("which", [0, 1])
def test_truncated_file(tmp_path: Path, which: int) -> None:
    stem = tmp_path / "r"
    write_record(stem, META, arrays())
    p = record_paths(stem)[which]
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    with pytest.raises(RecordError) as e:
        read_record(stem)
    assert str(record_paths(stem)[0]) in str(e.value) and "\n" not in str(e.value)


def test_pickle_bearing_npz_refused(tmp_path: Path) -> None:
    """An npz with an object array, sealed with correct checksums, is still never unpickled."""
    stem = tmp_path / "r"
    write_record(stem, {}, {"x": np.zeros(2)})
    _, npz = record_paths(stem)
    marker = tmp_path / "PWNED"

    class Evil:
        def __reduce__(self):
            return (Path.touch, (marker,))

    np.savez(npz, x=np.array([Evil()], dtype=object))
    digest = hashlib.sha256(npz.read_bytes()).hexdigest()
    rewrite_json(stem, lambda b: b.update(npz_sha256=digest))
    with pytest.raises(RecordError, match="without pickles"):
        read_record(stem)
    # listing the object dtype in the metadata does not help either
    rewrite_json(stem, lambda b: b["arrays"]["x"].update(dtype="|O"))
    with pytest.raises(RecordError):
        read_record(stem)
    assert not marker.exists()
    with pytest.raises(ValueError, match="cannot hold"):
        write_record(stem, {}, {"x": np.array([object()], dtype=object)})


def test_wrong_version_format_and_kind(tmp_path: Path) -> None:
    stem = tmp_path / "r"
    write_record(stem, {}, arrays(), kind="spectra")
    with pytest.raises(RecordError, match="kind"):
        read_record(stem, kind="analysis")
    rewrite_json(stem, lambda b: b.update(version=codec.VERSION + 1))
    with pytest.raises(RecordError, match="version"):
        read_record(stem)
    rewrite_json(stem, lambda b: b.update(version=codec.VERSION, format="other"))
    with pytest.raises(RecordError, match="format"):
        read_record(stem)


def test_listing_must_match_npz(tmp_path: Path) -> None:
    stem = tmp_path / "r"
    write_record(stem, {}, {"x": np.zeros(3)})
    rewrite_json(stem, lambda b: b["arrays"]["x"].update(shape=[4]))
    with pytest.raises(RecordError, match="'x' is not what"):
        read_record(stem)
    rewrite_json(stem, lambda b: b["arrays"].update(y={"dtype": "<f8", "shape": [3]}))
    with pytest.raises(RecordError, match="other arrays"):
        read_record(stem)


def test_non_finite_refused_when_asked(tmp_path: Path) -> None:
    stem = tmp_path / "r"
    for bad in (np.nan, np.inf, -np.inf):
        write_record(stem, {}, {"x": np.array([1.0, bad]), "i": np.arange(2)})
        assert np.isnan(read_record(stem)[1]["x"][1]) or np.isinf(read_record(stem)[1]["x"][1])
        with pytest.raises(RecordError, match="NaN or infinite"):
            read_record(stem, finite=True)


def test_meta_must_be_strict_json(tmp_path: Path) -> None:
    stem = tmp_path / "r"
    with pytest.raises(ValueError, match="Out of range float"):
        write_record(stem, {"x": float("nan")}, {})
    assert not any(tmp_path.iterdir())  # nothing written


def test_not_a_regular_file(tmp_path: Path) -> None:
    stem = tmp_path / "r"
    write_record(stem, {}, {"x": np.zeros(1)})
    jp, npz = record_paths(stem)
    npz.unlink()
    os.symlink(tmp_path / "elsewhere.npz", npz)
    with pytest.raises(RecordError, match="not a regular file"):
        read_record(stem)
    if hasattr(os, "mkfifo"):
        jp.unlink()
        os.mkfifo(jp)
        with pytest.raises(RecordError, match="not a regular file"):
            read_record(stem)  # never opened: would block


def test_or_none_warns_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    stem = tmp_path / "r"
    write_record(stem, {}, {"x": np.zeros(1)})
    record_paths(stem)[1].write_bytes(b"junk")
    with caplog.at_level(logging.WARNING, logger="specbound"):
        assert codec.read_record_or_none(stem, what="cache entry") is None
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert lines[0].startswith("warning: cache entry ") and "recomputing" in lines[0]


def test_npz_members_are_plain(tmp_path: Path) -> None:
    stem = tmp_path / "r"
    write_record(stem, {}, arrays())
    with zipfile.ZipFile(record_paths(stem)[1]) as zf:
        names = zf.namelist()
    assert names == sorted(f"{k}.npy" for k in arrays())
