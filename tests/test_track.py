"""specbound.track (SPEC 11): what a tracker records at step t equals analyze of the checkpoint
saved at step t, for the plain Tracker, the transformers Trainer callback and the Lightning
callback; CSV/TensorBoard/CLI behaviour; the auto schedule."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from specbound.analysis import analyze  # noqa: E402
from specbound.errors import SpecboundError  # noqa: E402
from specbound.measures import measure_names  # noqa: E402
from specbound.track import (  # noqa: E402
    TYPE_COLUMNS,
    Tracker,
    half_change_step,
    next_auto_step,
)

VOCAB, SEQ = 50, 8


def tiny_bert(seed: int = 0):
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    cfg = BertConfig(
        num_hidden_layers=2,
        hidden_size=32,
        num_attention_heads=2,
        intermediate_size=64,
        vocab_size=VOCAB,
        max_position_embeddings=16,
        num_labels=2,
    )
    return BertForSequenceClassification(cfg)


def random_batches(n: int, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.randint(0, VOCAB, (4, SEQ), generator=g), torch.randint(0, 2, (4,), generator=g))
        for _ in range(n)
    ]


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as fh:
        r = csv.DictReader(fh)
        return list(r.fieldnames or []), list(r)


def value(cell: str) -> float | None:
    return None if cell == "" else float(cell)


def assert_row_matches(row: dict[str, str], ckpt: Path, init: Path) -> None:
    """Every measure and matrix-type column of a track.csv row vs analyze(ckpt, init=init)."""
    a = analyze(ckpt, init=init, cache=False)
    assert set(a.measures) == set(measure_names())
    for name, want in a.measures.items():
        got = value(row[name])
        if want is None:
            assert got is None, name
        else:
            assert got is not None and math.isclose(got, want, rel_tol=1e-10, abs_tol=1e-300), (
                name,
                got,
                want,
            )
    # matrix-type columns against a pandas groupby of the matrices table (no shared code)
    m = a.matrices
    for t, grp in m.groupby("matrix_type"):
        p = grp["p_star"].to_numpy(dtype=float)
        c = grp["contribution"].to_numpy(dtype=float)
        assert math.isclose(value(row[f"{t}_mean_p_star"]), p.mean(), rel_tol=1e-12)
        assert math.isclose(value(row[f"{t}_share_p0"]), (p == 0).mean(), rel_tol=0, abs_tol=1e-15)
        assert math.isclose(value(row[f"{t}_contribution"]), c.sum(), rel_tol=1e-10)


RAW = re.compile(
    r"encoder\.layer\.\d+\.(attention\.self\.(query|key|value)|"
    r"attention\.output\.dense|intermediate\.dense|output\.dense)\.weight$"
)


def brute_raw_weights(sd: dict) -> list[np.ndarray]:
    """The raw BERT projections W_Q, W_K, W_V, W_O, W_in, W_out from a state dict."""
    return [t.detach().double().numpy() for name, t in sorted(sd.items()) if RAW.search(name)]


# --- the plain tracker: one tiny run shared by several tests --------------------------------


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("plain")
    model = tiny_bert()
    model.save_pretrained(d / "init")
    init_sd = {k: v.clone() for k, v in model.state_dict().items()}
    tracker = Tracker(model, every=2, out=d / "track", tensorboard=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    tracker.step(0, train_loss=float("nan"), train_acc=0.5, test_acc=0.5)
    model.save_pretrained(d / "ck0")
    for step, (x, y) in enumerate(random_batches(5), start=1):
        out = model(input_ids=x, labels=y)
        out.loss.backward()
        opt.step()
        opt.zero_grad()
        acc = float((out.logits.argmax(-1) == y).float().mean())
        row = tracker.step(step, train_loss=out.loss.item(), train_acc=acc, test_acc=0.5)
        if row is not None:
            model.save_pretrained(d / f"ck{step}")
    tracker.close()
    return d, tracker, init_sd, model


def test_plain_tracker_matches_saved_checkpoints(plain_run):
    d, tracker, _, _ = plain_run
    header, rows = read_rows(d / "track" / "track.csv")
    assert header[:6] == ["step", "wall_s", "analysis_s", "train_loss", "train_acc", "test_acc"]
    assert header[6:] == measure_names() + list(TYPE_COLUMNS)
    assert [int(r["step"]) for r in rows] == [0, 2, 4]
    for r in rows:
        assert_row_matches(r, d / f"ck{r['step']}", d / "init")
        assert float(r["analysis_s"]) > 0 and float(r["wall_s"]) >= 0
    assert float(rows[0]["distance_from_init"]) == 0.0
    # the rows returned by step() are the rows written
    assert [float(r["spectrum_adaptive"]) for r in rows] == [
        r["spectrum_adaptive"] for r in tracker.rows
    ]


def test_plain_tracker_brute_force_norms(plain_run):
    """frobenius_sum and distance_from_init from the raw tensors, sharing no specbound code."""
    d, _, init_sd, model = plain_run
    _, rows = read_rows(d / "track" / "track.csv")
    last = rows[-1]
    assert int(last["step"]) == 4
    from safetensors.torch import load_file

    sd4 = load_file(str(d / "ck4" / "model.safetensors"))
    w4, w0 = brute_raw_weights(sd4), brute_raw_weights(init_sd)
    assert len(w4) == 2 * 6
    fro = sum(float((w**2).sum()) for w in w4)
    dist = sum(float(((a - b) ** 2).sum()) for a, b in zip(w4, w0, strict=True))
    assert math.isclose(float(last["frobenius_sum"]), fro, rel_tol=1e-10)
    assert math.isclose(float(last["distance_from_init"]), dist, rel_tol=1e-10)
    assert dist > 0


def test_tensorboard_scalars_read_back(plain_run):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    d, _, _, _ = plain_run
    _, rows = read_rows(d / "track" / "track.csv")
    acc = EventAccumulator(str(d / "track" / "tensorboard"))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for name in ["spectrum_adaptive", "distance_from_init", "QK_contribution", "train_acc"]:
        assert f"specbound/{name}" in tags
        events = acc.Scalars(f"specbound/{name}")
        assert [e.step for e in events] == [int(r["step"]) for r in rows]
        for e, r in zip(events, rows, strict=True):
            assert math.isclose(e.value, float(r[name]), rel_tol=1e-6)  # stored as float32
    assert "specbound/train_loss" in tags  # nan at step 0 is skipped, later steps recorded
    assert [e.step for e in acc.Scalars("specbound/train_loss")] == [2, 4]


def test_trajectory_cli(plain_run, tmp_path):
    from typer.testing import CliRunner

    from specbound.cli import app

    d, _, _, _ = plain_run
    out = tmp_path / "traj"
    res = CliRunner().invoke(app, ["trajectory", str(d / "track"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html
    assert "http://" not in html and "https://" not in html and 'src="/' not in html
    assert "gap = train_acc - test_acc" in html
    assert (out / "figures" / "trajectory.png").stat().st_size > 1000
    import pandas as pd

    pd.testing.assert_frame_equal(
        pd.read_csv(out / "track.csv"),  # the validated rows, exact
        pd.read_csv(d / "track" / "track.csv"),
        check_dtype=False,
    )
    # a foreign directory is refused, one line, exit 2, untouched
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    res = CliRunner().invoke(app, ["trajectory", str(d / "track"), "--out", str(foreign)])
    assert res.exit_code == 2 and res.output.startswith("error: ")
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]
    # no track.csv
    res = CliRunner().invoke(app, ["trajectory", str(tmp_path), "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "track.csv" in res.output
    assert not (tmp_path / "x").exists()


# --- the transformers Trainer callback -------------------------------------------------------


def test_trainer_callback_matches_saved_checkpoints(tmp_path):
    from transformers import Trainer, TrainingArguments

    from specbound.track import SpecboundCallback

    model = tiny_bert(seed=3)
    model.save_pretrained(tmp_path / "init")
    data = [
        {"input_ids": x[i], "labels": y[i]} for x, y in random_batches(4, seed=4) for i in range(4)
    ]
    args = TrainingArguments(
        output_dir=str(tmp_path / "run"),
        max_steps=4,
        per_device_train_batch_size=4,
        learning_rate=1e-2,
        logging_steps=1,
        save_strategy="steps",
        save_steps=2,
        save_only_model=True,
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    cb = SpecboundCallback(every=2, out=tmp_path / "track", tensorboard=False)
    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[cb])
    trainer.train()
    header, rows = read_rows(tmp_path / "track" / "track.csv")
    assert [int(r["step"]) for r in rows] == [0, 2, 4]
    for r in rows:
        ck = tmp_path / "init" if r["step"] == "0" else tmp_path / "run" / f"checkpoint-{r['step']}"
        assert_row_matches(r, ck, tmp_path / "init")
    # the loss logged at the same step (logging happens after on_step_end) is in the row
    logged = {e["step"]: e["loss"] for e in trainer.state.log_history if "loss" in e}
    for r in rows[1:]:
        assert float(r["loss"]) == pytest.approx(logged[int(r["step"])], rel=1e-12)
    assert rows[0]["loss"] == ""
    assert "train_runtime" not in header


# --- the Lightning callback -----------------------------------------------------------------


@pytest.mark.parametrize("package", ["lightning", "pytorch_lightning"])
def test_lightning_callback_matches_saved_checkpoints(tmp_path, package):
    pl = pytest.importorskip("lightning.pytorch" if package == "lightning" else package)
    from specbound.track import lightning_callback

    SpecboundLightningCallback = lightning_callback(package)
    assert issubclass(SpecboundLightningCallback, pl.Callback)

    class Module(pl.LightningModule):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def training_step(self, batch, batch_idx):
            out = self.model(input_ids=batch[0], labels=batch[1])
            self.log("train_loss", out.loss)
            return out.loss

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-2)

    class Saver(pl.Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if trainer.global_step % 2 == 0:
                pl_module.model.save_pretrained(tmp_path / f"ck{trainer.global_step}")

    model = tiny_bert(seed=5)
    model.save_pretrained(tmp_path / "init")
    batches = random_batches(4, seed=6)
    trainer = pl.Trainer(
        max_steps=4,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        callbacks=[
            SpecboundLightningCallback(every=2, out=tmp_path / "track", tensorboard=False),
            Saver(),
        ],
    )
    trainer.fit(
        Module(model), train_dataloaders=torch.utils.data.DataLoader(batches, batch_size=None)
    )
    _, rows = read_rows(tmp_path / "track" / "track.csv")
    assert [int(r["step"]) for r in rows] == [0, 2, 4]
    for r in rows:
        ck = tmp_path / ("init" if r["step"] == "0" else f"ck{r['step']}")
        assert_row_matches(r, ck, tmp_path / "init")
    assert rows[0]["train_loss"] == "" and value(rows[-1]["train_loss"]) > 0


# --- the CSV file ---------------------------------------------------------------------------


def test_foreign_track_csv_is_refused(tmp_path):
    (tmp_path / "track.csv").write_text("step,loss\n1,2\n")
    with pytest.raises(SpecboundError, match="not written by specbound"):
        Tracker(tiny_bert(), every=1, out=tmp_path, tensorboard=False)
    assert (tmp_path / "track.csv").read_text() == "step,loss\n1,2\n"
    assert not (tmp_path / "track.json").exists()


def test_resume_appends_and_new_metric_widens_header(tmp_path):
    model = tiny_bert()
    t = Tracker(model, every=1, out=tmp_path, measures=["frobenius_sum"], tensorboard=False)
    t.step(0, a=1.0)
    t.step(0, a=9.0)  # the same step twice: evaluated once
    t.step(1, a=2.0, b=3.0)
    header, rows = read_rows(tmp_path / "track.csv")
    assert header[:5] == ["step", "wall_s", "analysis_s", "a", "b"]
    assert header[5] == "frobenius_sum"
    assert [(r["step"], r["a"], r["b"]) for r in rows] == [("0", "1.0", ""), ("1", "2.0", "3.0")]
    t2 = Tracker(model, every=1, out=tmp_path, measures=["frobenius_sum"], tensorboard=False)
    t2.step(2, a=4.0)
    _, rows = read_rows(tmp_path / "track.csv")
    assert [r["step"] for r in rows] == ["0", "1", "2"]
    assert rows[0]["frobenius_sum"] == rows[2]["frobenius_sum"]  # unchanged weights


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"every": 0}, "every"),
        ({"every": "often"}, "every"),
        ({"every": 2.5}, "every"),
        ({"budget": 1.5}, "budget"),
        ({"measures": ["nope"]}, "unknown measure"),
    ],
)
def test_bad_arguments(tmp_path, kw, match):
    with pytest.raises(SpecboundError, match=match):
        Tracker(tiny_bert(), out=tmp_path, tensorboard=False, **{"every": 1, **kw})
    assert list(tmp_path.iterdir()) == []


def test_metric_clashing_with_a_column(tmp_path):
    t = Tracker(tiny_bert(), every=1, out=tmp_path, measures=["frobenius_sum"], tensorboard=False)
    with pytest.raises(SpecboundError, match="frobenius_sum"):
        t.step(0, frobenius_sum=1.0)
    assert list(tmp_path.iterdir()) == []


# --- the auto schedule and pure helpers -------------------------------------------------------


def _brute_next(step, done, elapsed, total, nxt, budget):
    per = (elapsed - total) / done
    k = 1
    while total + nxt > budget * (elapsed + k * per + nxt) * (1 + 1e-12):
        k += 1
    return step + k


@pytest.mark.parametrize("seed", range(5))
def test_next_auto_step_is_the_smallest_within_budget(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        done = int(rng.integers(1, 1000))
        per = float(rng.uniform(1e-3, 1.0))
        total = float(rng.uniform(0, 5))
        elapsed = done * per + total
        nxt = float(rng.uniform(1e-3, 2))
        budget = float(rng.uniform(0.01, 0.5))
        got = next_auto_step(100, done, elapsed, total, nxt, budget)
        want = _brute_next(100, done, elapsed, total, nxt, budget)
        assert abs(got - want) <= 1  # ceil at the boundary
        k = got - 100
        assert k >= 1
        assert total + nxt <= budget * (elapsed + k * per + nxt) * (1 + 1e-9) or k == 1
    assert next_auto_step(7, 0, 1.0, 0.5, 0.5, 0.05) == 8


def test_auto_schedule_keeps_analysis_within_budget(tmp_path, monkeypatch):
    """every='auto' on a fake clock (1 s per step, 5 s per analysis, 5% budget): from the
    third evaluation on, cumulative analysis <= budget * wall, and each evaluation comes at the
    first step that allows it."""
    import specbound.analysis
    import specbound.track

    clock = [0.0]
    real = specbound.analysis.analyze

    def slow_analyze(*args, **kwargs):
        clock[0] += 5.0
        return real(*args, **kwargs)

    monkeypatch.setattr(specbound.track, "_clock", lambda: clock[0])
    monkeypatch.setattr(specbound.analysis, "analyze", slow_analyze)
    t = Tracker(
        tiny_bert(),
        every="auto",
        budget=0.05,
        out=tmp_path,
        measures=["frobenius_sum"],
        tensorboard=False,
    )
    for step in range(700):
        t.step(step)
        clock[0] += 1.0
    steps = [r["step"] for r in t.rows]
    assert steps[:3] == [0, 1, 285]
    assert 5 <= len(steps) <= 9
    total = 0.0
    for i, r in enumerate(t.rows):
        assert r["analysis_s"] == 5.0
        total += 5.0
        if i >= 2:
            wall = r["wall_s"] + r["analysis_s"]
            assert total <= 0.05 * wall * (1 + 1e-12)
            assert total > 0.05 * (wall - 1.0)  # one step earlier would have broken the budget


def test_half_change_step():
    steps = np.array([0, 10, 20, 30, 40])
    assert half_change_step(steps, np.array([0.0, 0.1, 0.2, 0.9, 1.0])) == 30
    assert half_change_step(steps, np.array([5.0, 4.0, 2.0, 1.0, 1.0])) == 20
    assert half_change_step(steps, np.array([1.0, np.nan, 1.0, 1.0, 1.0])) is None
    assert half_change_step(steps, np.array([np.nan, np.nan, np.nan, 0.0, 2.0])) == 40


@pytest.mark.parametrize(
    "body, match",
    [
        ("10,1,0.1,x,0.5\n", "column 'spectrum_adaptive'"),  # not a number
        ("10,inf,0.1,3.0,0.5\n", "column 'wall_s'"),  # not finite
        ("10,1\n", "line 2 has 2 fields"),  # a short row
        ("10,1,0.1,3.0,0.5\n10,2,0.1,3.1,0.6\n", "step 10 twice"),
    ],
)
def test_damaged_track_csv_is_one_line(tmp_path, body, match):
    from typer.testing import CliRunner

    from specbound.cli import app

    d = tmp_path / "t"
    d.mkdir()
    (d / "track.csv").write_text("step,wall_s,analysis_s,spectrum_adaptive,test_acc\n" + body)
    res = CliRunner().invoke(app, ["trajectory", str(d), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    assert res.output.startswith("error: ") and match in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_track_csv_fifo_is_refused(tmp_path):
    import os

    from specbound.trajectory_report import load_track

    d = tmp_path / "t"
    d.mkdir()
    os.mkfifo(d / "track.csv")
    with pytest.raises(SpecboundError, match="FIFO"):
        load_track(d)
