"""Zoo models record their data (issue 18, SPEC 12): training_data(model_dir) rebuilds the
examples training used; the model's own forward pass on them gives the recorded accuracy."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from specbound.errors import SpecboundError  # noqa: E402
from specbound.studies.zoo import test_data, train_zoo, training_data  # noqa: E402

P = 23


def small(task, size_axis, sizes):
    return {
        "axes": {
            "depth": [1],
            "width": [8],
            "lr": [1e-2],
            "weight_decay": [0.0],
            size_axis: sizes,
            "seed": [0, 1],
        },
        "max_steps": 15,
    }


@pytest.fixture(scope="module")
def zoos(tmp_path_factory):
    root = tmp_path_factory.mktemp("zoodata")
    out = {}
    for task, axis, sizes in (
        ("modular-addition", "train_fraction", [0.3]),
        ("digits", "train_size", [40]),
        ("sparse-parity", "train_size", [32]),
    ):
        out[task] = (
            root / task,
            train_zoo(task, root / task, preset="tiny", grid=small(task, axis, sizes)),
        )
    return out


def _load(d):
    from transformers import (
        AutoConfig,
        AutoModelForImageClassification,
        AutoModelForSequenceClassification,
    )

    cfg = AutoConfig.from_pretrained(d)
    cls = (
        AutoModelForImageClassification
        if cfg.model_type == "vit"
        else AutoModelForSequenceClassification
    )
    return cls.from_pretrained(d).eval()


@pytest.mark.parametrize("task", ["modular-addition", "digits", "sparse-parity"])
def test_training_data_reproduces_recorded_accuracy(zoos, task):
    root, df = zoos[task]
    for r in df.itertuples():
        d = root / r.model
        x, y = training_data(d)
        rec = json.loads((d / "data.json").read_text())
        split = json.loads((d / "split.json").read_text())
        assert rec["task"] == task and rec["train"] == split["train"] and rec["seed"] == r.seed
        assert len(y) == r.train_size and y.dtype == torch.long
        m = json.loads((d / "metrics.json").read_text())
        model = _load(d)
        with torch.no_grad():
            for (xs, ys), key in ((training_data(d), "train"), (test_data(d), "test")):
                logits = model(xs).logits
                correct = int((logits.argmax(-1) == ys).sum())
                assert correct == round(m[f"{key}_acc"] * len(ys)), (r.model, key)
                loss = torch.nn.functional.cross_entropy(logits, ys).item()
                assert loss == pytest.approx(m[f"{key}_loss"], rel=1e-5)
        assert torch.equal(training_data(d)[0], x)  # deterministic


def test_training_data_is_the_task_by_brute_force(zoos):
    """modular addition rebuilt here without specbound: the labels are (a + b) mod 23."""
    root, df = zoos["modular-addition"]
    d = root / df["model"].iloc[0]
    x, y = training_data(d)
    idx = json.loads((d / "data.json").read_text())["train"]
    a, b = np.divmod(np.array(idx), P)
    assert (x[:, 0] == P).all()
    assert np.array_equal(x[:, 1].numpy(), a) and np.array_equal(x[:, 2].numpy(), b)
    assert np.array_equal(y.numpy(), (a + b) % P)


def test_tampered_or_missing_record_is_one_line(zoos, tmp_path):
    import shutil

    root, df = zoos["digits"]
    d = tmp_path / "m"
    shutil.copytree(root / df["model"].iloc[0], d)
    rec = json.loads((d / "data.json").read_text())
    rec["train"] = rec["train"][1:] + rec["train"][:1]  # same examples, another order
    (d / "data.json").write_text(json.dumps(rec))
    with pytest.raises(SpecboundError, match="checksum"):
        training_data(d)
    rec["train"] = [10**6]
    (d / "data.json").write_text(json.dumps(rec))
    with pytest.raises(SpecboundError, match="do not fit"):
        training_data(d)
    (d / "data.json").write_text("{")
    with pytest.raises(SpecboundError, match="not valid JSON"):
        training_data(d)
    (d / "data.json").unlink()
    with pytest.raises(SpecboundError, match=r"no data\.json"):
        training_data(d)
