"""``specbound study``: Holm over every primary row of a study, and the replicated rule.

The folders are written by hand (correlate.json, differences.csv, models.csv), so every figure
below is computed here from its definition, sharing no code with the package.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specbound.errors import SpecboundError
from specbound.studies.correlate.multizoo import study
from tests.support.cli_runner import run_cli

CONTRASTS = [
    ("P1", "spectrum_adaptive", "norm_based"),
    ("P2", "spectrum_adaptive", "num_parameters"),
    ("P3", "norm_based", "num_parameters"),
]

MEASURES = ["spectrum_adaptive", "norm_based", "num_parameters", "sharpness"]


def folder(root: Path, name: str, ps: list[float], deltas: list[float], seeds: list[int]) -> Path:
    d = root / name
    d.mkdir()
    rows = []
    for (c, m, v), p, delta in zip(CONTRASTS, ps, deltas, strict=True):
        lo, hi = (delta - 0.1, delta + 0.1) if abs(delta) > 0.1 else (delta - 0.2, delta + 0.2)
        rows.append(
            dict(
                measure=m,
                versus=v,
                statistic="tau_fixed_n",
                delta=delta,
                low=lo,
                high=hi,
                family="primary",
                contrast=c,
                B=10000,
                p=p,
                p_holm=p,
                q_bh=np.nan,
                verdict="better" if lo > 0 else "worse" if hi < 0 else "undetermined",
                evidence="B = 10000; 48 configurations",
            )
        )
    rows.append(
        dict(
            measure="sharpness",
            versus="num_parameters",
            statistic="psi",
            delta=0.1,
            low=0.0,
            high=0.2,
            family="exploratory",
            contrast="",
            B=1000,
            p=0.04,
            p_holm=np.nan,
            q_bh=0.2,
            verdict="undetermined",
            evidence="",
        )
    )
    pd.DataFrame(rows).to_csv(d / "differences.csv", index=False)
    n = len(seeds)
    pd.DataFrame(
        {
            "model": [f"m{s}" for s in seeds],
            "depth": [1] * n,
            "seed": seeds,
            "gap": [0.1] * n,
            **{m: [0.5 + s for s in seeds] for m in MEASURES if m != "num_parameters"},
            "num_parameters": [1000 + s for s in seeds],  # a count: an integer >= 1
        }
    ).to_csv(d / "models.csv", index=False)
    meta = {
        "protocol": 3,
        "task": "digits",
        "axes": ["depth"],
        "measures": MEASURES,
        "gap": "accuracy",
        "n_configurations": 48,
        "manifest": f"zoos/{name}/zoo.csv",
    }
    (d / "correlate.json").write_text(json.dumps(meta))
    return d


def holm(p):
    p = np.asarray(p, float)
    order = np.argsort(p)
    m = len(p)
    adj = np.empty(m)
    run = 0.0
    for k, i in enumerate(order):
        run = max(run, (m - k) * p[i])
        adj[i] = min(1.0, run)
    return adj


def test_holm_over_the_whole_study_and_the_replicated_rule(tmp_path):
    a = folder(tmp_path, "a", [0.0001, 0.004, 0.3], [0.3, 0.3, 0.02], [0, 1, 2])
    b = folder(tmp_path, "b", [0.0002, 0.02, 0.5], [0.3, 0.3, 0.01], [3, 4, 5])
    pooled = folder(tmp_path, "ab", [0.0001, 0.001, 0.2], [0.3, 0.3, 0.02], [0, 1, 2, 3, 4, 5])
    fixed = folder(tmp_path, "fixed", [0.01, 0.02, 0.03], [0.3, 0.3, 0.3], [0, 1, 2])
    s = study([fixed], [("digits", [a, b], pooled)])
    prim = s.primary
    assert len(prim) == 12
    # protocol v4: "fixed" (seeds 0-2, like a) and the pooled folder share models with a and
    # b, so Holm runs over the 6 rows of the two independent replicates only
    fam = prim[prim["independence"] == "family"]
    assert set(fam["folder"]) == {str(a), str(b)}
    np.testing.assert_allclose(fam["p_holm"], holm(fam["p"]), rtol=0, atol=1e-15)
    sec = prim[prim["independence"] == "secondary"]
    np.testing.assert_allclose(sec["p_holm"], sec["p"], rtol=0, atol=0)  # their folder's own
    assert s.summary()["independent_zoos"] == 2
    assert sum(s.summary()["verdicts"].values()) == 6
    # P1: both replicates better after Holm over 6 rows -> replicated
    # P2: b's p 0.02 x 4 ranks = 0.08 >= 0.05: not better alone -> not replicated
    # P3: undetermined in both -> not replicated
    rep = prim[prim["group"] == "digits"].groupby("contrast")["replicated"].first().to_dict()
    assert rep == {"P1": "yes", "P2": "no", "P3": "no"}
    assert set(prim.loc[prim["folder"] == str(fixed), "replicated"]) == {""}
    b_p2 = prim[(prim["folder"] == str(b)) & (prim["contrast"] == "P2")].iloc[0]
    assert b_p2["p_holm"] >= 0.05 and b_p2["verdict"] != "better"
    assert list(s.exploratory["family"]) == ["exploratory"] * 4


def test_replicates_sharing_seeds_are_refused(tmp_path):
    a = folder(tmp_path, "a", [0.01] * 3, [0.3] * 3, [0, 1, 2])
    fixed = folder(tmp_path, "fixed", [0.01] * 3, [0.3] * 3, [0, 1, 2])
    with pytest.raises(Exception, match="share seed"):
        study([], [("digits", [a, fixed], None)])


def test_cli_writes_the_study_and_refuses_other_folders(tmp_path):
    pytest.importorskip("matplotlib")  # needs the extra
    a = folder(tmp_path, "a", [0.0001, 0.004, 0.3], [0.3, 0.3, 0.02], [0, 1, 2])
    b = folder(tmp_path, "b", [0.0002, 0.02, 0.5], [0.3, 0.3, 0.01], [3, 4, 5])
    out = tmp_path / "study"
    r = run_cli("study", "--replicates", f"digits={a},{b}", "--out", out, "--quiet")
    assert r.code == 0, r.err
    assert {p.name for p in out.iterdir()} >= {
        "primary.csv",
        "exploratory.csv",
        "study.json",
        "report.html",
    }
    json.loads((out / "study.json").read_text(), parse_constant=lambda c: 1 / 0)
    html = (out / "report.html").read_text()
    assert html.index("Primary contrasts") < html.index("Exploratory rows")
    (tmp_path / "plain").mkdir()
    r = run_cli("study", tmp_path / "plain", "--out", tmp_path / "x")
    assert "not a folder written by 'specbound correlate'" in r.one_error_line()
    assert not (tmp_path / "x").exists()


def test_summary_is_the_json_and_to_dir_writes_the_folder(tmp_path):
    a = folder(tmp_path, "a", [0.0001, 0.004, 0.3], [0.3, 0.3, 0.02], [0, 1, 2])
    b = folder(tmp_path, "b", [0.0002, 0.02, 0.5], [0.3, 0.3, 0.01], [3, 4, 5])
    s = study([], [("digits", [a, b], None)])
    summary = s.summary()
    json.dumps(summary, allow_nan=False)  # JSON-ready: no DataFrame, NaN or numpy scalar
    assert list(summary)[-1] == "primary" and len(summary["primary"]) == len(s.primary)
    assert list(summary["primary"][0]) == list(s.primary.columns)
    seen = []
    out = s.to_dir(tmp_path / "out", extra=lambda tmp: seen.append(sorted(os.listdir(tmp))))
    assert seen and {"primary.csv", "exploratory.csv", "study.json"} <= set(seen[0])
    on_disk = json.loads((out / "study.json").read_text())
    assert on_disk == {k: v for k, v in summary.items() if k != "primary"}
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    with pytest.raises(SpecboundError, match="not written by specbound"):
        s.to_dir(tmp_path / "mine")  # io.output_dir: never over a folder specbound did not write
    assert (tmp_path / "mine" / "notes.txt").read_text() == "x"


def test_folders_sharing_models_are_secondary_with_the_count(tmp_path):
    # "big" holds seeds 0-5 of one configuration; "part" retrains seeds 3-7 (5 models, 3 of them
    # the same task, recipe, configuration and seed as big's); "other" is another task
    big = folder(tmp_path, "big", [0.001] * 3, [0.3] * 3, [0, 1, 2, 3, 4, 5])
    part = folder(tmp_path, "part", [0.001] * 3, [0.3] * 3, [3, 4, 5, 6, 7])
    other = folder(tmp_path, "other", [0.001] * 3, [0.3] * 3, [0, 1, 2])
    meta = json.loads((other / "correlate.json").read_text())
    (other / "correlate.json").write_text(json.dumps({**meta, "task": "sparse-parity"}))
    s = study([part, other, big])
    sec = s.summary()["secondary"]
    assert sec == [{"folder": str(part), "overlaps": str(big), "shared_models": 3}]
    assert s.summary()["independent_zoos"] == 2
    prim = s.primary
    assert set(prim.loc[prim["independence"] == "family", "folder"]) == {str(big), str(other)}
    np.testing.assert_allclose(
        prim.loc[prim["independence"] == "family", "p_holm"], [0.006] * 6, rtol=0, atol=1e-15
    )
    assert any("resting on 2 independent zoos" in n for n in s.notes)
    # the same seeds under another recipe (max_steps) are other models: independent
    for d, steps in ((big, 500), (part, 2000)):
        meta = json.loads((d / "correlate.json").read_text())
        (d / "correlate.json").write_text(json.dumps({**meta, "recipe": {"max_steps": steps}}))
    assert study([part, other, big]).summary()["secondary"] == []


def test_a_verdict_differing_between_seeds_is_borderline(tmp_path):
    a = folder(tmp_path, "a", [0.0001, 0.3, 0.3], [0.3, 0.02, 0.02], [0, 1, 2])
    d = pd.read_csv(a / "differences.csv")
    prim = d["family"] == "primary"
    # P1's p under 5 seeds: 4 x 3 = 0.0003 .. and one seed at 0.04 x 3 = 0.12 -> not better
    flat = ";".join(["0.3"] * 5)
    d.loc[prim, "p_seeds"] = ["0.0001;0.0001;0.0001;0.0001;0.04", flat, flat]
    d.loc[prim, "low_seeds"] = ";".join(["0.2"] * 5)
    d.loc[prim, "high_seeds"] = ";".join(["0.4"] * 5)
    d.to_csv(a / "differences.csv", index=False)
    prim_rows = study([a]).primary.set_index("contrast")
    assert prim_rows.loc["P1", "verdict"] == "borderline"
    assert prim_rows.loc["P1", "verdict_stable"] == "no"
    assert prim_rows.loc["P2", "verdict_stable"] == "yes"


# --- differences.csv, correlate.json and models.csv are read back with the first read's checks


def _edit(path: Path, row: int, column: str, value: object) -> None:
    d = pd.read_csv(path)
    d[column] = d[column].astype(object)
    d.loc[row, column] = value
    d.to_csv(path, index=False)


def test_a_p_value_outside_0_1_is_refused_not_holm_adjusted(tmp_path):
    """p = -0.5 gave p_holm = -1 and moved the other folders' p_holm."""
    a = folder(tmp_path, "a", [0.0001, 0.004, 0.3], [0.3, 0.3, 0.02], [0, 1, 2])
    b = folder(tmp_path, "b", [0.0002, 0.02, 0.5], [0.3, 0.3, 0.01], [3, 4, 5])
    _edit(b / "differences.csv", 0, "p", -0.5)
    with pytest.raises(SpecboundError, match=r"differences.csv: row 2, column 'p': -0.5"):
        study([a, b])
    r = run_cli("study", a, b, "--out", tmp_path / "s")
    assert "row 2, column 'p'" in r.one_error_line() and r.code == 2
    assert not (tmp_path / "s").exists()


