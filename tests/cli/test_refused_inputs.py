"""Issue 35 items 4, 8 and 10: contradictory or impossible inputs refused before anything is
written, with one line."""

from __future__ import annotations

import pytest

from tests.support.cli_runner import run_cli


def _grid(tmp_path, text):
    g = tmp_path / "grid.yaml"
    g.write_text(text)
    return g


def test_duplicate_grid_keys_are_refused_with_key_and_lines(tmp_path):
    pytest.importorskip("torch")  # without the zoo extra, that is the first (and only) error
    g = _grid(
        tmp_path,
        "axes:\n  depth: [1]\n  width: [32]\n  depth: [2]\nmax_steps: 5\n",
    )
    r = run_cli("zoo", "train", "digits", "--grid", g, "--out", tmp_path / "z")
    line = r.one_error_line()
    assert r.code != 0 and "'depth' appears twice (lines 2 and 4)" in line
    assert not (tmp_path / "z").exists()


def test_seed_beyond_32_bits_is_refused_before_anything_is_written(tmp_path):
    pytest.importorskip("torch")  # without it, the missing zoo extra is the first error
    for seeds in ("[1e20]", "[4294967296]"):
        g = _grid(tmp_path, f"axes:\n  depth: [1]\n  width: [32]\n  seed: {seeds}\nmax_steps: 5\n")
        r = run_cli("zoo", "train", "digits", "--grid", g, "--out", tmp_path / "z")
        assert r.code != 0 and "seed" in r.one_error_line()
        assert not (tmp_path / "z").exists()
    g = _grid(tmp_path, "axes:\n  depth: [1000]\n  width: [32]\nmax_steps: 5\n")
    r = run_cli("zoo", "train", "digits", "--grid", g, "--out", tmp_path / "z")
    assert "depth" in r.one_error_line() and not (tmp_path / "z").exists()


def test_data_workers_without_data_measures_is_refused(tmp_path):
    (tmp_path / "zoo").mkdir()
    r = run_cli("correlate", tmp_path / "zoo", "--data-workers", "2", "--out", tmp_path / "o")
    assert r.code != 0 and "--data-workers goes with --data-measures" in r.one_error_line()
    assert not (tmp_path / "o").exists()


def test_a_manifest_row_without_an_axis_value_is_refused(tmp_path):
    pytest.importorskip("matplotlib")
    m = tmp_path / "zoo.csv"
    rows = ["model,lr,depth,train_acc,test_acc"]
    rows += [f"m{i},{'' if i == 2 else 0.01 * (1 + i % 2)},{1 + i % 3},1.0,0.{i}" for i in range(9)]
    m.write_text("\n".join(rows) + "\n")
    r = run_cli("correlate", "--manifest", m, "--out", tmp_path / "o")
    line = r.one_error_line()
    assert r.code != 0 and "row 4" in line and "'lr'" in line
    assert not (tmp_path / "o").exists()


def _strict(text):
    import json

    def refuse(c):
        raise ValueError(f"non-strict JSON constant {c}")

    return json.loads(text, parse_constant=refuse)


