"""specbound zoo train: valid HF checkpoints, honest metrics, resume, task registry, bad grids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

P = 23  # modular-addition's modulus, restated here on purpose (an independent data build)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "specbound.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=300,
    )


def snapshot(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")}


@pytest.fixture(scope="module")
def tiny_zoo(tmp_path_factory):
    """`zoo train modular-addition --preset tiny` through the CLI (8 models), plus a re-run."""
    out = tmp_path_factory.mktemp("zoo") / "z"
    first = run_cli("zoo", "train", "modular-addition", "--preset", "tiny", "--out", str(out))
    assert first.returncode == 0, first.stderr
    before = snapshot(out)
    second = run_cli("zoo", "train", "modular-addition", "--preset", "tiny", "--out", str(out))
    return out, first, second, before


@pytest.mark.slow(
    reason="the first test of its module: the fixture trains an 8-model zoo through the CLI, twice"
)
def test_manifest_and_zoo_json(tiny_zoo):
    import pandas as pd

    out, first, _, _ = tiny_zoo
    df = pd.read_csv(out / "zoo.csv")
    meta = json.loads((out / "zoo.json").read_text())
    assert meta["task"] == "modular-addition" and meta["preset"] == "tiny"
    assert meta["axes"] == ["depth", "width", "lr", "weight_decay", "train_fraction", "seed"]
    assert len(df) == 8 and df["model"].is_unique
    for col in [
        "model",
        "init",
        "train_size",
        "converged",
        "train_acc",
        "test_acc",
        "train_loss",
        "test_loss",
        "steps",
        "wall_s",
        *meta["axes"],
    ]:
        assert col in df.columns, col
    # the grid is the full factorial product of the preset's axes
    assert sorted(map(tuple, df[meta["axes"]].values.tolist())) == sorted(
        (1, 32, 0.01, wd, f, s) for wd in (0.0, 1.0) for f in (0.3, 0.8) for s in (0, 1)
    )
    assert set(df["train_size"]) == {round(0.3 * P * P), round(0.8 * P * P)}
    for r in df.itertuples():
        m = json.loads((out / r.model / "metrics.json").read_text())
        assert m["test_acc"] == pytest.approx(r.test_acc, abs=1e-12)
        assert m["converged"] == (m["train_loss"] <= 0.01) == bool(r.converged)
        assert m["converged"] or m["steps"] == m["max_steps"]
        assert (out / r.init / "model.safetensors").is_file()
    assert first.stderr.count("[") >= 8 and "wrote" in first.stdout


def test_checkpoints_reload_and_reproduce_recorded_accuracy(tiny_zoo):
    """from_pretrained + an independently built data set reproduce metrics.json exactly."""
    import pandas as pd
    from transformers import AutoModelForSequenceClassification

    out, _, _, _ = tiny_zoo
    df = pd.read_csv(out / "zoo.csv")
    a, b = np.meshgrid(np.arange(P), np.arange(P), indexing="ij")
    a, b = a.ravel(), b.ravel()
    x_all = torch.tensor(np.stack([np.full_like(a, P), a, b], axis=1), dtype=torch.long)
    y_all = torch.tensor((a + b) % P, dtype=torch.long)
    for r in df.itertuples():
        d = out / r.model
        split = json.loads((d / "split.json").read_text())
        tr, te = split["train"], split["test"]
        assert len(tr) == r.train_size and not set(tr) & set(te)
        assert sorted(tr + te) == list(range(P * P))
        m = json.loads((d / "metrics.json").read_text())
        model = AutoModelForSequenceClassification.from_pretrained(d).eval()
        with torch.no_grad():
            for idx, key in ((te, "test"), (tr, "train")):
                logits = model(input_ids=x_all[idx]).logits
                correct = int((logits.argmax(-1) == y_all[idx]).sum())
                assert correct == round(m[f"{key}_acc"] * len(idx)), (r.model, key)
                loss = torch.nn.functional.cross_entropy(logits, y_all[idx]).item()
                assert loss == pytest.approx(m[f"{key}_loss"], rel=1e-5)
        # training moved the weights away from the saved initialization
        from safetensors.torch import load_file

        q = "bert.encoder.layer.0.attention.self.query.weight"
        w0 = load_file(str(d / "init" / "model.safetensors"))[q]
        assert m["steps"] > 0 and not torch.equal(model.state_dict()[q], w0)


def test_specbound_reads_the_checkpoints(tiny_zoo):
    import pandas as pd

    from specbound.analysis import analyze

    out, _, _, _ = tiny_zoo
    df = pd.read_csv(out / "zoo.csv")
    for r in list(df.itertuples())[:2]:
        a = analyze(str(out / r.model), init=str(out / r.init), cache=False)
        assert a.spec.num_layers == r.depth and a.spec.hidden_size == r.width
        assert np.isfinite(a.bounds.spectrum_adaptive.log10)
        assert a.measures["distance_from_init"] > 0
        same = analyze(str(out / r.model), init=str(out / r.model), cache=False)
        assert same.measures["distance_from_init"] == 0


def test_resume_trains_nothing(tiny_zoo):
    out, _, second, before = tiny_zoo
    assert second.returncode == 0, second.stderr
    assert second.stderr.count("done before, skipped") == 8
    after = snapshot(out)
    models = {k: v for k, v in before.items() if k.startswith("models")}
    assert {k: after[k] for k in models} == models  # no model file rewritten
    assert not [k for k in after if k.startswith("models/.")]  # no temp dir left


def test_task_registry():
    from specbound.errors import SpecboundError
    from specbound.studies.zoo import TASKS, get_task, register, task_names
    from specbound.studies.zoo.tasks import Task

    assert {"modular-addition", "digits", "sparse-parity"} <= set(task_names())
    for name in task_names():
        t = TASKS[name]
        assert t.name == name and t.description and {"tiny", "standard"} <= set(t.presets)
        for preset in t.presets.values():
            assert set(preset.axes) == set(t.axes)
        n_std = int(np.prod([len(v) for v in t.presets["standard"].axes.values()]))
        n_tiny = int(np.prod([len(v) for v in t.presets["tiny"].axes.values()]))
        assert n_std >= 100 and n_tiny == 8
    with pytest.raises(SpecboundError, match=r"unknown zoo task 'nope'.*modular-addition"):
        get_task("nope")
    with pytest.raises(ValueError, match="already registered"):
        register(TASKS["digits"])

    class Bare(Task):
        name = "bare"

    with pytest.raises(ValueError, match="presets"):
        register(Bare())
    assert "bare" not in TASKS


def test_task_data_are_what_they_claim():
    """Labels recomputed from the inputs (or the source) by brute force; splits disjoint."""
    from sklearn.datasets import load_digits

    from specbound.studies.zoo import get_task

    ma = get_task("modular-addition").data()
    x, y = ma.x.numpy(), ma.y.numpy()
    assert x.shape == (P * P, 3) and (x[:, 0] == P).all()
    assert ((x[:, 1] + x[:, 2]) % P == y).all()
    assert len({(i, j) for _, i, j in x.tolist()}) == P * P

    sp = get_task("sparse-parity").data()
    bits = sp.x.numpy()[:, 1:]
    assert len({tuple(r) for r in bits.tolist()}) == 2 ** bits.shape[1]
    pos = sp.extra["positions"]
    assert (np.array([sum(r[p] for p in pos) % 2 for r in bits.tolist()]) == sp.y.numpy()).all()

    dg = get_task("digits").data()
    ref = load_digits()
    assert (dg.y.numpy() == ref.target).all()
    np.testing.assert_allclose((dg.x.numpy()[:, 0] + 1) * 8, ref.images, atol=1e-5)

    for name, sizes in (
        ("digits", (50, 1200)),
        ("sparse-parity", (128, 3072)),
        ("modular-addition", (0.3, 0.9)),
    ):
        t = get_task(name)
        for size in sizes:
            tr, te = t.split(size, 0)
            assert not set(tr) & set(te)
            assert t.split(size, 0) == (tr, te)  # deterministic
            assert len(tr) == (round(size * P * P) if size < 1 else size)
        small, _ = t.split(sizes[0], 1)
        assert small != t.split(sizes[0], 0)[0]  # the seed changes the training sample
        assert t.split(sizes[0], 0)[1] == t.split(sizes[0], 1)[1] or name == "modular-addition"


def test_new_task_is_one_registration(tmp_path):
    """A task registered from outside trains through the same loop; results are deterministic."""
    from specbound.studies.zoo import TASKS, register, train_zoo
    from specbound.studies.zoo.tasks.base import Data, Preset, Task, bert_classifier
    from tests.support.safetensors_np import load_file

    class FirstToken(Task):
        name = "first-token-test"
        description = "label = first token"
        presets = {  # noqa: RUF012 (the Task interface declares a class attribute)
            k: Preset(
                axes={
                    "depth": [1],
                    "width": [8],
                    "lr": [1e-2],
                    "weight_decay": [0.0],
                    "train_size": [12],
                    "seed": [3],
                },
                max_steps=4,
            )
            for k in ("tiny", "standard")
        }

        def data(self):
            g = torch.Generator().manual_seed(0)
            x = torch.randint(0, 4, (20, 5), generator=g)
            return Data(x=x, y=x[:, 0].clone(), num_classes=4)

        def size_problem(self, size):
            return None if 1 <= size < 20 else "1..19"

        def split(self, size, seed):
            return list(range(int(size))), list(range(int(size), 20))

        def build(self, depth, width, num_classes):
            return bert_classifier(4, 5, depth, width, num_classes)

    register(FirstToken())
    try:
        dfs = [train_zoo("first-token-test", tmp_path / f"z{i}", preset="tiny") for i in range(2)]
    finally:
        del TASKS["first-token-test"]
    assert len(dfs[0]) == 1 and dfs[0]["steps"].iloc[0] == 4
    w = [
        load_file(str(tmp_path / f"z{i}" / dfs[i]["model"].iloc[0] / "model.safetensors"))
        for i in range(2)
    ]
    assert w[0].keys() == w[1].keys()
    assert all(np.array_equal(w[0][k], w[1][k]) for k in w[0])


@pytest.mark.parametrize(
    ("grid", "needle"),
    [
        ("axes: [1, 2\n", "not valid YAML"),
        ("- 1\n- 2\n", "must hold a mapping"),
        ("axes:\n  depth: [1]\nsteps: 3\n", "unknown key(s) steps"),
        ("axes:\n  dropout: [0.1]\n", "unknown axis 'dropout'"),
        ("axes:\n  width: [30]\n", "multiple of the 4 attention heads"),
        ("axes:\n  train_fraction: [1.5]\n", "train_fraction"),
        ("axes:\n  lr: []\n", "no values"),
        ("axes:\n  lr: [fast]\n", "not a finite number"),
        ("axes:\n  lr: [.nan]\n", "not a finite number"),
        ("target_loss: 1e400\n", "target_loss"),
        ("target_loss: -1e-2\n", "target_loss"),
        ("axes:\n  depth: [1.5]\n", "must be an integer"),
        ("max_steps: -3\n", "max_steps"),
        ("task: digits\n", "is for task 'digits'"),
    ],
)
def test_bad_grid_is_one_line_error(tmp_path, grid, needle):
    from specbound.errors import SpecboundError
    from specbound.studies.zoo import train_zoo

    g = tmp_path / "grid.yaml"
    g.write_text(grid)
    with pytest.raises(SpecboundError) as exc:
        train_zoo("modular-addition", tmp_path / "z", preset="tiny", grid=g)
    msg = str(exc.value)
    assert needle in msg and "\n" not in msg and str(g) in msg
    assert not (tmp_path / "z").exists()


def test_grid_numbers_without_a_dot_mean_numbers(tmp_path):
    """PyYAML reads ``3e-3`` (no dot, YAML 1.1) as a string; the grid takes it as 0.003."""
    import yaml

    from specbound.studies.zoo.train import load_grid, plan

    g = tmp_path / "grid.yaml"
    g.write_text("axes:\n  lr: [3e-3, 1e-2]\n  weight_decay: [1E-1]\ntarget_loss: 1e-3\n")
    assert yaml.safe_load(g.read_text())["axes"]["lr"] == ["3e-3", "1e-2"]  # the quirk itself
    p = plan("modular-addition", preset="tiny", grid=load_grid(g))
    assert p.axes["lr"] == [0.003, 0.01] and p.axes["weight_decay"] == [0.1]
    assert p.target_loss == 0.001


def test_cli_errors_are_one_line(tmp_path):
    g = tmp_path / "grid.yaml"
    g.write_text("axes:\n  width: [30]\n")
    user = tmp_path / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("keep me")
    cases = [
        (
            ("zoo", "train", "modular-addition", "--grid", str(g), "--out", str(tmp_path / "a")),
            "width",
        ),
        (
            ("zoo", "train", "digits", "--preset", "tiny", "--out", str(user)),
            "not a zoo written by specbound",
        ),
    ]
    for args, needle in cases:
        r = run_cli(*args)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2, r.stderr
        assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], lines
        assert "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.yaml", "mine"]
    assert [p.name for p in user.iterdir()] == ["notes.txt"]


def test_unknown_task_preset_device(tmp_path):
    from specbound.errors import SpecboundError
    from specbound.studies.zoo import train_zoo

    for kw, needle in (
        ({"task": "no-such-task"}, "unknown zoo task"),
        ({"task": "digits", "preset": "huge"}, "unknown preset"),
        ({"task": "digits", "preset": "tiny", "device": "tpu"}, "cpu or cuda"),
    ):
        with pytest.raises(SpecboundError, match=needle):
            train_zoo(out=tmp_path / "z", **kw)
    assert not (tmp_path / "z").exists()


def test_tiny_zoo_then_correlate(tiny_zoo, tmp_path):
    """The issue's CI path: `zoo train --preset tiny` followed by `correlate` on its directory."""
    import pandas as pd

    zoo, *_ = tiny_zoo
    manifest = pd.read_csv(zoo / "zoo.csv")
    out = tmp_path / "corr"
    r = run_cli(
        "correlate",
        str(zoo),
        "--out",
        str(out),
        "--include-unconverged",
        "--bootstrap",
        "200",
        "--seed",
        "1",
    )
    assert r.returncode == 0, r.stderr
    models = pd.read_csv(out / "models.csv")
    corr = pd.read_csv(out / "correlation.csv")
    assert len(models) == len(manifest) == 8
    assert {"spectrum_adaptive", "norm_based", "htsr_alpha", "distance_from_init"} <= set(
        corr["measure"]
    )
    # the gap in models.csv is the recorded train - test accuracy of each model
    m = models.merge(manifest, on="model", suffixes=("", "_zoo"))
    assert (m["gap"] - (m["train_acc_zoo"] - m["test_acc_zoo"])).abs().max() < 1e-12
    # distance_from_init used each model's init/ checkpoint: defined and positive
    assert (models["distance_from_init"] > 0).all()
    if not manifest["converged"].any():  # without the flag: one line that says what to do
        r = run_cli("correlate", str(zoo), "--out", str(tmp_path / "c2"))
        assert r.returncode == 2 and r.stderr.count("error:") == 1
        assert not (tmp_path / "c2").exists()


def test_standard_presets_can_answer_the_question():
    """Issue 17 item 3: >= 3 seeds, >= 3 values of n, a fixed-n variant, modular lr <= 5e-3."""
    from specbound.studies.zoo import TASKS

    for t in TASKS.values():
        std, fixed = t.presets["standard"], t.presets["fixed-n"]
        assert len(std.axes["seed"]) >= 3 and len(std.axes[t.size_axis]) >= 3
        assert (
            len(fixed.axes[t.size_axis]) == 1
            and fixed.axes[t.size_axis][0] in std.axes[t.size_axis]
        )
        assert {k: v for k, v in fixed.axes.items() if k != t.size_axis} == {
            k: v for k, v in std.axes.items() if k != t.size_axis
        }
        assert fixed.max_steps == std.max_steps
    assert max(TASKS["modular-addition"].presets["standard"].axes["lr"]) <= 5e-3
    assert "sparse-parity" in TASKS