def test_a_duplicated_primary_row_is_refused_not_a_larger_family(tmp_path):
    a = folder(tmp_path, "a", [0.0001, 0.004, 0.3], [0.3, 0.3, 0.02], [0, 1, 2])
    d = pd.read_csv(a / "differences.csv")
    pd.concat([d, d.iloc[[1]]]).to_csv(a / "differences.csv", index=False)
    with pytest.raises(SpecboundError, match=r"row 6, column 'family'.*repeats row 3"):
        study([a])


@pytest.mark.parametrize(
    ("column", "value", "needle"),
    [
        ("B", 2.5, "not a whole number"),
        ("p_holm", 0.00001, "below p"),
        ("verdict", "great", "not one of"),
        ("family", "secondary", "not one of"),
        ("delta", "abc", "not a number"),
    ],
)
def test_other_tampered_cells_are_one_line(tmp_path, column, value, needle):
    a = folder(tmp_path, "a", [0.0001, 0.004, 0.3], [0.3, 0.3, 0.02], [0, 1, 2])
    _edit(a / "differences.csv", 1, column, value)
    with pytest.raises(SpecboundError, match=f"row 3, column '{column}'.*{needle}"):
        study([a])


def test_a_folder_without_primary_rows_is_named_in_a_note(tmp_path):
    a = folder(tmp_path, "a", [0.0001, 0.004, 0.3], [0.3, 0.3, 0.02], [0, 1, 2])
    b = folder(tmp_path, "b", [0.0002, 0.02, 0.5], [0.3, 0.3, 0.01], [3, 4, 5])
    d = pd.read_csv(b / "differences.csv")
    d[d["family"] != "primary"].to_csv(b / "differences.csv", index=False)
    with pytest.raises(SpecboundError, match="its primary rows are"):
        study([a, b])  # its measures give P1-P3: the rows were cut out
    meta = json.loads((b / "correlate.json").read_text())
    meta["measures"] = ["sharpness", "num_parameters"]  # no primary contrast
    (b / "correlate.json").write_text(json.dumps(meta))
    s = study([a, b])
    assert len(s.primary) == 3
    assert any(str(b) in n and "no primary row" in n for n in s.notes)