def test_every_json_file_of_a_diverged_zoo_is_strict(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("sklearn")
    # lr 1e6 makes the loss non-finite: metrics.json must hold null, never a bare NaN
    g = _grid(
        tmp_path,
        "axes:\n  depth: [1]\n  width: [32]\n  lr: [1000000.0]\n  weight_decay: [0.0]\n"
        "  train_size: [50]\n  seed: [0]\nmax_steps: 3\n",
    )
    out = tmp_path / "z"
    r = run_cli("zoo", "train", "digits", "--grid", g, "--out", out, "-q")
    assert r.code in (0, 1, 2, 3), r.err
    files = sorted(out.rglob("*.json"))
    assert any(f.name == "metrics.json" for f in files)
    for f in files:
        _strict(f.read_text())


def test_correlate_out_into_a_zoo_folder_is_refused(tmp_path):
    pytest.importorskip("matplotlib")
    import json

    zoo = tmp_path / "zoo"
    (zoo / "models").mkdir(parents=True)
    (zoo / "zoo.json").write_text("{}")
    (zoo / "zoo.csv").write_text("model\n")
    manifest = {
        "written_by": "specbound",
        "kind": "zoo",
        "files": ["zoo.json", "zoo.csv"],
        "dirs": ["models"],
        "sha256": {},
    }
    (zoo / ".specbound-manifest.json").write_text(json.dumps(manifest))
    before = sorted(p.name for p in zoo.rglob("*"))
    res = tmp_path / "res"
    res.mkdir()
    r = run_cli("correlate", res, "--out", zoo)
    assert r.code != 0 and "zoo folder" in r.one_error_line()
    assert sorted(p.name for p in zoo.rglob("*")) == before


def test_a_users_dot_tmp_folder_in_models_survives_a_zoo_train(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("sklearn")
    g = _grid(
        tmp_path,
        "axes:\n  depth: [1]\n  width: [32]\n  lr: [0.003]\n  weight_decay: [0.0]\n"
        "  train_size: [50]\n  seed: [0]\nmax_steps: 2\n",
    )
    out = tmp_path / "z"
    assert run_cli("zoo", "train", "digits", "--grid", g, "--out", out, "-q").code == 0
    mine = out / "models" / ".mynotes.tmp"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    stale = out / "models" / ".depth-1.abc123.tmp"  # a killed run's, holding the marker
    stale.mkdir()
    (stale / ".specbound-model-tmp").write_text("1")
    run_cli("zoo", "train", "digits", "--grid", g, "--out", out, "-q")
    assert (mine / "notes.txt").read_text() == "keep me"
    assert not stale.exists()


def test_written_files_follow_the_umask(tmp_path):
    """Issue 35 item 15: files written through the atomic helpers get 0o666 & ~umask (0644
    under umask 022), not mkstemp's 0600."""
    import os
    import stat

    import numpy as np

    from specbound.io.codec import write_record
    from specbound.io.files import atomic_write_text

    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "a.json", "{}")
        write_record(tmp_path / "rec", {"k": 1}, {"x": np.zeros(2)}, kind="test")
    finally:
        os.umask(old)
    for f in tmp_path.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o644, f


def test_a_too_long_out_name_is_one_line(tmp_path):
    pytest.importorskip("matplotlib")
    (tmp_path / "zoo").mkdir()  # beside the --out: an --out inside an input is refused first
    r = run_cli("correlate", tmp_path / "zoo", "--out", tmp_path / ("x" * 300))
    line = r.one_error_line()
    assert r.code != 0 and "name too long" in line


def test_a_full_disk_is_one_line_naming_the_path(tmp_path, monkeypatch):
    import errno

    import specbound.cli.cache as cache_cli

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "c"))

    monkeypatch.setattr("specbound.io.cache.clear_records", full)
    r = run_cli("cache", "clear")
    line = r.one_error_line()
    assert r.code == 1 and "no space left on device" in line and str(tmp_path / "c") in line
    assert cache_cli is not None


def test_report_options_without_report_are_refused(tmp_path):
    """--figure-formats and --esd only shape report.html: without --report they were silently
    ignored. Refused at once (before the model is read), naming the flag."""
    for args in (("--figure-formats", "png"), ("--esd", "all"), ("--figure-formats", "svg")):
        r = run_cli("analyze", tmp_path / "missing", *args, "--out", tmp_path / "o")
        line = r.one_error_line()
        assert r.code == 2 and f"error: {args[0]} sets report.html's figures: add --report" in line
        assert not (tmp_path / "o").exists()
    r = run_cli("analyze", tmp_path / "missing", "--esd", "bogus")
    assert r.code == 2 and "'bogus' is not one of 'all', 'worst', 'none'" in r.one_error_line()


def test_control_characters_of_a_path_are_escaped_in_the_error_line(tmp_path):
    """A model path holding ANSI escapes (\\x1b[2J clears the screen) reached the terminal raw."""
    r = run_cli("analyze", str(tmp_path / "m\x1b[2J\x1b[31mred\x07\x9b"))
    line = r.one_error_line()
    assert "m\\x1b[2J\\x1b[31mred\\x07\\x9b" in line
    assert not any(c in line for c in "\x1b\x07\x9b")
