"""`--ensemble N`: same-architecture models trained as one batched computation give the files
of the one-at-a-time path, with numbers that differ by floating-point order only (issue 19)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from safetensors.torch import load_file  # noqa: E402

from specbound.studies.zoo import train_zoo  # noqa: E402

#: digits memorizes 20-40 images in ~130 steps at lr 1e-2 (target 0.05); lr 3e-3 does not
CONVERGING = {
    "axes": {
        "depth": [1],
        "width": [16],
        "lr": [3e-3, 1e-2],
        "weight_decay": [0.0, 0.1],
        "train_size": [20, 40],
        "seed": [0],
    },
    "max_steps": 200,
    "target_loss": 0.05,
}


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("ens")
    one = train_zoo("digits", root / "one", preset="tiny", grid=CONVERGING, ensemble=1)
    many = train_zoo("digits", root / "many", preset="tiny", grid=CONVERGING, ensemble=16)
    return root, one, many


def test_same_files_columns_and_forms(pair):
    root, one, many = pair
    assert files(root / "one") == files(root / "many")
    assert list(one.columns) == list(many.columns) and list(one["model"]) == list(many["model"])
    for name in one["model"]:
        a = json.loads((root / "one" / name / "metrics.json").read_text())
        b = json.loads((root / "many" / name / "metrics.json").read_text())
        assert a.keys() == b.keys()
        assert {k: type(v) for k, v in a.items()} == {k: type(v) for k, v in b.items()}
        assert a["ensemble"] == 1 and b["ensemble"] == 8
        for f in ("split.json", "data.json", "config.json", "init/model.safetensors"):
            # the same seed gives the same initialization and split, bit for bit
            assert (root / "one" / name / f).read_bytes() == (root / "many" / name / f).read_bytes()


def test_same_converged_set_and_close_numbers(pair):
    _, one, many = pair
    assert one["converged"].tolist() == many["converged"].tolist()
    assert one["converged"].sum() >= 2 and (~one["converged"]).sum() >= 2
    assert (one["test_acc"] - many["test_acc"]).abs().mean() <= 0.05
    conv = one["converged"].to_numpy()
    ds = (one["steps"] - many["steps"]).abs().to_numpy()
    assert (ds[conv] <= np.maximum(10, 0.15 * one["steps"].to_numpy()[conv])).all()
    assert (one["steps"][~conv] == 200).all() and (many["steps"][~conv] == 200).all()


def test_checkpoints_reload_and_give_their_metrics(pair):
    """Each ensemble member was saved at its own stopping step: from_pretrained reproduces it."""
    from transformers import ViTForImageClassification

    from specbound.studies.zoo import training_data

    root, _, many = pair
    for r in many.itertuples():
        d = root / "many" / r.model
        m = json.loads((d / "metrics.json").read_text())
        model = ViTForImageClassification.from_pretrained(d).eval()
        x, y = training_data(d)
        with torch.no_grad():
            logits = model(x).logits
        loss = torch.nn.functional.cross_entropy(logits, y).item()
        assert loss == pytest.approx(m["train_loss"], rel=1e-5)
        assert (loss <= 0.05) == m["converged"]
        assert int((logits.argmax(-1) == y).sum()) == round(m["train_acc"] * len(y))


@pytest.mark.parametrize("steps", [1, 3])
def test_first_steps_agree_per_member(tmp_path, steps):
    """Different lr, weight decay and train size in one ensemble: after a few steps each
    member's weights equal its one-at-a-time weights to float32 rounding (a wrong mask,
    learning rate, clip or decay would differ by orders of magnitude more)."""
    grid = {
        "axes": {
            "depth": [2],
            "width": [8],
            "lr": [1e-3, 3e-2],
            "weight_decay": [0.0, 0.5],
            "train_fraction": [0.1, 0.6],
            "seed": [4],
        },
        "max_steps": steps,
        "target_loss": 1e-9,
    }
    a = train_zoo("modular-addition", tmp_path / "a", preset="tiny", grid=grid, ensemble=1)
    b = train_zoo("modular-addition", tmp_path / "b", preset="tiny", grid=grid, ensemble=8)
    assert (a["steps"] == steps).all() and (b["steps"] == steps).all()
    assert np.allclose(a["train_loss"], b["train_loss"], rtol=0, atol=1e-4)
    for name in a["model"]:
        wa = load_file(str(tmp_path / "a" / name / "model.safetensors"))
        wb = load_file(str(tmp_path / "b" / name / "model.safetensors"))
        w0 = load_file(str(tmp_path / "a" / name / "init" / "model.safetensors"))
        assert wa.keys() == wb.keys()
        for k in wa:
            moved = (wa[k] - w0[k]).abs().max().item()
            diff = (wa[k] - wb[k]).abs().max().item()
            assert diff <= 1e-5 + 1e-3 * moved, (name, k, diff, moved)


def test_ensemble_one_is_plain_adamw_bit_for_bit(tmp_path):
    """--ensemble 1 is today's loop: reproduced here with torch's own AdamW, bit for bit."""
    from transformers import ViTForImageClassification

    grid = {
        **CONVERGING,
        "axes": {**CONVERGING["axes"], "lr": [1e-2], "weight_decay": [0.1], "train_size": [20]},
        "max_steps": 7,
    }
    df = train_zoo("digits", tmp_path / "z", preset="tiny", grid=grid, ensemble=1)
    d = tmp_path / "z" / df["model"].iloc[0]
    from specbound.studies.zoo import training_data

    x, y = training_data(d)
    model = ViTForImageClassification.from_pretrained(d / "init")  # its saved initialization
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the trainer's default --threads 1
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1, betas=(0.9, 0.98))
    for _ in range(7):
        loss = torch.nn.functional.cross_entropy(model(x).logits, y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    torch.set_num_threads(threads)
    saved = ViTForImageClassification.from_pretrained(d).state_dict()
    assert saved.keys() == model.state_dict().keys()
    for k, v in model.state_dict().items():
        assert torch.equal(saved[k], v), k


def test_zoo_csv_rows_equal_metrics(pair):
    root, _, _ = pair
    csv = pd.read_csv(root / "many" / "zoo.csv")
    for r in csv.itertuples():
        m = json.loads((root / "many" / r.model / "metrics.json").read_text())
        assert r.steps == m["steps"] and r.test_acc == pytest.approx(m["test_acc"], abs=1e-12)
