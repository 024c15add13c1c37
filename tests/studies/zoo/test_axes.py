"""Issue 52's zoo axes: label_noise, spectral_reg (+ strength), cells, design, pstar.csv."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("sklearn")

#: The six raw weights of a HF ViT layer, by their checkpoint names (restated here on purpose,
#: independent of the adapter the regularizer uses).
RAW = re.compile(
    r"(attention\.attention\.(query|key|value)|attention\.output\.dense|intermediate\.dense"
    r"|layer\.\d+\.output\.dense)\.weight$"
)


def grid_text(**over: str) -> str:
    axes = {
        "lr": "[0.003]",
        "weight_decay": "[0.0]",
        "label_noise": "[0.25]",
        "spectral_reg": "[none, nuclear, spectral]",
        "spectral_reg_strength": "[0.05]",
        "train_size": "[40]",
        "seed": "[3]",
    }
    axes.update(over)
    lines = ["task: digits", "design: adaptivity", "cells: [[1, 16], [2, 8]]", "axes:"]
    lines += [f"  {k}: {v}" for k, v in axes.items()]
    return "\n".join([*lines, "max_steps: 12", ""])


@pytest.fixture(scope="module")
def zoos(tmp_path_factory):
    """The same 6-model grid trained one at a time and as ensembles of 3 (one per cell)."""
    from specbound.studies.zoo import train_zoo

    root = tmp_path_factory.mktemp("axes")
    g = root / "grid.yaml"
    g.write_text(grid_text())
    single = train_zoo("digits", root / "single", grid=g, ensemble=1, workers=1)
    batched = train_zoo("digits", root / "batched", grid=g, ensemble=3, workers=1)
    return root, single, batched


def raw_norms(model_dir: Path) -> tuple[float, float]:
    """(sum of nuclear norms, sum of spectral norms) of the six raw weights of every layer,
    by dense numpy SVD of the saved checkpoint."""
    from safetensors.numpy import load_file

    w = load_file(str(model_dir / "model.safetensors"))
    mats = [v.astype(np.float64) for k, v in w.items() if RAW.search(k)]
    layers = json.loads((model_dir / "config.json").read_text())["num_hidden_layers"]
    assert len(mats) == 6 * layers
    s = [np.linalg.svd(m, compute_uv=False) for m in mats]
    return float(sum(x.sum() for x in s)), float(sum(x.max() for x in s))


def test_noise_share_is_exact_and_never_the_same_class():
    from specbound.studies.zoo.noise import noisy_labels
    from specbound.studies.zoo.tasks import get_task

    task = get_task("digits")
    data = task.data()
    for rho, n, seed in [(0.2, 200, 0), (0.1, 200, 1), (0.25, 37, 2), (0.5, 11, 3), (0.0, 50, 0)]:
        idx, _ = task.split(n, seed)
        y = data.y[idx]
        noisy, pos = noisy_labels(y, rho, seed, 10)
        changed = (noisy != y).nonzero().flatten().tolist()
        assert len(changed) == round(rho * n) and changed == pos
        assert torch.equal(
            noisy[[i for i in range(n) if i not in set(pos)]],
            y[[i for i in range(n) if i not in set(pos)]],
        )
        assert noisy.min() >= 0 and noisy.max() <= 9 and noisy.dtype == y.dtype
        again, _ = noisy_labels(y, rho, seed, 10)
        assert torch.equal(again, noisy)  # seeded
    # the replacement is uniform over the other 9 classes: every one of them is drawn
    y = torch.zeros(2000, dtype=torch.long)
    noisy, pos = noisy_labels(y, 0.5, 0, 10)
    assert sorted(set(noisy[pos].tolist())) == list(range(1, 10))


def test_zoo_records_noise_and_trains_on_it(zoos):
    import pandas as pd

    from specbound.studies.zoo import test_data, training_data
    from specbound.studies.zoo.tasks import get_task

    root, _, _ = zoos
    data = get_task("digits").data()
    df = pd.read_csv(root / "single" / "zoo.csv")
    assert {"label_noise", "spectral_reg", "spectral_reg_strength"} <= set(df.columns)
    assert len(df) == 6 and set(df["spectral_reg"]) == {"none", "nuclear", "spectral"}
    assert set(df.loc[df["spectral_reg"] == "none", "spectral_reg_strength"]) == {0.0}
    for model in df["model"]:
        d = root / "single" / model
        rec = json.loads((d / "data.json").read_text())
        clean = data.y[rec["train"]]
        _, y = training_data(d)  # checksum-verified: the labels training used
        assert int((y != clean).sum()) == round(0.25 * 40) == len(rec["label_noise"]["positions"])
        _, yte = test_data(d)
        assert torch.equal(yte, data.y[rec["test"]])  # the test labels stay clean
        m = json.loads((d / "metrics.json").read_text())
        assert m["label_noise_changed"] == 10


def test_regularized_norms_fall_against_the_unregularized_model(zoos):
    import pandas as pd

    root, _, _ = zoos
    for sub in ("single", "batched"):
        df = pd.read_csv(root / sub / "zoo.csv")
        for depth in (1, 2):
            cell = df[df["depth"] == depth].set_index("spectral_reg")["model"]
            none = raw_norms(root / sub / cell["none"])
            nuc = raw_norms(root / sub / cell["nuclear"])
            spec = raw_norms(root / sub / cell["spectral"])
            assert nuc[0] < none[0] - 1e-3, (sub, depth, nuc, none)
            assert spec[1] < none[1] - 1e-3, (sub, depth, spec, none)


def test_batched_path_trains_the_same_penalty(zoos):
    """The ensemble path (stacked weights, one svdvals per stack) gives the one-at-a-time
    path's weights up to floating-point order."""
    from safetensors.numpy import load_file

    root, single, _ = zoos
    for model in single["model"]:
        a = load_file(str(root / "single" / model / "model.safetensors"))
        b = load_file(str(root / "batched" / model / "model.safetensors"))
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=0, atol=2e-4, err_msg=f"{model} {k}")


