"""Protocol v5's modal form and switching share (SPEC 10) against brute force from the saved
checkpoints.

The brute force shares no code with specbound: tests/support/reference.py (explicit QK/OV
products, numpy's dense SVD, linear-space c(A, p), p* the first minimizer on the grid), then
plain dicts and ``collections.Counter`` for the cells (equal depth, width, heads and n), the
modal p* per (layer, type, head) (ties: the smallest p) and the shares.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specbound.measures.spectrum_adaptive import (
    log_bound_at_grid_points,
    modal_p_star,
    switching_counts,
)
from specbound.studies import correlate as C
from specbound.studies.correlate.modal import PSTAR_COLUMNS, switch_shares
from tests.support.checkpoints import write_tiny_bert
from tests.support.reference import reference

HEADER = (
    "model,init,depth,width,lr,train_size,seed,train_acc,test_acc,train_loss,test_loss,converged"
)


def write_zoo(d: Path, seeds: tuple[int, ...] = (0, 1), design: str | None = None) -> Path:
    """Two cells (depth 1 and 2, width 8, 2 heads, n = 200) of three learning rates x ``seeds``
    tiny BERTs each (with their inits), weight scales 0.05-1.3 so that p* moves between models
    of a cell; made-up metrics. ``design``: zoo.json's (then written, with the axes)."""
    rows = [HEADER]
    k = 0
    for depth in (1, 2):
        for lr, scale in ((0.001, 0.05), (0.003, 0.15), (0.01, 1.0)):
            for seed in seeds:
                k += 1
                s = scale * (1 + 0.3 * (seed % 2))
                for sub, sd in (("", k + 17 * seed), ("/init", 100 + k + 17 * seed)):
                    write_tiny_bert(
                        d / f"m{k}{sub}", layers=depth, hidden=8, heads=2, ffn=16, seed=sd,
                        scale=s * (0.9 if sub else 1.0), ffn_low_rank=2,
                    )  # fmt: skip
                acc = 0.9 - 0.03 * ((k + seed) % 5)
                rows.append(f"m{k},m{k}/init,{depth},8,{lr},200,{seed},1.0,{acc},0.005,0.4,true")
    (d / "zoo.csv").write_text("\n".join(rows) + "\n")
    if design is not None:
        meta = {"task": "digits", "design": design, "axes": ["depth", "lr", "seed"]}
        (d / "zoo.json").write_text(json.dumps(meta))
    return d


def c_brute(kept: list[float], scale: float, n: int, p: float) -> float:
    if not kept:
        return 0.0
    sp = float(len(kept)) if p == 0 else math.fsum(x**p for x in kept)
    return sp ** (1 / (p + 2)) * scale ** (p / (p + 2)) * n ** ((p + 1) / (p + 2))


def brute_modal(zoo: Path, names: list[str]) -> tuple[dict, dict, dict]:
    """({model: log10 B_modal}, {cell: (switched, entries)}, {(model, position): p*})."""
    refs, cell_of, dims = {}, {}, {}
    for name in names:
        cfg = json.loads((zoo / name / "config.json").read_text())
        refs[name] = reference(zoo / name, l_phi=1.13)
        L, N, H = cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"]
        cell_of[name] = (L, N, H, 200)
        dims[name] = (L, N)
    votes: dict = defaultdict(Counter)
    for name, ref in refs.items():
        for r in ref["rows"]:
            votes[(cell_of[name], r["layer"], r["matrix_type"], r["head"])][r["p_star"]] += 1
    modal = {}
    for key, counter in votes.items():
        top = max(counter.values())
        modal[key] = min(p for p, c in counter.items() if c == top)  # ties: smallest p
    values, shares, pstar = {}, defaultdict(lambda: [0, 0]), {}
    for name, ref in refs.items():
        L, N = dims[name]
        total = 0.0
        for r in ref["rows"]:
            pm = modal[(cell_of[name], r["layer"], r["matrix_type"], r["head"])]
            total += c_brute(r["kept"], r["scale"], N, pm)
            shares[cell_of[name]][0] += r["p_star"] != pm
            shares[cell_of[name]][1] += 1
            pstar[(name, r["layer"], r["matrix_type"], r["head"])] = r["p_star"]
        values[name] = math.log10(total + math.sqrt(L))
    return values, dict(shares), pstar


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    zoo = write_zoo(tmp_path_factory.mktemp("v5") / "zoo")
    res = C.correlate(zoo, axes="depth,lr", bootstrap=200, cache=False)
    out = res.to_dir(zoo.parent / "out")
    return zoo, res, out


