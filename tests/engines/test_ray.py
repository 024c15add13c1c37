"""The Ray engine on a real local Ray cluster (no mocks), and revision sweeps from an offline cache.

One module-scoped cluster (``ray.init(num_cpus=2)`` in this process); other drivers (a killed
script, the CLI) join it by its address. Kill tests synchronize on files, never on sleeps.
"""

from __future__ import annotations

import functools
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specbound.io.files import csv_text
from tests.support.checkpoints import write_tiny_bert

REPO = Path(__file__).resolve().parents[2]
SHAPES = [(2, 8, 0), (3, 8, 1), (4, 8, 2), (2, 16, 3), (3, 16, 4), (4, 16, 5)]  # (L, N, seed)


def _wait_for(cond, what: str, timeout: float = 180.0) -> None:
    """Poll a file-system condition (the synchronization point), failing after ``timeout``."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# --- no Ray on the local path --------------------------------------------------------------------


def test_local_path_imports_no_ray() -> None:
    code = (
        "import specbound.cli, specbound.studies.scale, specbound.engines, "
        "specbound.engines.local; "
        "import sys; assert 'ray' not in sys.modules, 'ray imported'"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr


def test_unknown_engine_is_one_line_error(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from specbound.cli import app

    m = write_tiny_bert(tmp_path / "m")
    r = CliRunner().invoke(app, ["analyze", str(m), "--engine", "spark", "-q"])
    assert r.exit_code == 2 and "unknown engine 'spark'" in r.output and "local, ray" in r.output


def test_unreachable_ray_address_fails_fast(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    m = write_tiny_bert(tmp_path / "m")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "specbound.cli",
            "analyze",
            str(m),
            "--no-cache",
            "-q",
            "--engine",
            "ray",
            "--ray-address",
            f"127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("error: no Ray cluster answers at 127.0.0.1:")
    assert len(p.stderr.strip().splitlines()) == 1


# --- revisions -----------------------------------------------------------------------------------


def test_parse_revision_range() -> None:
    from specbound.errors import SpecboundError
    from specbound.io.hub import parse_revision_range, split_revision

    assert parse_revision_range("pythia:0:3000:1000") == ("step{N}", [0, 1000, 2000, 3000])
    assert parse_revision_range("olmo:5,7") == ("step{N}-tokens{M}B", [5, 7])
    assert parse_revision_range("ckpt-{N}:1:3") == ("ckpt-{N}", [1, 2, 3])
    for bad in ("pythia", "pythia:a:b", "nostep:0:10", "pythia:0:10:0", "pythia:0:1:2:3"):
        with pytest.raises(SpecboundError):
            parse_revision_range(bad)
    assert split_revision("EleutherAI/pythia-70m@step1000") == ("EleutherAI/pythia-70m", "step1000")
    assert split_revision("org/name") == ("org/name", None)


def _fake_repo(hub: Path, repo: str, refs: dict[str, int]) -> dict[str, Path]:
    """models--org--name/{refs,snapshots} as huggingface_hub lays them out; ref -> snapshot."""
    root = hub / f"models--{repo.replace('/', '--')}"
    out = {}
    for i, (ref, seed) in enumerate(refs.items()):
        commit = f"{i:040x}"
        out[ref] = write_tiny_bert(root / "snapshots" / commit, layers=2, seed=seed)
        (root / "refs").mkdir(parents=True, exist_ok=True)
        (root / "refs" / ref).write_text(commit)
    return out


def test_revisions_from_offline_cache(tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    from specbound.analysis import analyze

    hub = tmp_path / "hub"
    snaps = _fake_repo(
        hub, "EleutherAI/pythia-tiny", {"step0": 10, "step1000": 11, "step2000": 12, "main": 12}
    )
    _fake_repo(hub, "allenai/olmo-tiny", {"step1000-tokens4B": 20, "step2000-tokens8B": 21})
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        HF_HOME=str(tmp_path / "hf_home"),
        HF_HUB_CACHE=str(hub),
        SPECBOUND_CACHE_DIR=str(tmp_path / "sbcache"),
    )
    env.pop("HUGGINGFACE_HUB_CACHE", None)
    out = tmp_path / "out"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "specbound.cli",
            "scale",
            "EleutherAI/pythia-tiny",
            "--revisions",
            "pythia:0:3000:1000",
            "--out",
            str(out),
            "-q",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert "1 revisions of EleutherAI/pythia-tiny do not exist" in p.stderr
    assert "step3000" in p.stderr
    m = pd.read_csv(out / "models.csv").set_index("model")
    assert sorted(m.index) == [f"EleutherAI/pythia-tiny@step{n}" for n in (0, 1000, 2000)]
    for n in (0, 1000, 2000):  # each row is that revision's snapshot, not main's
        direct = analyze(snaps[f"step{n}"], cache=False)
        assert m.loc[f"EleutherAI/pythia-tiny@step{n}", "spectrum_adaptive"] == pytest.approx(
            direct.bounds.spectrum_adaptive.log10, rel=1e-12
        )

    code = (
        "from specbound.io.hub import expand_revisions; import json; "
        "print(json.dumps(expand_revisions('allenai/olmo-tiny', 'olmo:1000:3000:1000')))"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    present, missing = json.loads(p.stdout)
    assert present == ["allenai/olmo-tiny@step1000-tokens4B", "allenai/olmo-tiny@step2000-tokens8B"]
    assert missing == ["step3000-tokens{M}B"]

    p = subprocess.run(
        [sys.executable, "-m", "specbound.cli", "analyze", "EleutherAI/pythia-tiny@step5", "-q"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and p.stderr.startswith("error:") and "@step5" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


# --- the Ray cluster -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A local Ray cluster owned by this process (2 CPUs); yields its address."""
    ray = pytest.importorskip("ray")
    import logging

    # the raylet (and so every worker, of every driver) inherits this: no user cache touched
    old = os.environ.get("SPECBOUND_CACHE_DIR")
    os.environ["SPECBOUND_CACHE_DIR"] = str(tmp_path_factory.mktemp("ray_sbcache"))
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        if old is None:
            os.environ.pop("SPECBOUND_CACHE_DIR", None)
        else:
            os.environ["SPECBOUND_CACHE_DIR"] = old


