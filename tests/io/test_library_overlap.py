"""The library's writers (``Analysis``, ``Study``, ``Correlation``, the multi-zoo ``Study``,
``Trajectory``: ``to_dir``) refuse an output that is, lies inside or contains what the result
was computed from, as the CLI's ``--out`` does (one check: ``io.outdir.check_output_dir``), and
leave the input as it was."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from specbound.errors import SpecboundError
from tests.support.checkpoints import write_tiny_bert


def _digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` and its sha256 (written by hand, no specbound code)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _refused(write, target: Path, why: str, untouched: Path) -> None:
    before = _digest(untouched)
    with pytest.raises(SpecboundError, match=why):
        write(target)
    assert _digest(untouched) == before
    assert not target.exists() or target == untouched or target in untouched.parents


def test_analysis_to_dir_refuses_its_checkpoint(tmp_path: Path) -> None:
    from specbound import analyze

    model = write_tiny_bert(tmp_path / "m", layers=1, hidden=8, heads=2, ffn=16)
    a = analyze(model, cache=False)
    _refused(a.to_dir, model / "results", "lies inside the input", model)
    _refused(a.to_dir, model, "is the input", model)
    assert a.to_dir(tmp_path / "out") == tmp_path / "out"  # elsewhere: written
    assert a.inputs == (str(model),)
    assert analyze(_state_dict(model), config=_config(model), cache=False).inputs == ()


def _state_dict(model: Path) -> dict:
    from tests.support.safetensors_np import load_file

    return load_file(str(model / "model.safetensors"))


def _config(model: Path) -> dict:
    import json

    return json.loads((model / "config.json").read_text())


def test_analysis_of_a_relative_path_remembers_where_it_was(tmp_path, monkeypatch) -> None:
    from specbound import analyze

    model = write_tiny_bert(tmp_path / "m", layers=1, hidden=8, heads=2, ffn=16)
    monkeypatch.chdir(tmp_path)
    a = analyze("m", cache=False)
    monkeypatch.chdir(model)
    _refused(a.to_dir, model / "results", "lies inside the input", model)


def test_study_to_dir_refuses_a_model_it_analyzed(tmp_path: Path) -> None:
    from specbound.studies.scale import scale

    models = [
        write_tiny_bert(tmp_path / f"m{i}", layers=1, hidden=h, heads=2, ffn=2 * h, seed=i)
        for i, h in enumerate((8, 16))
    ]
    study = scale([str(m) for m in models], cache=False)
    _refused(study.to_dir, models[1] / "study", "lies inside the input", models[1])
    study.to_dir(tmp_path / "study")
    assert (tmp_path / "study" / "models.csv").is_file()


def test_correlation_to_dir_refuses_its_zoo_and_may_replace_a_folder_it_reevaluates(
    tmp_path: Path,
) -> None:
    from specbound.studies.correlate import correlate
    from specbound.studies.correlate.multizoo import pool, read_part, study
    from tests.studies.correlate.test_run import _zoo

    zoo = _zoo(tmp_path)
    result = correlate(zoo, bootstrap=200, cache=False)
    _refused(result.to_dir, zoo / "results", "lies inside the input", zoo)
    _refused(result.to_dir, tmp_path, "contains the input", zoo)
    out = tmp_path / "results"
    result.to_dir(out)
    again = pool([read_part(out)], bootstrap=200)  # read whole: replaced in place
    again.to_dir(out)
    s = study([out])
    _refused(s.to_dir, out / "study", "lies inside the input", out)
    _refused(s.to_dir, out, "is the input", out)


def test_trajectory_to_dir_refuses_the_tracker_files(tmp_path: Path) -> None:
    from specbound.studies.trajectory import read_trajectory
    from tests.report.test_pages import _grokking_track

    run = _grokking_track(tmp_path / "run")
    t = read_trajectory(run)
    _refused(t.to_dir, run, "contains the input", run)
    t.to_dir(run / "report")  # beside the files, inside the tracker's folder: fine
