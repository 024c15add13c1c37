"""The correlate driver's decisions, through its Python API (studies.correlate.driver): which
sources are pooled, the data workers' default, where resume records live and when they go,
and that every check comes before ``ready()`` and any work. Messages name parameters, never
flags. The one-zoo analysis itself is :func:`studies.correlate.correlate` (faked here: its
own tests are test_run.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from specbound.errors import SpecboundError
from specbound.io.records import MANIFEST, RecordStore, state_dir_for
from specbound.studies.correlate import driver as D
from specbound.studies.correlate import multizoo as P
from specbound.studies.correlate.data import default_workers
from tests.studies.correlate.multizoo.test_pool import RESULT, _split


class Calls:
    """A stand-in for ``run.correlate``: records each call's arguments and returns the
    committed sparse-parity result re-read (bootstrap 0: fast), none skipped."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, dict[str, Any]]] = []

    def __call__(self, source: Any, **kw: Any) -> Any:
        self.calls.append((source, kw))
        result = P.pool([P.read_part(RESULT)], bootstrap=0)
        result.data_failed = ["models/m-lost"] if kw["data_measures"] else []
        result.skipped = result.skipped.iloc[:0]  # every model written
        return result


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Calls:
    from specbound.studies.correlate import correlate

    calls = Calls()
    calls.parameter_constraints = correlate.parameter_constraints  # type: ignore[attr-defined]
    monkeypatch.setattr(D, "correlate", calls)
    return calls


def _zoo(root: Path) -> Path:
    """A folder that is not a correlate output (the fake never reads it)."""
    root.mkdir(parents=True)
    (root / "zoo.csv").write_text("model\nm0\n")
    return root


def test_one_zoo_is_one_run_with_the_workers_default(fake: Calls, tmp_path: Path) -> None:
    zoo = _zoo(tmp_path / "zoo")
    got = D.correlate_into(tmp_path / "out", D.CorrelateOptions(zoos=[zoo]))
    assert [c[0] for c in fake.calls] == [zoo]
    kw = fake.calls[0][1]
    assert kw["data_workers"] == 1 and kw["state_dir"] is None  # local engine: no resume
    assert got.out == tmp_path / "out" and got.data_failed == []
    assert (tmp_path / "out" / "models.csv").is_file()
    assert got.summary()["out"] == str(tmp_path / "out")

    fake.calls.clear()
    opts = D.CorrelateOptions(zoos=[zoo], data_measures=True, device="cpu")
    got = D.correlate_into(tmp_path / "out", opts)
    assert fake.calls[0][1]["data_workers"] == default_workers("cpu")
    assert got.data_failed == ["models/m-lost"]  # told to the caller, the folder written
    opts = D.CorrelateOptions(zoos=[zoo], data_measures=True, data_workers=3)
    D.correlate_into(tmp_path / "out", opts)
    assert fake.calls[-1][1]["data_workers"] == 3


def test_several_zoos_are_analyzed_then_pooled(fake: Calls, tmp_path: Path) -> None:
    za, zb = _zoo(tmp_path / "zA"), _zoo(tmp_path / "zB")
    with pytest.raises(SpecboundError, match="given twice"):  # the pool refuses a copy
        D.correlate_into(tmp_path / "out", D.CorrelateOptions(zoos=[za, zb], bootstrap=200))
    assert [c[0] for c in fake.calls] == [za, zb]
    assert all(c[1]["state_dir"] is None for c in fake.calls)  # no resume for a pool


def test_correlate_folders_are_pooled_without_analysis(fake: Calls, tmp_path: Path) -> None:
    a, b = _split(tmp_path)
    out = tmp_path / "pooled"
    run = D.compute(out, D.CorrelateOptions(zoos=[a, b], bootstrap=200))
    assert fake.calls == [] and not out.exists()  # computed, nothing written yet
    assert run.out == out and run.records is None  # a local engine keeps no resume records
    got = D.write(run, {"report.html": "<html></html>", "figures/f.svg": b"<svg/>"})
    assert set(pd.read_csv(out / "models.csv")["zoo"]) == {"zoo-a", "zoo-b"}
    assert (out / "report.html").read_text() == "<html></html>"  # in the same atomic write
    assert (out / "figures" / "f.svg").read_bytes() == b"<svg/>"
    assert got.result.zoos == ["zoo-a", "zoo-b"]


def test_beside_finds_the_pages_and_the_study_next_to_out(tmp_path: Path) -> None:
    """What the page of a folder shows of its neighbours, found by the driver (never by the
    page): the sibling pages (the study's first), the study's page; none for the study."""
    for name in ("study", "other"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "report.html").write_text("x")
    near = D.beside(tmp_path / "me")
    assert near.siblings == [
        ("the study", "../study/report.html"),
        ("other", "../other/report.html"),
    ]
    assert near.study_href == "../study/report.html" and near.study is None  # no primary.csv
    assert D.beside(tmp_path / "study").study_href is None
    assert D.beside(tmp_path / "study").siblings == [("other", "../other/report.html")]