@pytest.fixture(scope="module")
def zoo6(tmp_path_factory) -> list[str]:
    d = tmp_path_factory.mktemp("zoo6")
    return [
        str(write_tiny_bert(d / f"m{i}", layers=L, hidden=N, heads=2, ffn=2 * N, seed=s))
        for i, (L, N, s) in enumerate(SHAPES)
    ]


@pytest.fixture(scope="module")
def local6(zoo6):
    from specbound.studies.scale import scale

    return scale(zoo6, cache=False)


def _same_study(a, b) -> None:
    pd.testing.assert_frame_equal(a.models, b.models, check_exact=True)
    pd.testing.assert_frame_equal(a.growth, b.growth, check_exact=True)
    assert [x.summary() for x in a.analyses] == [y.summary() for y in b.analyses]
    assert [x.measures for x in a.analyses] == [y.measures for y in b.analyses]


@pytest.mark.slow(
    reason="six models swept on the module's Ray cluster, which the first test to use it starts"
)
def test_sweep_equals_local_and_reports_failures(cluster, zoo6, local6, tmp_path) -> None:
    from specbound.studies.scale import scale

    bad = tmp_path / "broken"
    bad.mkdir()
    (bad / "config.json").write_text("{not json")
    models = [*zoo6, str(bad)]
    from specbound.engines import RayOptions

    study = scale(models, cache=False, engine="ray", engine_options=RayOptions(address=cluster))
    _same_study(study, local6)
    assert [n for n, _ in study.skipped] == [str(bad)]
    local_bad = scale(models, cache=False)
    assert study.skipped == local_bad.skipped  # the worker's one-line reason, verbatim


def _kill_me_once(model, name, kw, *, flags, victim):
    """Sweep task: the victim's first attempt announces its pid and waits to be SIGKILLed."""
    from specbound.analysis.sweep import run_model

    if name == victim:
        flags = Path(flags)
        with open(flags / "attempts", "a") as fh:
            fh.write(f"{os.getpid()}\n")
        if not (flags / "pid").exists():
            (flags / "pid.tmp").write_text(str(os.getpid()))
            os.replace(flags / "pid.tmp", flags / "pid")
            _wait_for(lambda: False, "SIGKILL", timeout=120)  # killed long before
    return run_model(model, name, kw)


def _die(model, name, kw):
    from specbound.analysis.sweep import run_model

    if name.endswith("m1"):
        os.kill(os.getpid(), signal.SIGKILL)
    return run_model(model, name, kw)