def test_pstar_table_is_the_analysis_of_each_checkpoint(zoos):
    import pandas as pd

    from specbound.analysis import analyze

    root, single, _ = zoos
    table = pd.read_csv(root / "single" / "pstar.csv")
    assert list(table.columns) == [
        "model",
        "layer",
        "head",
        "matrix_type",
        "rank",
        "p_star",
        "log10_scale",
    ]
    assert list(dict.fromkeys(table["model"])) == list(single["model"])
    for model in single["model"]:
        a = analyze(str(root / "single" / model), cache=False, measures="spectrum_adaptive")
        mine = table[table["model"] == model].reset_index(drop=True)
        ref = a.matrices
        depth = int(re.search(r"depth-(\d+)", model).group(1))
        assert len(mine) == depth * (2 * 4 + 2) == len(ref)
        assert mine["matrix_type"].tolist() == ref["matrix_type"].tolist()
        np.testing.assert_array_equal(mine["p_star"], ref["p_star"])
        np.testing.assert_allclose(mine["log10_scale"], ref["log10_scale"], rtol=1e-12)


def test_zoo_json_round_trip(zoos):
    from specbound.io.readback import read_zoo_json
    from specbound.studies.zoo.plan import grid_of_record, model_name, plan

    root, single, _ = zoos
    meta = read_zoo_json(root / "single")
    assert meta["design"] == "adaptivity" and meta["cells"] == [[1, 16], [2, 8]]
    assert meta["num_models"] == 6
    p = plan(meta["task"], preset=meta["preset"], grid=grid_of_record(meta))
    rec = p.record()
    assert {k: meta[k] for k in rec} == rec
    names = [model_name(q) for q in p.points()]
    assert sorted(names) == sorted(m.removeprefix("models/") for m in single["model"])


