"""``correlate --data-measures`` (issue 18, SPEC 12): the data measures of every zoo model, next to
the weight measures in models.csv / correlation.csv / differences.csv and the report; cached;
absent with one line when the manifest's models are not zoo model directories.

Cross-checks share no code with the package: the margins come from the model's own forward
pass (transformers' class, numpy sort), the margin forms from models.csv's own columns."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("matplotlib")

from specbound.measures.data import data_measure_names  # noqa: E402
from specbound.studies.zoo import train_zoo, training_data  # noqa: E402
from tests.support.cli_runner import run_cli  # noqa: E402

GRID = {
    "axes": {
        "depth": [1],
        "width": [8],
        "lr": [1e-2],
        "weight_decay": [0.0],
        "train_size": [40, 80],
        "seed": [0, 1],
    },
    "max_steps": 15,
}
NAMES = data_measure_names()


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    root = tmp_path_factory.mktemp("zoo-data-measures")
    train_zoo("digits", root / "zoo", preset="tiny", grid=GRID)
    return root / "zoo"


@pytest.fixture(scope="module")
def cache_home(tmp_path_factory):
    return tmp_path_factory.mktemp("data-cache")


def _correlate(args, cache_home):
    env = {"SPECBOUND_CACHE_DIR": str(cache_home)}
    return run_cli("correlate", *args, "--bootstrap", "200", "--include-unconverged", env=env)


@pytest.fixture(scope="module")
def first(zoo, cache_home, tmp_path_factory):
    out = tmp_path_factory.mktemp("corr") / "out"
    r = _correlate([str(zoo), "--out", str(out), "--data-measures"], cache_home)
    assert r.code == 0, r.out + r.err
    shutil.copytree(cache_home, out.parent / "cache")  # the records this run wrote, as they were
    return out, r


def _forward_margins(model_dir):
    from transformers import AutoModelForImageClassification

    x, y = training_data(model_dir)
    model = AutoModelForImageClassification.from_pretrained(model_dir).eval()
    with torch.no_grad():
        logits = model(pixel_values=x).logits.double().numpy()
    y = y.numpy()
    true = logits[np.arange(len(y)), y]
    other = logits.copy()
    other[np.arange(len(y)), y] = -np.inf
    return true - other.max(axis=1), len(y)


def test_every_table_carries_the_data_measures(first):
    out, r = first
    models = pd.read_csv(out / "models.csv")
    corr = pd.read_csv(out / "correlation.csv")
    diffs = pd.read_csv(out / "differences.csv")
    summary = json.loads((out / "correlate.json").read_text())
    assert len(models) == 4
    for name in NAMES:
        assert name in models.columns, name
        assert name in set(corr["measure"]), name
        assert name in summary["measures"]
        assert name in set(diffs["measure"]), name
    # the data columns follow the weight measures and precede the rank-ceiling diagnosis
    cols = list(models.columns)
    assert cols.index("num_parameters") < cols.index(NAMES[0])
    assert cols.index(NAMES[-1]) < cols.index("spectrum_adaptive_share_p0")
    assert models["inverse_margin"].notna().all()
    assert any("data measures (SPEC 12) of 4 zoo models" in n for n in summary["notes"])
    report = (out / "report.html").read_text()
    assert "pacbayes_flatness" in report and "spectrum_adaptive_per_margin_sqrt_n" in report
    # one progress line per model on stderr
    assert (r.out + r.err).count("[data ") == 4
    assert "Loading weights" not in r.err  # transformers' own bar is silenced


def test_margins_match_the_models_own_forward_pass(first, zoo):
    out, _ = first
    models = pd.read_csv(out / "models.csv")
    for _, row in models.iterrows():
        d = zoo / row["model"]
        margins, n = _forward_margins(d)
        k = max(1, len(margins) // 10)
        gamma = abs(np.sort(margins)[k - 1])
        assert row["inverse_margin"] == pytest.approx(1 / gamma**2, rel=1e-9)
        lg = math.log10(gamma)
        assert row["log_spectral_product_over_margin"] == pytest.approx(
            row["log_spectral_product"] - 2 * lg, abs=1e-9
        )
        for b in ("spectrum_adaptive", "norm_based"):
            assert row[f"{b}_per_margin_sqrt_n"] == pytest.approx(
                row[b] - lg - 0.5 * math.log10(n), abs=1e-9
            )
        assert n == row["train_size"]


def test_flatness_and_sharpness_equal_a_direct_call(first, zoo):
    """The cached columns are specbound.data_measures of the model on its training data."""
    from transformers import AutoModelForImageClassification

    import specbound

    out, _ = first
    row = pd.read_csv(out / "models.csv").iloc[0]
    d = zoo / row["model"]
    x, y = training_data(d)
    model = AutoModelForImageClassification.from_pretrained(d).eval()
    dm = specbound.data_measures(
        model,
        [(x, y)],
        measures=["pacbayes_flatness", "pacbayes_mag_flatness", "sharpness", "sharpness_mag"],
        logits_fn=lambda m, inputs: m(pixel_values=inputs).logits,
    )
    for name, value in dm.items():
        assert row[name] == pytest.approx(value, rel=1e-12), name


def test_second_run_reads_the_cache_and_gives_the_same_table(first, zoo, cache_home, tmp_path):
    out, _ = first
    again = tmp_path / "again"
    r = _correlate([str(zoo), "--out", str(again), "--data-measures"], cache_home)
    assert r.code == 0, r.out + r.err
    assert (r.out + r.err).count(": cached") == 4
    a = pd.read_csv(out / "models.csv")[NAMES]
    b = pd.read_csv(again / "models.csv")[NAMES]
    pd.testing.assert_frame_equal(a, b, check_exact=True)


@pytest.mark.slow(
    reason="a correlate with data measures: each worker process imports torch and transformers"
)
def test_a_damaged_cache_record_is_recomputed(first, zoo, tmp_path):
    out, _ = first
    home = tmp_path / "cache"
    shutil.copytree(out.parent / "cache", home)  # the cache as the first run left it
    records = sorted((home / "data_measures").glob("*.json"))
    assert len(records) == 4
    for rec in records:
        text = rec.read_text()
        rec.write_text(text.replace('"version"', '"versiom"'))
    r = _correlate([str(zoo), "--out", str(tmp_path / "b"), "--data-measures"], home)
    assert r.code == 0, r.out + r.err
    assert ": cached" not in (r.out + r.err)
    a = pd.read_csv(out / "models.csv")[NAMES]
    b = pd.read_csv(tmp_path / "b" / "models.csv")[NAMES]
    pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_a_manifest_of_zoo_model_directories_gets_them(first, zoo, cache_home, tmp_path):
    table = pd.read_csv(zoo / "zoo.csv")
    table["model"] = [str((zoo / m).resolve()) for m in table["model"]]
    if "init" in table.columns:
        table["init"] = [str((zoo / m).resolve()) for m in table["init"]]
    manifest = tmp_path / "zoo.csv"
    table.to_csv(manifest, index=False)
    r = _correlate(
        ["--manifest", str(manifest), "--out", str(tmp_path / "o"), "--data-measures"],
        cache_home,
    )
    assert r.code == 0, r.out + r.err
    got = pd.read_csv(tmp_path / "o" / "models.csv")
    assert got["inverse_margin"].notna().all()


def test_a_manifest_of_plain_checkpoints_says_why_in_one_line(zoo, cache_home, tmp_path):
    table = pd.read_csv(zoo / "zoo.csv")
    for m in table["model"]:
        dst = tmp_path / "plain" / m
        shutil.copytree(zoo / m, dst)
        (dst / "data.json").unlink()
    table.to_csv(tmp_path / "plain" / "zoo.csv", index=False)
    r = _correlate(
        [
            "--manifest",
            str(tmp_path / "plain" / "zoo.csv"),
            "--out",
            str(tmp_path / "o"),
            "--data-measures",
        ],
        cache_home,
    )
    assert r.code == 0, r.out + r.err
    lines = [ln for ln in (r.out + r.err).splitlines() if ln.startswith("no data measures")]
    assert len(lines) == 1 and "not a zoo model directory" in lines[0], r.out + r.err
    models = pd.read_csv(tmp_path / "o" / "models.csv")
    assert not set(NAMES) & set(models.columns)
    notes = json.loads((tmp_path / "o" / "correlate.json").read_text())["notes"]
    assert lines[0] in notes


def test_without_the_flag_nothing_changes(first, zoo, cache_home, tmp_path):
    r = _correlate([str(zoo), "--out", str(tmp_path / "o")], cache_home)
    assert r.code == 0, r.out + r.err
    models = pd.read_csv(tmp_path / "o" / "models.csv")
    assert not set(NAMES) & set(models.columns)
    with_data = pd.read_csv(first[0] / "models.csv")
    pd.testing.assert_frame_equal(models, with_data[list(models.columns)], check_exact=True)


def test_worker_processes_give_the_values_of_one_process(first, zoo, tmp_path):
    """--data-workers only changes where the models run: each runs on one torch thread either
    way, so two spawned workers give the in-process values bit for bit. A model that cannot
    load in a worker fails alone, with its reason on its line."""
    from specbound.studies.correlate import data as D

    rows = pd.read_csv(first[0] / "models.csv")
    broken = tmp_path / "broken-model"
    shutil.copytree(zoo / rows["model"][0], broken)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    jobs = [(k, str(zoo / m), rows.iloc[k].to_dict()) for k, m in enumerate(rows["model"])]
    lines: list[str] = []
    one = D.compute_columns(jobs, cache=False, workers=1)
    two = D.compute_columns(
        [*jobs, (len(jobs), str(broken), None)], cache=False, workers=2, on_line=lines.append
    )
    assert set(two.values) == set(range(len(jobs)))
    for k in range(len(jobs)):
        assert two.values[k] == one.values[k], rows["model"][k]
        assert two.values[k]["inverse_margin"] == rows["inverse_margin"][k]
    assert len(lines) == len(jobs) + 1
    failed = [ln for ln in lines if "broken-model: failed: " in ln]
    assert len(failed) == 1 and "\n" not in failed[0], lines
    assert any("data measures failed for 1 models" in n for n in two.notes), two.notes


@pytest.mark.parametrize("bad", ["0", "100000", "two"])
def test_a_bad_worker_count_is_one_line(zoo, cache_home, tmp_path, bad):
    r = _correlate(
        [str(zoo), "--out", str(tmp_path / "o"), "--data-measures", "--data-workers", bad],
        cache_home,
    )
    assert r.code == 2
    assert "--data-workers" in r.one_error_line()
    assert not (tmp_path / "o").exists()


@pytest.mark.slow(
    reason="data-measure worker processes (torch, transformers) killed and started afresh"
)
@pytest.mark.parametrize("mode", ["once", "always"])
def test_a_killed_data_worker_costs_one_model_at_most(zoo, cache_home, tmp_path, monkeypatch, mode):
    """SIGKILL of the worker computing one model's data measures: the model is retried once in
    a fresh worker and the other models finish. Killed once, every model is in the table, exit
    0; killed twice, that model is in skipped.csv naming the signal, the others are written and
    the command exits 1 with one line."""
    from specbound.studies.correlate import data as D
    from tests.support import procjobs

    names = sorted(f"models/{p.name}" for p in (zoo / "models").iterdir() if p.is_dir())
    victim = names[1]
    monkeypatch.setattr(D, "_worker_job", procjobs.killing_data_job)
    monkeypatch.setenv(procjobs.KILL, victim.split("/")[-1])
    monkeypatch.setenv(procjobs.KILL_MODE, mode)
    monkeypatch.setenv(procjobs.MARKS, str(tmp_path))
    out = tmp_path / "o"
    r = _correlate(
        [str(zoo), "--out", str(out), "--data-measures", "--data-workers", "2", "--no-cache"],
        cache_home,
    )
    assert (tmp_path / f"died-{victim.split('/')[-1]}").is_file()  # the worker was killed
    models = pd.read_csv(out / "models.csv")
    skipped = pd.read_csv(out / "skipped.csv") if (out / "skipped.csv").stat().st_size else None
    if mode == "once":
        assert r.code == 0, r.err
        assert sorted(models["model"]) == names
        assert models[NAMES].notna().all().all()
    else:
        assert r.code == 1
        line = r.err.strip().splitlines()[-1]
        assert line.startswith("error: data measures failed for 1 models"), r.err
        assert victim in line and "Traceback" not in r.err
        assert sorted(models["model"]) == [n for n in names if n != victim]
        assert skipped is not None and list(skipped["model"]) == [victim]
        assert skipped["reason"][0] == (
            "data measures failed: worker process killed by SIGKILL twice (retried once in a "
            "fresh worker)"
        )
        info = json.loads((out / "correlate.json").read_text())
        assert info["n_models"] == len(names) - 1 and info["n_skipped"] == 1


def test_ctrl_c_stops_the_data_workers_at_once(zoo, cache_home, tmp_path):
    """Ctrl-C (SIGINT to the process group) while two data workers compute: exit 130 with one
    line within seconds, every worker gone, no output folder."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]  # the repository: tests.support is importable
    marks = tmp_path / "marks"
    marks.mkdir()
    out = tmp_path / "o"
    script = (
        f"import sys; sys.path.insert(0, {str(root)!r}); from tests.support import procjobs; "
        "from specbound.studies.correlate import data; "
        "data._worker_job = procjobs.sleeping_data_job; "
        "from specbound.cli import main; sys.argv[0] = 'specbound'; main()"
    )
    cmd = [sys.executable, "-c", script, "correlate", str(zoo), "--out", str(out),
           "--data-measures", "--data-workers", "2", "--no-cache", "--bootstrap", "200",
           "--include-unconverged"]  # fmt: skip
    env = {**os.environ, "SPECBOUND_CACHE_DIR": str(cache_home), "SPECBOUND_TEST_MARKS": str(marks)}
    from tests.support.procjobs import fresh_sigint

    proc = subprocess.Popen(
        cmd, stderr=subprocess.PIPE, text=True, start_new_session=True, env=env,
        preexec_fn=fresh_sigint,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while len(list(marks.glob("busy-*"))) < 2:  # both workers are computing
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "interrupted" and "Traceback" not in err
    print(f"ctrl-c to exit: {took:.2f} s")
    # the workers are stopped at once (SIGTERM, SIGKILL after 1 s), not after their 600 s jobs;
    # the bound leaves room for a loaded machine (this is no timing test)
    assert took < 60.0, took
    workers = [int(p.name.split("-")[1]) for p in marks.glob("busy-*")]
    deadline = time.monotonic() + 10
    while True:
        alive = []
        for pid in workers:
            try:
                os.kill(pid, 0)
                alive.append(pid)
            except ProcessLookupError:
                pass
        if not alive:
            break
        assert time.monotonic() < deadline, f"workers {alive} outlived their parent"
        time.sleep(0.1)
    assert not out.exists()
