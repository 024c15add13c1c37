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
    ANALYSIS_COLUMNS,
    FORM_COLUMNS,
    NOTE_COLUMN,
    TYPE_COLUMNS,
    Tracker,
    TrackerConfig,
    half_change_step,
    next_auto_step,
    read_track,
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
    assert header[6:] == measure_names() + list(TYPE_COLUMNS) + list(ANALYSIS_COLUMNS) + list(
        FORM_COLUMNS
    ) + [NOTE_COLUMN]
    assert [int(r["step"]) for r in rows] == [0, 2, 4]
    # train_loss=nan at step 0: written empty and counted
    assert rows[0]["train_loss"] == "" and rows[0][NOTE_COLUMN] == "1"
    assert [r[NOTE_COLUMN] for r in rows[1:]] == ["0", "0"]
    assert list(read_track(d / "track")["step"]) == [0, 2, 4]
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
    d, _, init_sd, _model = plain_run
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
    assert "data:image/svg+xml;base64," in html
    assert "http://" not in html and "https://" not in html and 'src="/' not in html
    assert "gap = train_acc - test_acc" in html
    assert (out / "figures" / "trajectory.svg").stat().st_size > 1000
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
    with pytest.raises(SpecboundError, match="resume=True") as e:  # a second run: refused
        Tracker(model, every=1, out=tmp_path, measures=["frobenius_sum"], tensorboard=False)
    assert "already holds 2 rows" in str(e.value)
    t2 = Tracker(
        model, every=1, out=tmp_path, measures=["frobenius_sum"], tensorboard=False, resume=True
    )
    assert t2.step(1, a=9.0) is None  # already recorded: skipped
    t2.step(2, a=4.0)
    _, rows = read_rows(tmp_path / "track.csv")
    assert [r["step"] for r in rows] == ["0", "1", "2"]
    assert rows[0]["frobenius_sum"] == rows[2]["frobenius_sum"]  # unchanged weights


@pytest.mark.parametrize(
    ("kw", "match"),
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


def test_tracker_config_is_the_keyword_form(tmp_path):
    cfg = TrackerConfig(out=tmp_path / "a", every=2, measures=["frobenius_sum"], tensorboard=False)
    t = Tracker(tiny_bert(), cfg)
    assert t.settings is cfg and t.every == 2 and t.measures == ["frobenius_sum"]
    kw = Tracker(
        tiny_bert(), out=tmp_path / "b", every=2, measures=["frobenius_sum"], tensorboard=False
    )
    assert kw.settings == TrackerConfig(
        out=tmp_path / "b", every=2, measures=["frobenius_sum"], tensorboard=False
    )
    over = Tracker(tiny_bert(), cfg, out=tmp_path / "c", every=3)  # keywords replace fields
    assert over.every == 3 and over.out == tmp_path / "c" and over.measures == ["frobenius_sum"]
    with pytest.raises(TypeError, match="unexpected keyword argument 'evry'"):
        Tracker(tiny_bert(), cfg, evry=3)
    with pytest.raises(TypeError, match="required keyword-only argument: 'out'"):
        Tracker(tiny_bert(), every=3)
    with pytest.raises(SpecboundError, match="settings must be a TrackerConfig"):
        Tracker(tiny_bert(), 100)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"every": 0}, r"^every must be 'auto' or an integer >= 1, got 0 \(int\)$"),
        ({"every": True}, r"^every must be 'auto' or an integer >= 1, got True \(bool\)$"),
        ({"l_phi": -1}, r"^l_phi must be > 0, got -1"),
        ({"grid_m": 0}, r"^grid_m must be an integer >= 1, got 0$"),
        ({"grid_m": 20000}, r"^grid_m must be an integer <= 10000, got 20000$"),
        ({"device": "tpu"}, r"device='tpu'"),
        ({"measures": "htsr_alpha,nope"}, r"^measures: unknown measure 'nope'; choose from "),
        ({"measures": 3}, r"^measures must be a list of measures, got 3 \(int\)$"),
        ({"tensorboard": "no"}, r"^tensorboard must be True or False, got 'no'"),
        ({"data_options": 3}, r"^data_options must be a dict, got 3"),
        ({"budget": 0.0}, "budget"),
        ({"strict": 1}, "strict must be True or False, got 1"),
        ({"resume": "yes"}, "resume must be True or False"),
    ],
)
def test_tracker_config_checks_when_made(tmp_path, kw, match):
    with pytest.raises(SpecboundError, match=match):
        TrackerConfig(out=tmp_path, **kw)
    assert list(tmp_path.iterdir()) == []


def test_tracker_config_refuses_an_empty_out():
    # out='' was the current directory: a track.csv written wherever the script ran
    with pytest.raises(SpecboundError, match=r"^out must be a non-empty path, got ''$"):
        TrackerConfig(out="")


