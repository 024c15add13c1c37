"""`zoo train` under hostile input (issue 19): names, changed plans, files it did not write,
broken model folders, failed writes, --threads. Tiny grids (width 8, a few steps)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specbound.errors import SpecboundError  # noqa: E402
from specbound.studies.zoo import model_name, train_zoo  # noqa: E402
from tests.support.cli_runner import run_cli_process  # noqa: E402

GRID = {
    "axes": {
        "depth": [1],
        "width": [8],
        "lr": [1e-2],
        "weight_decay": [0.0],
        "train_fraction": [0.3],
        "seed": [0, 1],
    },
    "max_steps": 2,
}


def grid(**axes):
    return {**GRID, "axes": {**GRID["axes"], **axes}}


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_values_that_print_alike_get_distinct_names(tmp_path):
    """0.001 and 0.0010000001 both print as 0.001 with %g: two models, two rows, two lrs."""
    df = train_zoo(
        "modular-addition",
        tmp_path / "z",
        preset="tiny",
        grid=grid(lr=[0.001, 0.0010000001], seed=[0]),
    )
    assert len(df) == 2 and df["model"].is_unique
    assert sorted(df["lr"]) == [0.001, 0.0010000001]
    for r in df.itertuples():
        m = json.loads((tmp_path / "z" / r.model / "metrics.json").read_text())
        assert m["hyperparameters"]["lr"] == r.lr
    # names read back as their values; the preset names keep their short %g form
    for v in (0.001, 0.0010000001, 1e-5, 0.3, 3.0, 123456789.0, 1 / 3):
        text = model_name({"lr": v}).removeprefix("lr-")
        assert float(text) == v
    assert model_name({"lr": 0.003, "weight_decay": 0.0}) == "lr-0.003_weight_decay-0"


def test_changed_plan_is_refused_and_zoo_json_kept(tmp_path):
    out = tmp_path / "z"
    train_zoo("modular-addition", out, preset="tiny", grid=GRID)
    before = tree(out)
    for kw, needle in (
        ({"grid": {**GRID, "max_steps": 3}}, "max_steps"),
        ({"grid": {**GRID, "target_loss": 0.5}}, "target_loss"),
        ({"grid": grid(seed=[0, 1, 2])}, "grid"),
        ({"grid": GRID, "preset": "standard"}, "preset"),
    ):
        with pytest.raises(SpecboundError, match=needle) as exc:
            train_zoo("modular-addition", out, **{"preset": "tiny", **kw})
        assert "\n" not in str(exc.value)
        assert tree(out) == before  # zoo.json, zoo.csv and every model untouched
    # the same plan again: resumes, nothing retrained
    train_zoo("modular-addition", out, preset="tiny", grid=GRID)
    assert tree(out) == before


def test_a_users_lock_file_is_never_truncated(tmp_path):
    user = tmp_path / "mine"
    user.mkdir()
    (user / ".lock").write_text("my lock, keep")
    with pytest.raises(SpecboundError, match="not a zoo written by specbound"):
        train_zoo("modular-addition", user, preset="tiny", grid=GRID)
    assert (user / ".lock").read_text() == "my lock, keep" and len(list(user.iterdir())) == 1
    # inside a zoo of ours, a `.lock` someone added is left alone too
    out = tmp_path / "z"
    train_zoo("modular-addition", out, preset="tiny", grid=GRID)
    (out / ".lock").write_text("theirs")
    train_zoo("modular-addition", out, preset="tiny", grid=GRID)
    assert (out / ".lock").read_text() == "theirs"


def test_a_users_zoo_json_and_csv_are_never_overwritten(tmp_path):
    user = tmp_path / "mine"
    user.mkdir()
    (user / "zoo.json").write_text(json.dumps({"task": "modular-addition"}))
    (user / "zoo.csv").write_text("my,own\n1,2\n")
    before = tree(user)
    r = run_cli_process(
        "zoo", "train", "modular-addition", "--preset", "tiny", "--out", str(user), "-q"
    )
    assert r.code == 2 and r.err.count("\n") == 1 and r.err.startswith("error:")
    assert tree(user) == before
    # a zoo of ours whose zoo.csv someone replaced: refused, their file kept
    out = tmp_path / "z"
    train_zoo("modular-addition", out, preset="tiny", grid=GRID)
    (out / "zoo.csv").write_text("edited by hand\n")
    with pytest.raises(SpecboundError, match="changed since specbound wrote it"):
        train_zoo("modular-addition", out, preset="tiny", grid=GRID)
    assert (out / "zoo.csv").read_text() == "edited by hand\n"


@pytest.mark.parametrize(
    ("damage", "needle"),
    [
        (lambda d: (d / "metrics.json").write_text('{"task": "modular-add'), "not valid JSON"),
        (lambda d: (d / "metrics.json").write_text("[]"), "not a JSON object"),
        (lambda d: (d / "metrics.json").write_text('{"task": "modular-addition"}'), "lacks"),
        (lambda d: (d / "model.safetensors").unlink(), "no model.safetensors"),
        (lambda d: (d / "init" / "model.safetensors").unlink(), "no init/model.safetensors"),
        (lambda d: (d / "metrics.json").unlink(), "no metrics.json"),
    ],
)
def test_broken_model_folder_is_one_error_line(tmp_path, damage, needle):
    out = tmp_path / "z"
    df = train_zoo("modular-addition", out, preset="tiny", grid=GRID)
    d = out / df["model"].iloc[0]
    damage(d)
    with pytest.raises(SpecboundError, match=needle) as exc:
        train_zoo("modular-addition", out, preset="tiny", grid=GRID)
    assert str(d) in str(exc.value) and "\n" not in str(exc.value)


def test_broken_model_folder_through_the_cli(tmp_path):
    out = tmp_path / "z"
    df = train_zoo("modular-addition", out, preset="tiny", grid=GRID)
    g = tmp_path / "g.yaml"
    g.write_text(json.dumps(GRID))
    (out / df["model"].iloc[1] / "metrics.json").write_text("{")
    r = run_cli_process(
        "zoo", "train", "modular-addition", "--preset", "tiny", "--grid", str(g), "--out", str(out)
    )
    assert r.code == 2, r.err
    assert r.err.startswith("error:") and r.err.count("\n") == 1, r.err
    assert "not a finished model" in r.err


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_full_or_read_only_out_is_one_error_line(tmp_path, monkeypatch, code):
    import specbound.studies.zoo.single as tr

    def fail(model, where):
        raise OSError(code, os.strerror(code), str(where))

    monkeypatch.setattr(tr, "_save", fail)
    out = tmp_path / "z"
    with pytest.raises(SpecboundError, match="cannot write the zoo") as exc:
        train_zoo("modular-addition", out, preset="tiny", grid=GRID)
    assert "\n" not in str(exc.value)
    if code == errno.ENOSPC:
        assert "No space left on device" in str(exc.value)
    assert not list((out / "models").iterdir())  # no temp dir left behind


def test_out_below_a_file_is_one_error_line(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(SpecboundError):
        train_zoo("modular-addition", tmp_path / "f" / "z", preset="tiny", grid=GRID)
    with pytest.raises(SpecboundError, match="not a directory"):
        train_zoo("modular-addition", tmp_path / "f", preset="tiny", grid=GRID)
    assert (tmp_path / "f").read_text() == "x"


@pytest.mark.parametrize("threads", [0, -1, 100000, True, 1.5, "2"])
def test_threads_validated_before_any_work(tmp_path, threads):
    with pytest.raises(SpecboundError, match=r"^threads must be"):  # the parameter, not the flag
        train_zoo("modular-addition", tmp_path / "z", preset="tiny", grid=GRID, threads=threads)
    assert not (tmp_path / "z").exists()


def test_threads_through_the_cli(tmp_path):
    r = run_cli_process(
        "zoo",
        "train",
        "modular-addition",
        "--preset",
        "tiny",
        "--threads",
        "100000",
        "--out",
        str(tmp_path / "z"),
    )
    assert r.code == 2 and r.err.startswith("error: --threads must be an integer <= ")
    assert r.err.rstrip().endswith("got 100000")
    assert r.err.count("\n") == 1 and not (tmp_path / "z").exists()


def test_ensemble_option_validated(tmp_path):
    for bad in (0, -2, "many", 1.5, True):
        with pytest.raises(SpecboundError, match=r"^ensemble must be"):
            train_zoo("modular-addition", tmp_path / "z", preset="tiny", grid=GRID, ensemble=bad)
    assert not (tmp_path / "z").exists()


def test_zoo_csv_lists_only_the_plan(tmp_path):
    out = tmp_path / "z"
    df = train_zoo("modular-addition", out, preset="tiny", grid=GRID)
    assert list(pd.read_csv(out / "zoo.csv")["model"]) == list(df["model"])
    man = json.loads((out / ".specbound-manifest.json").read_text())
    assert man["kind"] == "zoo" and set(man["sha256"]) == {"zoo.json", "zoo.csv", "pstar.csv"}


def test_a_full_disk_under_safetensors_keeps_its_cause_and_path(tmp_path):
    """Issue 44: safetensors reports a full disk as its own error type; the zoo's message
    names the cause and the path (on main it read "(.../z: OSError)")."""
    import specbound.studies.zoo.single as tr
    from specbound.studies.zoo import zoodir

    class SafetensorError(Exception):
        pass

    class Model:
        def save_pretrained(self, where, safe_serialization):
            raise SafetensorError(
                "Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "
                '"No space left on device" })'
            )

    where = tmp_path / "z" / "models" / "m"
    with pytest.raises(OSError, match="No space left on device") as exc:
        tr._save(Model(), where)
    assert exc.value.errno == errno.ENOSPC and exc.value.filename == str(where)
    line = str(zoodir.os_error(tmp_path / "z", exc.value))
    assert "No space left on device" in line and str(where) in line and "\n" not in line