def test_modal_form_and_shares_equal_brute_force(result):
    zoo, res, out = result
    names = list(res.models["model"])
    values, shares, pstar = brute_modal(zoo, names)
    got = dict(zip(names, res.models["spectrum_adaptive_modal"], strict=True))
    err = max(abs(got[n] - values[n]) for n in names)
    print(f"modal form: max abs error {err:.2e} over {len(names)} models")
    assert err < 1e-10
    table = pd.read_csv(out / "pstar.csv")
    assert list(table.columns) == list(PSTAR_COLUMNS)
    mine = {
        (m, int(la), t, int(h)): p
        for m, la, t, h, p in table[["model", "layer", "matrix_type", "head", "p_star"]].to_numpy()
    }
    assert mine == pstar  # every p* of every matrix, as the brute force picks it
    summary = json.loads((out / "correlate.json").read_text())["p_switch_share"]
    by_cell = {c["cell"]: (c["n_switched"], c["n_entries"]) for c in summary["cells"]}
    want = {f"depth={L} width={N} heads={H} n={n}": tuple(v) for (L, N, H, n), v in shares.items()}
    assert by_cell == want
    assert all(0 < s < e for s, e in by_cell.values())  # p* does move inside each cell
    assert summary["n_switched"] == sum(s for s, _ in want.values())
    assert summary["pooled"] == summary["n_switched"] / summary["n_entries"]
    # the share is reproducible from pstar.csv alone
    assert switch_shares(table[["model", "cell", "layer", "head", "matrix_type", "p_star"]]) == (
        summary
    )


def test_models_csv_columns(result):
    _, res, out = result
    m = pd.read_csv(out / "models.csv")
    cols = list(m.columns)
    forms = [
        "spectrum_adaptive_fixed_p0.5",
        "spectrum_adaptive_fixed_p1",
        "spectrum_adaptive_fixed_p2",
        "spectrum_adaptive_modal",
    ]
    assert cols[-4:] == forms and cols.index("adaptive_headroom_min") == len(cols) - 5
    for f in forms:  # columns, not measures: no rows of their own outside an adaptivity zoo
        assert f not in res.measures
    # the proxy never exceeds its modal form (p* minimizes per matrix)
    assert (m["spectrum_adaptive"] <= m["spectrum_adaptive_modal"] + 1e-12).all()


def test_modal_equals_the_proxy_exactly_where_nothing_switches():
    rng = np.random.default_rng(0)
    grid = np.arange(5) / 2.0
    curves = rng.normal(size=(3, 5))
    p_star = grid[np.argmin(curves, axis=1)]
    direct = math.log(np.exp(np.min(curves, axis=1)).sum() + math.sqrt(2))
    assert log_bound_at_grid_points(curves, grid, p_star, 2) == pytest.approx(direct, abs=1e-14)
    assert math.isnan(log_bound_at_grid_points(curves, grid, np.array([0.0, 0.25, 1.0]), 2))


@pytest.mark.parametrize(
    ("table", "modal", "switched"),
    [
        ([[0, 1], [0, 1], [1, 1]], [0, 1], 1),
        ([[1, 0], [0, 1]], [0, 0], 2),  # ties: the smallest p
        ([[2, np.nan], [1, np.nan], [2, np.nan]], [2, np.nan], 1),  # NaN casts no vote
        ([[0.5, 0.5]], [0.5, 0.5], 0),
    ],
)
def test_modal_p_star_by_table(table, modal, switched):
    got = modal_p_star(np.array(table, dtype=float))
    np.testing.assert_array_equal(got, np.array(modal, dtype=float))
    s, e = switching_counts(np.array(table, dtype=float), got)
    assert s == switched and e == int(np.sum(~np.isnan(np.array(table, dtype=float))))


def test_re_evaluated_folder_keeps_the_forms_and_shares(result, tmp_path):
    """A folder re-evaluated from its models.csv (no model analyzed again) writes the same
    models.csv, pstar.csv and p_switch_share; pooled with itself renamed, each zoo keeps its
    own cells."""
    from specbound.studies.correlate.multizoo import pool, read_part

    _, _, out = result
    again = pool([read_part(out)], bootstrap=200).to_dir(tmp_path / "again")
    assert (again / "pstar.csv").read_text() == (out / "pstar.csv").read_text()
    a, b = pd.read_csv(out / "models.csv"), pd.read_csv(again / "models.csv")
    assert list(b.drop(columns="zoo").columns) == list(a.columns)  # pooling adds 'zoo' only
    pd.testing.assert_frame_equal(b.drop(columns="zoo"), a)
    third = pool([read_part(again)], bootstrap=200).to_dir(tmp_path / "third")
    for f in ("models.csv", "pstar.csv", "differences.csv"):
        assert (third / f).read_text() == (again / f).read_text(), f
    j3, j2 = (json.loads((d / "correlate.json").read_text()) for d in (third, again))
    assert {k: v for k, v in j3.items() if k != "notes"} == {
        k: v for k, v in j2.items() if k != "notes"
    }
    first = json.loads((out / "correlate.json").read_text())
    second = json.loads((again / "correlate.json").read_text())
    assert second["p_switch_share"] == first["p_switch_share"]
    assert second["measures"] == first["measures"]