def test_tracker_config_takes_one_measure_name_as_a_string(tmp_path):
    # a bare string was iterated into letters: "unknown measure 'h'"
    cfg = TrackerConfig(out=tmp_path, measures="htsr_alpha", data_measures="inverse_margin")
    assert cfg.measures == ["htsr_alpha"]
    assert cfg.data_measures == ["inverse_margin"]
    cfg = TrackerConfig(out=tmp_path, measures=("htsr_alpha", "frobenius_sum"))
    assert cfg.measures == ["htsr_alpha", "frobenius_sum"]


@pytest.mark.parametrize("step", ["3", 3.0, None, True])
def test_step_must_be_an_integer(tmp_path, step):
    t = Tracker(tiny_bert(), every=1, out=tmp_path, measures=["frobenius_sum"], tensorboard=False)
    with pytest.raises(SpecboundError, match=r"^step must be an integer, got "):
        t.step(step)
    with pytest.raises(SpecboundError, match=r"^step must be an integer, got "):
        t.evaluate(step)
    assert t.step(np.int64(2)) is not None  # numpy integers are integers


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
    import specbound.track.live
    import specbound.track.tracker

    clock = [0.0]
    real = specbound.track.live.analyze  # where the tracker's analysis looks it up

    def slow_analyze(*args, **kwargs):
        clock[0] += 5.0
        return real(*args, **kwargs)

    monkeypatch.setattr(specbound.track.tracker, "_clock", lambda: clock[0])
    monkeypatch.setattr(specbound.track.live, "analyze", slow_analyze)
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
    ("body", "match"),
    [
        ("10,1,0.1,x,0.5\n", "column 'spectrum_adaptive'"),  # not a number
        ("10,inf,0.1,3.0,0.5\n", "column 'wall_s'"),  # not finite
        ("10,1\n", "line 2 has 2 fields"),  # a short row
        ("10,1,0.1,3.0,0.5\n10,2,0.1,3.1,0.6\n", "step 10 twice"),
        ("10,1,0.1,3.0,5.0\n", "row 2, column 'test_acc': 5.0 is outside [0, 1]"),
        ("2.5,1,0.1,3.0,0.5\n", "row 2, column 'step': 2.5 is not a whole number"),
        ("0,1,0.1,3.0,0.5\n-3,1,0.1,3.0,0.5\n", "row 3, column 'step': -3.0 is outside"),
        ("10,-1,0.1,3.0,0.5\n", "row 2, column 'wall_s'"),
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

    from specbound.report.pages.trajectory import load_track

    d = tmp_path / "t"
    d.mkdir()
    os.mkfifo(d / "track.csv")
    with pytest.raises(SpecboundError, match="FIFO"):
        load_track(d)


# --- outputs that stay usable (issue 20) ----------------------------------------------------


def small_tracker(out, **kw):
    return Tracker(
        tiny_bert(), every=1, out=out, measures=["frobenius_sum"], tensorboard=False, **kw
    )


def test_full_disk_leaves_whole_rows_and_names_the_file(tmp_path, monkeypatch):
    import errno

    import specbound.io.growing as growing

    t = small_tracker(tmp_path)
    for step in range(3):
        t.step(step, train_loss=1.0 / (step + 1))
    good = (tmp_path / "track.csv").read_bytes()

    def half_then_full(fd, data):  # a real full disk: part of the row lands, then ENOSPC
        os.write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    import os

    monkeypatch.setattr(growing, "_write", half_then_full)  # the track folder's append
    with pytest.raises(SpecboundError, match="No space left") as e:
        t.step(3, train_loss=0.2)
    assert str(tmp_path / "track.csv") in str(e.value) and "\n" not in str(e.value)
    assert (tmp_path / "track.csv").read_bytes() == good  # only whole rows
    assert list(read_track(tmp_path)["step"]) == [0, 1, 2]
    monkeypatch.undo()
    t.step(4, train_loss=0.1)  # the disk has room again: the run goes on
    assert list(read_track(tmp_path)["step"]) == [0, 1, 2, 4]


def test_full_disk_while_widening_the_header(tmp_path, monkeypatch):
    import errno

    import specbound.io.growing

    t = small_tracker(tmp_path)
    t.step(0, a=1.0)
    good = (tmp_path / "track.csv").read_bytes()
    real = specbound.io.growing.atomic_file  # where the track folder's writer looks it up

    def full(path, mode="wb", sync=False):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(specbound.io.growing, "atomic_file", full)
    with pytest.raises(SpecboundError, match=r"track\.csv"):
        t.step(1, a=2.0, b=3.0)  # a new metric: the file is rewritten
    assert (tmp_path / "track.csv").read_bytes() == good
    monkeypatch.setattr(specbound.io.growing, "atomic_file", real)
    assert list(read_track(tmp_path)["step"]) == [0]
    t.step(2, a=4.0, b=5.0)  # the disk has room again: the run goes on (its checksum kept)
    assert list(read_track(tmp_path)["step"]) == [0, 2]


def test_non_finite_metrics_are_written_empty_and_counted(tmp_path):
    from typer.testing import CliRunner

    from specbound.cli import app

    t = small_tracker(tmp_path)
    t.step(0, train_loss=math.inf, test_loss=-math.inf, acc=0.5)
    t.step(1, train_loss=math.nan, test_loss=1.0, acc=0.6, big=10**400)
    t.step(2, train_loss=0.5, test_loss=0.9, acc=0.7)
    _header, rows = read_rows(tmp_path / "track.csv")
    assert [(r["train_loss"], r["test_loss"], r[NOTE_COLUMN]) for r in rows] == [
        ("", "", "2"),
        ("", "1.0", "2"),
        ("0.5", "0.9", "0"),
    ]
    assert "inf" not in (tmp_path / "track.csv").read_text().lower()
    assert "nan" not in (tmp_path / "track.csv").read_text().lower()
    df = read_track(tmp_path)
    assert np.isnan(df["train_loss"][0]) and df["train_loss"][2] == 0.5
    res = CliRunner().invoke(app, ["trajectory", str(tmp_path), "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output


def test_huge_finite_metrics_are_drawn_clipped_and_said(tmp_path):
    """A diverging run (a finite loss of 1.7e308): the page is drawn, its caption says how many
    values were clipped for drawing, and track.csv keeps the value."""
    from typer.testing import CliRunner

    from specbound.cli import app

    t = small_tracker(tmp_path)
    t.step(0, train_loss=1.0, test_loss=1.0, acc=0.5)
    t.step(1, train_loss=1.7e308, test_loss=-1.7e308, acc=0.6)
    t.step(2, train_loss=0.5, test_loss=0.9, acc=0.7)
    res = CliRunner().invoke(app, ["trajectory", str(tmp_path), "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r" / "report.html").read_text()
    assert "2 values beyond ±1e300 are drawn at ±1e300" in html
    assert read_track(tmp_path / "r")["train_loss"][1] == 1.7e308


def test_overwrite_replaces_an_earlier_run(tmp_path):
    t = small_tracker(tmp_path)
    t.step(0, a=1.0)
    t.step(1, a=2.0)
    with pytest.raises(SpecboundError, match="pass resume=True to continue it or overwrite=True"):
        small_tracker(tmp_path)
    with pytest.raises(SpecboundError, match="not both"):
        small_tracker(tmp_path, resume=True, overwrite=True)
    t2 = small_tracker(tmp_path, overwrite=True)
    assert (tmp_path / "track.csv").exists()  # nothing replaced before the first row
    t2.step(0, a=5.0)
    _, rows = read_rows(tmp_path / "track.csv")
    assert [(r["step"], r["a"]) for r in rows] == [("0", "5.0")]
    # a foreign track.csv is never overwritten
    other = tmp_path / "other"
    other.mkdir()
    (other / "track.csv").write_text("step,wall_s,analysis_s\n1,2,3\n")
    with pytest.raises(SpecboundError, match="not written by specbound"):
        small_tracker(other, overwrite=True)
    assert (other / "track.csv").read_text() == "step,wall_s,analysis_s\n1,2,3\n"


def test_a_user_file_named_tensorboard_is_one_line(tmp_path):
    pytest.importorskip("tensorboard")
    (tmp_path / "tensorboard").write_text("mine")
    with pytest.raises(SpecboundError, match="tensorboard") as e:
        Tracker(tiny_bert(), every=1, out=tmp_path, measures=["frobenius_sum"], tensorboard=True)
    assert not isinstance(e.value, FileExistsError) and "\n" not in str(e.value)
    assert (tmp_path / "tensorboard").read_text() == "mine"


def test_nan_weights_one_warning_and_empty_measures(tmp_path):
    model = tiny_bert()
    t = Tracker(
        model,
        every=1,
        out=tmp_path,
        measures=["frobenius_sum", "spectrum_adaptive"],
        tensorboard=False,
    )
    t.step(0, loss=1.0)
    with torch.no_grad():
        model.bert.encoder.layer[0].attention.self.query.weight[0, 0] = math.nan
    import warnings

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        t.step(1, loss=0.9)
        t.step(2, loss=0.8)
    mine = [w for w in rec if "specbound" in str(w.message)]
    assert len(mine) == 1 and "not finite" in str(mine[0].message)
    _, rows = read_rows(tmp_path / "track.csv")
    assert rows[0]["frobenius_sum"] != ""
    assert [
        (r["step"], r["frobenius_sum"], r["spectrum_adaptive"], r["loss"]) for r in rows[1:]
    ] == [
        ("1", "", "", "0.9"),
        ("2", "", "", "0.8"),
    ]
    assert t.failed_evaluations == 2
    strict = Tracker(
        model,
        every=1,
        out=tmp_path / "s",
        measures=["frobenius_sum"],
        tensorboard=False,
        strict=True,
    )
    with pytest.raises(SpecboundError, match="not finite"):
        strict.step(0)


def test_read_track_leaves_out_an_interrupted_last_row(tmp_path):
    t = small_tracker(tmp_path)
    t.step(0, a=1.0)
    t.step(1, a=2.0)
    with (tmp_path / "track.csv").open("a") as fh:
        fh.write("2,0.5,0.1")  # a crash mid-row (no newline)
    with pytest.warns(UserWarning, match="interrupted"):
        df = read_track(tmp_path)
    assert list(df["step"]) == [0, 1]


# --- data measures during training (SPEC 11 + 12) --------------------------------------------


def test_tracker_data_measures_equal_the_post_hoc_call(tmp_path):
    from specbound.measures.data import data_measure_names
    from specbound.track import data_measures

    model = tiny_bert(seed=7)
    batches = random_batches(3, seed=8)
    t = Tracker(
        model,
        every=2,
        out=tmp_path / "t",
        measures=["frobenius_sum"],
        tensorboard=False,
        data=batches,
        data_options={"max_examples": 8, "seed": 3},
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    saved = {}
    rng_before = None
    for step, (x, y) in enumerate(random_batches(3, seed=9)):
        rng_before = torch.random.get_rng_state()
        if t.step(step, train_loss=1.0) is not None:
            assert torch.equal(torch.random.get_rng_state(), rng_before)  # training RNG kept
            saved[step] = {k: v.clone() for k, v in model.state_dict().items()}
        out = model(input_ids=x, labels=y)
        out.loss.backward()
        opt.step()
        opt.zero_grad()
    header, rows = read_rows(tmp_path / "t" / "track.csv")
    assert [int(r["step"]) for r in rows] == [0, 2]
    assert [c for c in header if c in data_measure_names()] == data_measure_names()
    assert "log_spectral_product" not in header  # read for the margin forms, not written
    for r in rows:
        fresh = tiny_bert(seed=0)
        fresh.load_state_dict(saved[int(r["step"])])
        want = data_measures(fresh, batches, max_examples=8, seed=3)
        assert want.n == 12 and want.examples == 8
        for name in data_measure_names():
            got = value(r[name])
            assert got is not None and want[name] is not None, name
            assert math.isclose(got, want[name], rel_tol=1e-10), (name, got, want[name])


def test_analysis_columns_equal_the_post_hoc_attributes(plain_run):
    d, _, _, _ = plain_run
    a = analyze(d / "ck4", init=d / "init", cache=False)
    _, rows = read_rows(d / "track" / "track.csv")
    for c in ANALYSIS_COLUMNS:
        if not hasattr(a, c):
            pytest.skip(f"Analysis.{c} is not there yet (helper A2)")
        want = getattr(a, c)
        want = want() if callable(want) else want
        got = value(rows[-1][c])
        if want is None:
            assert got is None
        else:
            assert math.isclose(got, float(want), rel_tol=1e-10, abs_tol=1e-300), c
    forms = a.fixed_index_forms()  # protocol v5's fixed-index forms (SPEC 10)
    assert list(forms) == list(FORM_COLUMNS)
    for c in FORM_COLUMNS:
        assert math.isclose(value(rows[-1][c]), forms[c], rel_tol=1e-10), c


def test_bad_data_options(tmp_path):
    with pytest.raises(SpecboundError, match="data_options key"):
        small_tracker(tmp_path, data=random_batches(1), data_options={"draws": 5})
    with pytest.raises(SpecboundError, match="need data="):
        small_tracker(tmp_path, data_measures=["sharpness"])
    with pytest.raises(SpecboundError, match="unknown data measure"):
        small_tracker(tmp_path, data=random_batches(1), data_measures=["flat"])
    assert list(tmp_path.iterdir()) == []


def test_track_json_reader_refuses_a_foreign_or_damaged_file(tmp_path):
    from specbound.io.readback import ReadbackError
    from specbound.track.trackfile import read_track_json

    (tmp_path / "track.json").write_text('{"format": "specbound-track/1", "format": "x"}')
    with pytest.raises(ReadbackError, match=r"track\.json"):
        read_track_json(tmp_path)  # a key twice
    (tmp_path / "track.json").write_text('{"format": "other/1"}')
    with pytest.raises(ReadbackError, match="'format' is 'other/1'"):
        read_track_json(tmp_path)
    (tmp_path / "track.json").write_text('{"format": "specbound-track/1", "preset": null}')
    assert read_track_json(tmp_path / "track.json")["preset"] is None