def test_tampered_correlate_json_and_models_csv_are_one_line(tmp_path):
    a = folder(tmp_path, "a", [0.0001, 0.004, 0.3], [0.3, 0.3, 0.02], [0, 1, 2])
    _edit(a / "models.csv", 1, "gap", 5.0)
    with pytest.raises(SpecboundError, match=r"models.csv: row 3, column 'gap'.*outside"):
        study([a])
    _edit(a / "models.csv", 1, "gap", 0.1)
    (a / "correlate.json").write_text('{"protocol": 3, "axes": ["depth"], "axes": []}')
    with pytest.raises(SpecboundError, match=r"correlate\.json"):
        study([a])


# --- protocol v5: a recipe key separates two zoos only where it changed some model's training


@pytest.mark.parametrize(
    ("key", "a", "b", "steps_a", "steps_b", "separate"),
    [
        ("max_steps", 500, 500, None, None, False),  # the same recipe
        ("max_steps", 500, 1000, 327, 392, False),  # no model reached the smaller cap
        ("max_steps", 500, 1000, 327, 500, True),  # a model ran to 500: the cap changed it
        ("max_steps", 500, 1000, 327, 700, True),  # one trained past the other's cap
        ("max_steps", 500, 1000, None, 392, True),  # unknown steps: assume it mattered
        ("target_loss", 0.01, 0.02, 10, 10, True),  # another stopping rule: other models
    ],
)
def test_separates_by_table(key, a, b, steps_a, steps_b, separate):
    from specbound.studies.protocol.independence import separates

    assert separates(key, a, b, steps_a, steps_b) is separate
    assert separates(key, b, a, steps_b, steps_a) is separate