@pytest.mark.slow(
    reason="kills a Ray worker mid-sweep and waits for Ray to retry its task in a fresh worker"
)
def test_worker_killed_mid_sweep_is_retried(cluster, zoo6, local6, tmp_path) -> None:
    import ray.cloudpickle

    from specbound.analysis.sweep import analyze_models
    from specbound.engines import RayOptions, get_engine

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    victim = zoo6[2]

    def killer() -> None:
        _wait_for(lambda: (tmp_path / "pid").exists(), "the victim's pid file")
        os.kill(int((tmp_path / "pid").read_text()), signal.SIGKILL)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    fn = functools.partial(_kill_me_once, flags=str(tmp_path), victim=victim)
    eng = get_engine("ray", RayOptions(address=cluster))
    res = analyze_models(eng, zoo6, names=zoo6, worker_fn=fn, analyze_kwargs={"cache": False})
    analyses, skipped = res.analyses, res.skipped
    t.join(timeout=5)
    assert skipped == []
    attempts = (tmp_path / "attempts").read_text().split()
    assert len(attempts) == 2 and attempts[0] != attempts[1]  # killed once, retried elsewhere
    want = {a.model: a.summary() for a in local6.analyses}
    assert [a.summary() for a in analyses] == [want[m] for m in zoo6]

    # retries exhausted: reported by name, the sweep still completes the others
    res = analyze_models(
        get_engine("ray", RayOptions(address=cluster, max_retries=1)),
        zoo6[:3],
        names=zoo6[:3],
        worker_fn=_die,
        analyze_kwargs={"cache": False},
    )
    analyses, skipped = res.analyses, res.skipped
    assert [n for n, _ in skipped] == [zoo6[1]] and "failed 2 times" in skipped[0][1]
    assert [a.model for a in analyses] == [zoo6[0], zoo6[2]]


DRIVER = """
import functools, sys, time
from pathlib import Path
from specbound.engines import RayOptions, get_engine
from specbound.io.records import RecordStore, state_dir_for
from specbound.analysis.sweep import analyze_models, run_model

flags, address, out, *models = sys.argv[1:]

def stall(model, name, kw, flags):
    if name == models[-1]:  # the last model waits for a file that appears after the kill
        while not (Path(flags) / "release").exists():
            time.sleep(0.05)
    return run_model(model, name, kw)

kw = {"l_phi": None, "grid_m": None, "device": None, "cache": True}  # what scale passes
analyze_models(get_engine("ray", RayOptions(address=address)), models, names=models,
    analyze_kwargs=kw, records=RecordStore(state_dir_for(out)),
    worker_fn=functools.partial(stall, flags=flags))
"""


@pytest.mark.slow(
    reason="a driver process on the Ray cluster is killed mid-sweep, then a second one finishes"
)
def test_driver_killed_rerun_finishes_only_the_rest(cluster, zoo6, local6, tmp_path) -> None:
    from specbound.io.records import state_dir_for

    out = tmp_path / "out"
    state = state_dir_for(out)
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    driver = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path), cluster, str(out), *zoo6],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(
            lambda: len(_records(state)) >= 5 or driver.poll() is not None,
            "five finished models",
        )
        assert driver.poll() is None, driver.stderr.read()
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        (tmp_path / "release").write_text("")  # a stalled task left behind finishes on its own
        if driver.poll() is None:
            driver.kill()
    done = _records(state)
    assert len(done) == 5 and not out.exists()
    finished = {json.loads(p.read_text())["meta"]["model"] for p in done}
    assert finished == set(zoo6[:5])

    env = dict(os.environ)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "specbound.cli",
            "scale",
            *zoo6,
            "--out",
            str(out),
            "--engine",
            "ray",
            "--ray-address",
            cluster,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    resumed = [line for line in p.stderr.splitlines() if line.startswith("resumed ")]
    assert sorted(resumed) == sorted(f"resumed {m} (finished earlier)" for m in zoo6[:5])
    assert not state.exists()  # every model done: the resume state is removed
    got = pd.read_csv(out / "models.csv")
    # what the local engine writes, read back the same way (empty cells = missing)
    want = pd.read_csv(io.StringIO(csv_text(local6.models)))  # the one CSV writer
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def _records(state: Path) -> list[Path]:
    """The JSON files of the resume records in ``state`` (32 hex digits each)."""
    return sorted(p for p in state.glob("*.json") if len(p.stem) == 32)


