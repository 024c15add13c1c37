"""Protocol v5 end to end on two tiny synthetic adaptivity zoos (SPEC 10): zoo.json's
``design: adaptivity`` -> correlate's primary family D0, A1, A3 on tau_arch, the forms and the
in-cell axis as exploratory measures, a re-evaluated folder unchanged, and the study's answer
of the replicate pair."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from specbound.errors import SpecboundError
from specbound.studies import correlate as C
from specbound.studies.correlate.multizoo import pool, read_part, study
from specbound.studies.protocol.adaptivity import ANSWERS
from tests.studies.correlate.test_v5_modal import write_zoo

FORMS = [
    "spectrum_adaptive_fixed_p0.5",
    "spectrum_adaptive_fixed_p1",
    "spectrum_adaptive_fixed_p2",
    "spectrum_adaptive_modal",
]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("adaptive")
    out = []
    for name, seeds in (("a", (0, 1)), ("b", (2, 3))):
        zoo = write_zoo(root / "zoos" / name, seeds, design="adaptivity")
        res = C.correlate(zoo, bootstrap=200, cache=False)
        out.append((res, res.to_dir(root / "results" / name)))
    return root, out


def test_primary_family_is_d0_a1_a3_on_tau_arch(pair):
    _, [(res, folder), _] = pair
    prim = res.primary
    assert list(prim["contrast"]) == ["D0", "A1", "A3"]
    assert set(prim["statistic"]) == {"tau_arch"}
    assert list(zip(prim["measure"], prim["versus"], strict=True)) == [
        ("spectrum_adaptive", "spectrum_adaptive_modal"),
        ("spectrum_adaptive", "norm_based"),
        ("spectrum_adaptive", "distance_from_init"),
    ]
    assert np.isfinite(prim["delta"]).all()  # every contrast is defined in this zoo
    meta = json.loads((folder / "correlate.json").read_text())
    assert meta["design"] == "adaptivity" and meta["primary_family"] == "adaptivity"
    assert meta["primary_contrasts"]["D0"] == "spectrum_adaptive - spectrum_adaptive_modal"
    # exploratory: every form and the learning rate (the axis varying inside a cell)
    for m in [*FORMS, "axis:lr"]:
        assert m in meta["measures"]
        assert (res.exploratory["measure"] == m).any()
    assert "axis:depth" not in meta["measures"]  # depth makes the cells
    lr = pd.read_csv(folder / "models.csv")
    np.testing.assert_array_equal(lr["axis:lr"], lr["lr"])


def test_re_evaluation_keeps_the_family(pair):
    root, [(res, folder), _] = pair
    again = pool([read_part(folder)], bootstrap=200)
    assert again.design == "adaptivity" and again.primary_family == "adaptivity"
    pd.testing.assert_frame_equal(
        again.primary[["contrast", "delta", "low", "high"]],
        res.primary[["contrast", "delta", "low", "high"]],
    )
    # the same zoo without the design is an ordinary zoo: no D0, no forms as measures
    plain = C.correlate(root / "zoos" / "a", bootstrap=200, design=None, primary="arch")
    assert "D0" not in set(plain.primary["contrast"])
    with pytest.raises(SpecboundError, match="primary adaptivity is for a zoo that declares"):
        C.correlate(root / "zoos" / "a" / "zoo.csv", bootstrap=200, primary="adaptivity")


def test_study_states_one_answer_of_the_pair(pair, tmp_path):
    _, [(ra, fa), (rb, fb)] = pair
    s = study([], [("digits-adaptive", [fa, fb], None)])
    [ans] = s.summary()["adaptivity"]
    assert ans["group"] == "digits-adaptive" and ans["answer"] in ANSWERS
    assert ans["statement"].lower().startswith(ans["answer"])
    d0 = [float(r.primary.set_index("contrast").loc["D0", "delta"]) for r in (ra, rb)]
    assert ans["pooled"]["D0"]["delta"] == pytest.approx(np.mean(d0), abs=1e-15)
    for r, f in ((ra, fa), (rb, fb)):
        cells = [c["share"] for c in r.p_switch_share["cells"]]
        assert ans["switching"][str(f)]["cell_shares"] == cells
    axes = {(a["folder"], a["axis"]) for a in ans["axes"]}
    assert axes == {(str(fa), "lr"), (str(fb), "lr")}
    for a in ans["axes"]:  # the sign comes from the other replicate's tau_arch of axis:lr
        other = rb if a["folder"] == str(fa) else ra
        t = float(other.correlation.set_index("measure").loc["axis:lr", "tau_arch"])
        assert a["sign"] == (1 if t > 0 else -1 if t < 0 else 0)
    assert any("protocol v5, digits-adaptive:" in n for n in s.notes)
    out = s.to_dir(tmp_path / "study")
    assert json.loads((out / "study.json").read_text())["adaptivity"][0]["answer"] == ans["answer"]