def test_a_step_cap_nobody_reached_does_not_separate(tmp_path):
    """Like digits-arch (cap 1000, longest run 327 steps) against digits-v2 (cap 500, longest
    392): the same seeds and configurations are the same models, so the smaller zoo is
    secondary; once a model reaches the smaller cap, or steps are unknown, they are not."""
    big = folder(tmp_path, "big", [0.001] * 3, [0.3] * 3, [0, 1, 2, 3, 4, 5])
    arch = folder(tmp_path, "arch", [0.001] * 3, [0.3] * 3, [3, 4, 5, 6])

    def write(d, cap, steps, unconverged=0):
        meta = json.loads((d / "correlate.json").read_text())
        meta.update(recipe={"max_steps": cap}, n_unconverged=unconverged)
        (d / "correlate.json").write_text(json.dumps(meta))
        m = pd.read_csv(d / "models.csv")
        m["steps"] = steps
        m.to_csv(d / "models.csv", index=False)

    write(big, 500, [392, 300, 200, 100, 250, 310])
    write(arch, 1000, [327, 120, 90, 200])
    sec = study([arch, big]).summary()["secondary"]
    assert sec == [{"folder": str(arch), "overlaps": str(big), "shared_models": 3}]
    write(arch, 1000, [327, 120, 90, 500])  # a model trained to the smaller cap
    assert study([arch, big]).summary()["secondary"] == []
    write(arch, 1000, [327, 120, 90, 200], unconverged=1)  # an unconverged one ran to its cap
    assert study([arch, big]).summary()["secondary"] == []