def _write_sharded_bf16(path: Path, layers: int = 3, hidden: int = 16, ffn: int = 32) -> Path:
    """A BERT-shaped checkpoint in bf16, split into two safetensors shards with an index."""
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(7)
    path.mkdir(parents=True)
    shards: list[dict] = [{}, {}]
    for l in range(layers):
        p = f"encoder.layer.{l}."
        sd = {p + f"attention.self.{n}.weight": (hidden, hidden) for n in ("query", "key", "value")}
        sd[p + "attention.output.dense.weight"] = (hidden, hidden)
        sd[p + "intermediate.dense.weight"] = (ffn, hidden)
        sd[p + "output.dense.weight"] = (hidden, ffn)
        for i, (k, shape) in enumerate(sd.items()):  # a block's tensors straddle both shards
            shards[(l + i) % 2][k] = torch.randn(*shape, generator=g).to(torch.bfloat16)
    weight_map = {}
    for i, sd in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-00002.safetensors"
        save_file(sd, str(path / fname))
        weight_map.update({k: fname for k in sd})
    (path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map})
    )
    (path / "config.json").write_text(
        json.dumps(
            {
                "model_type": "bert",
                "num_hidden_layers": layers,
                "hidden_size": hidden,
                "num_attention_heads": 4,
                "intermediate_size": ffn,
                "hidden_act": "gelu",
            }
        )
    )
    return path


@pytest.mark.slow(reason="one model analyzed block by block as Ray tasks, and again locally")
def test_analyze_by_block_equals_local_on_sharded_bf16(cluster, tmp_path) -> None:
    from specbound.analysis import analyze
    from specbound.analysis.sweep import analyze_on_engine
    from specbound.engines import RayOptions, get_engine

    ckpt = _write_sharded_bf16(tmp_path / "sharded")
    seen = []
    eng = get_engine("ray", RayOptions(address=cluster))
    a = analyze_on_engine(eng, str(ckpt), cache=False, progress=lambda d, n: seen.append((d, n)))
    b = analyze(str(ckpt), cache=False)
    diff = {k: (v, b.measures[k]) for k, v in a.measures.items() if v != b.measures[k]}
    assert not diff
    assert a.summary() == b.summary()
    for f in ("sv_values", "sv_offsets", "layer", "head", "matrix_type", "spectral_norm"):
        np.testing.assert_array_equal(getattr(a.spectra, f), getattr(b.spectra, f))
    pd.testing.assert_frame_equal(a.weights, b.weights, check_exact=True)
    assert seen[-1] == (3, 3)
    # proxies only: the block tasks skip the raw-weight SVDs, the proxies are unchanged
    proxies = ["spectrum_adaptive", "norm_based"]
    c = analyze_on_engine(eng, str(ckpt), cache=False, measures=proxies)
    assert c.weight_spectra is None and c.measures == {k: b.measures[k] for k in proxies}


@pytest.mark.slow(reason="a correlate study on the real Ray cluster, and again locally")
def test_correlate_under_ray_equals_local(cluster, zoo6, tmp_path) -> None:
    from specbound.engines import RayOptions, get_engine
    from specbound.studies.correlate import correlate

    if "engine" not in correlate.__code__.co_varnames:
        pytest.skip("studies.correlate has no engine= yet (helper C)")

    rows = ["model,depth,width,train_acc,test_acc,converged"]
    for i, (m, (L, N, _)) in enumerate(zip(zoo6, SHAPES, strict=True)):
        rows.append(f"{m},{L},{N},1.0,{0.5 + 0.07 * i},{'false' if i == 5 else 'true'}")
    manifest = tmp_path / "zoo.csv"
    manifest.write_text("\n".join(rows) + "\n")
    kw = {"bootstrap": 200, "seed": 1, "cache": False}
    a = correlate(manifest, engine=get_engine("ray", RayOptions(address=cluster)), **kw)
    b = correlate(manifest, **kw)
    pd.testing.assert_frame_equal(a.models, b.models, check_exact=True)
    pd.testing.assert_frame_equal(a.correlation, b.correlation, check_exact=True)
    pd.testing.assert_frame_equal(a.skipped, b.skipped)
    assert list(a.skipped.model) == [zoo6[5]]  # unconverged: excluded by correlate, not analyzed