def test_a_rerun_trains_nothing_and_another_design_is_refused(zoos, tmp_path):
    from specbound.errors import SpecboundError
    from specbound.studies.zoo import train_zoo

    root, single, _ = zoos
    out = root / "single"
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    again = train_zoo("digits", out, grid=root / "grid.yaml", ensemble=1, workers=1)
    assert again.equals(single)
    assert before == {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    other = tmp_path / "other.yaml"
    other.write_text(grid_text().replace("design: adaptivity\n", ""))
    with pytest.raises(SpecboundError, match="design"):
        train_zoo("digits", out, grid=other, ensemble=1, workers=1)


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"label_noise": "[1.0]"}, "axis 'label_noise' value 1.0: must be in [0, 1)"),
        ({"label_noise": "[-0.1]"}, "axis 'label_noise' value -0.1"),
        ({"label_noise": "[lots]"}, "not a finite number"),
        ({"spectral_reg": "[frobenius]"}, "must be one of none, nuclear, spectral"),
        ({"spectral_reg": "[nuclear, nuclear]"}, "twice"),
        ({"spectral_reg_strength": "[-1]"}, "must be >= 0"),
        ({"spectral_reg_strength": "[.inf]"}, "not a finite number"),
    ],
)
def test_bad_axis_values_are_one_line_errors(tmp_path, over, needle):
    from specbound.errors import SpecboundError
    from specbound.studies.zoo import train_zoo

    g = tmp_path / "grid.yaml"
    g.write_text(grid_text(**over))
    with pytest.raises(SpecboundError) as exc:
        train_zoo("digits", tmp_path / "z", grid=g, workers=1)
    msg = str(exc.value)
    assert needle in msg and "\n" not in msg and str(g) in msg
    assert not (tmp_path / "z").exists()


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda t: t.replace("  spectral_reg_strength: [0.05]\n", ""), "needs the axis"),
        (lambda t: t.replace("  spectral_reg: [none, nuclear, spectral]\n", ""), "needs the axis"),
        (lambda t: t.replace("design: adaptivity", "design: vibes"), "design 'vibes'"),
        (lambda t: t.replace("[[1, 16], [2, 8]]", "[[1, 16], [1, 16]]"), "twice"),
        (lambda t: t.replace("[[1, 16], [2, 8]]", "[[1, 0]]"), "must be an integer >= 1"),
        (lambda t: t.replace("[[1, 16], [2, 8]]", "[1, 16]"), "must be {depth: D, width: W}"),
        (lambda t: t.replace("[[1, 16], [2, 8]]", "[[1, 18]]"), "multiple of the 4"),
        (lambda t: t.replace("axes:\n", "axes:\n  depth: [1]\n"), "leave depth and width out"),
    ],
)
def test_bad_grid_keys_are_one_line_errors(tmp_path, edit, needle):
    from specbound.errors import SpecboundError
    from specbound.studies.zoo import train_zoo

    g = tmp_path / "grid.yaml"
    g.write_text(edit(grid_text()))
    with pytest.raises(SpecboundError) as exc:
        train_zoo("digits", tmp_path / "z", grid=g, workers=1)
    msg = str(exc.value)
    assert needle in msg and "\n" not in msg
    assert not (tmp_path / "z").exists()


def test_bad_zoo_json_fields_are_refused(tmp_path):
    from specbound.errors import SpecboundError
    from specbound.io.readback import read_zoo_json

    for bad in ({"design": 3}, {"cells": [[1]]}, {"cells": [[1, True]]}, {"cells": "1x16"}):
        p = tmp_path / "zoo.json"
        p.write_text(json.dumps({"task": "digits", **bad}))
        with pytest.raises(SpecboundError):
            read_zoo_json(p)


def test_missing_configurations_keep_to_the_cells():
    """A grid with ``cells`` names as missing only configurations of its cells."""
    import pandas as pd

    from specbound.studies.correlate import missing_configurations

    grid = {"depth": [1, 2], "width": [128, 64], "lr": [0.001, 0.003], "seed": [0, 1]}
    models = pd.DataFrame(
        {"depth": [1, 1, 2], "width": [128, 128, 64], "lr": [0.001, 0.003, 0.001]}
    )
    cells = [[1, 128], [2, 64]]
    assert missing_configurations(grid, models, cells) == ["depth=2 width=64 lr=0.003"]
    everything = missing_configurations(grid, models)  # the factorial reading: 8 - 3
    assert len(everything) == 5 and "depth=1 width=64 lr=0.001" in everything