def _ready() -> None:
    raise AssertionError("ready() was called before the input was checked")


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({}, "correlate needs a zoo: zoos (zoo directories or correlate folders) or manifest="),
        ({"zoos": ["Z"], "manifest": Path("m.csv")}, "correlate needs a zoo"),
        ({"zoos": ["A", "Z"]}, "pass either zoo directories or correlate folders, not both"),
        ({"zoos": ["A"], "grid": ["Z", "Z"]}, "grid goes with correlate folders"),
        ({"zoos": ["Z"], "grid": ["Z"]}, "grid goes with correlate folders"),
        ({"zoos": ["A"], "data_measures": True}, "data_measures: a correlate folder's"),
        ({"zoos": ["A"], "data_workers": 2}, "data_measures: a correlate folder's"),
        ({"zoos": ["Z"], "data_workers": 2}, "data_workers goes with data_measures"),
        ({"zoos": ["Z"], "data_workers": 0}, "data_workers"),
        ({"zoos": ["Z"], "bootstrap": 150}, "bootstrap"),
        ({"zoos": ["Z", "Z"]}, "given twice"),
    ],
)
def test_bad_sources_and_parameters_name_the_parameter_before_any_work(
    fake: Calls, tmp_path: Path, options: dict[str, Any], words: str
) -> None:
    a, _ = _split(tmp_path)
    z = _zoo(tmp_path / "zoo")
    where = {"A": a, "Z": z}
    for key in ("zoos", "grid"):
        if key in options:
            options[key] = [where[x] for x in options[key]]
    with pytest.raises(SpecboundError) as caught:
        D.correlate_into(tmp_path / "out", D.CorrelateOptions(**options), ready=_ready)
    assert words in str(caught.value)
    assert "--" not in str(caught.value)  # a library message names parameters, not flags
    assert fake.calls == [] and not (tmp_path / "out").exists()


def test_an_out_that_holds_an_input_is_refused_before_ready(fake: Calls, tmp_path: Path) -> None:
    zoo = _zoo(tmp_path / "zoo")
    with pytest.raises(SpecboundError, match="out"):
        D.correlate_into(zoo / "results", D.CorrelateOptions(zoos=[zoo]), ready=_ready)
    assert fake.calls == []


def _distributed() -> Any:
    """An engine that says it is distributed (the fake run never maps a job on it)."""
    return SimpleNamespace(distributed=True, name="fake")


def _records(state: Path, user_file: bool) -> None:
    """A resume folder as a run left it: one record of ours listed, maybe a user's file."""
    key = "0" * 32
    RecordStore(state)._remember(key)  # listed, then written
    (state / f"{key}.json").write_text("{}")
    if user_file:
        (state / "notes.txt").write_text("mine")


def test_resume_records_beside_out_on_a_distributed_engine(fake: Calls, tmp_path: Path) -> None:
    zoo, out = _zoo(tmp_path / "zoo"), tmp_path / "out"
    state = state_dir_for(out)
    assert state == tmp_path / ".out.specbound-sweep"
    _records(state, user_file=True)

    def said(name: str) -> None:
        raise AssertionError("the fake run resumes nothing")

    tell = D.Progress(on_resume=said)
    D.correlate_into(out, D.CorrelateOptions(zoos=[zoo]), engine=_distributed(), progress=tell)
    kw = fake.calls[0][1]
    assert kw["state_dir"] == state and kw["on_resume"] is said
    # every model written (skipped.csv empty): ours deleted, the user's file (and folder) kept
    assert sorted(p.name for p in state.iterdir()) == ["notes.txt"]
    (state / "notes.txt").unlink()
    state.rmdir()
    _records(state, user_file=False)
    D.correlate_into(out, D.CorrelateOptions(zoos=[zoo]), engine=_distributed())
    assert not state.exists()


def test_resume_records_stay_while_a_model_is_missing(
    fake: Calls, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zoo, out = _zoo(tmp_path / "zoo"), tmp_path / "out"
    state = state_dir_for(out)
    _records(state, user_file=False)

    def with_a_skip(source: Any, **kw: Any) -> Any:
        result = Calls()(source, **kw)
        result.skipped = pd.DataFrame({"model": ["m9"], "reason": ["failed"]})
        return result

    with_a_skip.parameter_constraints = fake.parameter_constraints  # type: ignore[attr-defined]
    monkeypatch.setattr(D, "correlate", with_a_skip)
    D.correlate_into(out, D.CorrelateOptions(zoos=[zoo]), engine=_distributed())
    assert (state / MANIFEST).is_file()  # a re-run resumes from them