@pytest.mark.slow(reason="reproduce of the miniatures on the real Ray cluster, and again locally")
def test_reproduce_under_ray_equals_local(cluster, tmp_path) -> None:
    """``reproduce --engine ray``: one task per miniature, the same tables as the local run."""
    pytest.importorskip("matplotlib")
    from typer.testing import CliRunner

    from specbound.cli import app
    from tests.support.study_helpers import write_bert

    d = tmp_path / "minis"
    write_bert(d / "bert_uncased_L-2_H-128_A-2", 2, 128)
    write_bert(d / "bert_uncased_L-4_H-128_A-2", 4, 128)
    write_bert(d / "bert_uncased_L-2_H-256_A-4", 2, 256)
    outs = {}
    for engine in ("local", "ray"):
        out = tmp_path / engine
        args = ["reproduce", "bert-miniatures", "--local-dir", str(d), "--out", str(out), "-q"]
        if engine == "ray":
            args += ["--engine", "ray", "--ray-address", cluster]
        r = CliRunner().invoke(app, [*args, "--no-cache"])
        assert r.exit_code == 0, r.output
        assert "21 of 24 checkpoints missing" in r.output
        outs[engine] = out
    for f in ("models.csv", "growth.csv"):
        pd.testing.assert_frame_equal(
            pd.read_csv(outs["ray"] / f), pd.read_csv(outs["local"] / f), check_exact=True
        )
    from specbound.io.records import state_dir_for

    assert not state_dir_for(outs["ray"]).exists()  # every model finished: no resume state left


# --- trust: resume records (issue 20) ------------------------------------------------------------


class _Pwn:
    """Unpickling this creates the file PWNED: what a crafted record could run."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.mark.slow(
    reason="a Ray sweep resumed from a state folder with crafted, damaged and forged records"
)
def test_resume_never_unpickles_and_verifies_records(cluster, zoo6, local6, tmp_path) -> None:
    """A crafted ``<key>.pkl`` (code, a pickled int, a forged Analysis), a damaged and a forged
    record in the state folder: nothing is unpickled, nothing forged reaches models.csv."""
    import dataclasses
    import pickle

    from specbound.studies.scale import scale

    models = zoo6[:3]
    from specbound.engines import RayOptions

    state = tmp_path / ".out.specbound-sweep"
    opts = {"engine": "ray", "engine_options": RayOptions(address=cluster), "state_dir": state}
    first = scale(models, **opts)
    keys = [p.stem for p in _records(state)]
    assert len(keys) == 3
    pwned = tmp_path / "PWNED"
    forged = dataclasses.replace(local6.analyses[0], num_parameters=424242)
    payloads = [_Pwn(str(pwned)), 7, forged]
    for key, payload in zip(keys, payloads, strict=True):
        (state / f"{key}.pkl").write_bytes(pickle.dumps(payload))
    again = scale(models, **opts)
    assert not pwned.exists()
    assert 424242 not in set(again.models.num_parameters)
    pd.testing.assert_frame_equal(again.models, first.models, check_exact=True)

    # damaged records (garbage JSON, a pickled int as JSON, a forged summary with the codec's
    # own checksum redone) are recomputed, one warning line each; forged numbers never land
    from specbound.io.codec import read_record, write_record

    (state / f"{keys[0]}.json").write_text("{not json")
    (state / f"{keys[1]}.json").write_bytes(pickle.dumps(7))
    meta, arrays = read_record(state / keys[2])
    meta["summary"]["num_parameters"] = 424242
    write_record(state / keys[2], meta, arrays, kind="sweep-record")
    warned: list[str] = []
    import logging

    class _Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warned.append(record.getMessage())

    h = _Catch(level=logging.WARNING)
    logging.getLogger("specbound").addHandler(h)
    try:
        third = scale(models, **opts)
    finally:
        logging.getLogger("specbound").removeHandler(h)
    pd.testing.assert_frame_equal(third.models, first.models, check_exact=True)
    assert len([w for w in warned if "is invalid" in w]) == 2, warned
    assert all(len(w.splitlines()) == 1 and w.startswith("warning: ") for w in warned)
    assert not pwned.exists()


def test_cleanup_deletes_only_what_specbound_wrote(tmp_path) -> None:
    import numpy as np

    from specbound.io.records import MANIFEST, RecordStore, clear_records

    state = tmp_path / ".out.specbound-sweep"
    state.mkdir()
    (state / "notes.txt").write_text("mine")  # a user's file
    (state / f"{'a' * 32}.json").write_text("{}")  # looks like a record, not written by us
    store = RecordStore(state)
    from specbound.io.codec import write_record

    store._remember("b" * 32)
    write_record(state / ("b" * 32), {"key": "b" * 32}, {"x": np.zeros(2)}, kind="sweep-record")
    clear_records(state)
    assert sorted(p.name for p in state.iterdir()) == [f"{'a' * 32}.json", "notes.txt"]
    assert not (state / MANIFEST).exists()
    (state / "notes.txt").unlink()
    (state / f"{'a' * 32}.json").unlink()
    store._remember("c" * 32)
    clear_records(state)
    assert not state.exists()  # empty once ours are gone: the folder goes too


@pytest.mark.slow(reason="CLI subprocesses (each importing Ray) join the real Ray cluster")
def test_cli_cleanup_keeps_a_users_file(cluster, zoo6, tmp_path) -> None:
    from specbound.io.records import state_dir_for

    out = tmp_path / "out"
    state = state_dir_for(out)
    state.mkdir()
    (state / "notes.txt").write_text("mine")
    p = subprocess.run(
        [sys.executable, "-m", "specbound.cli", "scale", *zoo6[:2], "--out", str(out), "-q",
         "--engine", "ray", "--ray-address", cluster],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in state.iterdir()) == ["notes.txt"]
    assert (state / "notes.txt").read_text() == "mine"


def _dead_address() -> str:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_ray_address_is_checked_when_given() -> None:
    pytest.importorskip("ray")
    from specbound.engines import EngineOptionError, RayOptions, get_engine, options_for
    from specbound.errors import SpecboundError

    dead = _dead_address()
    with pytest.raises(SpecboundError, match=f"no Ray cluster answers at {dead}"):
        get_engine("ray", RayOptions(address=dead))  # before any work, cached or not
    with pytest.raises(EngineOptionError, match="address is unused with engine 'local'"):
        options_for("local", address=dead)


def test_dead_ray_address_fails_even_with_cached_spectra(tmp_path) -> None:
    pytest.importorskip("ray")
    m = write_tiny_bert(tmp_path / "m")
    env = dict(os.environ, SPECBOUND_CACHE_DIR=str(tmp_path / "cache"))
    base = [sys.executable, "-m", "specbound.cli", "analyze", str(m), "-q"]
    p = subprocess.run(base, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr  # the spectra are now in the cache
    dead = _dead_address()
    p = subprocess.run(
        [*base, "--engine", "ray", "--ray-address", dead],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith(f"error: no Ray cluster answers at {dead}")
    assert len(p.stderr.strip().splitlines()) == 1


SIGTERM_DRIVER = """
import sys, time
from pathlib import Path
import specbound.analysis.sweep as sweep

real = sweep.run_model
flags, *argv = sys.argv[1:]

def stall(model, name, kw):
    if name == argv[-1]:  # the last model waits until the test releases it
        while not (Path(flags) / "release").exists():
            time.sleep(0.05)
    return real(model, name, kw)

sweep.run_model = stall
from specbound.cli import main
main(argv)
"""


@pytest.mark.slow(
    reason="a CLI subprocess on the real Ray cluster gets SIGTERM mid-sweep, then a rerun finishes"
)
def test_sigterm_to_a_ray_sweep_exits_143_keeping_records(cluster, zoo6, tmp_path) -> None:
    from specbound.io.records import state_dir_for

    out = tmp_path / "out"
    state = state_dir_for(out)
    script = tmp_path / "driver.py"
    script.write_text(SIGTERM_DRIVER)
    models = zoo6[:3]
    cmd = [sys.executable, str(script), str(tmp_path), "scale", "--out", str(out), "-q",
           "--engine", "ray", "--ray-address", cluster, *models]  # fmt: skip
    driver = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(
            lambda: len(_records(state)) >= 2 or driver.poll() is not None, "two finished models"
        )
        assert driver.poll() is None, driver.communicate()[1]
        driver.send_signal(signal.SIGTERM)
        _, err = driver.communicate(timeout=120)
    finally:
        (tmp_path / "release").write_text("")
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 143, err
    assert err.strip().splitlines() == ["terminated"], err
    assert len(_records(state)) == 2 and not out.exists()  # the finished models are kept
