"""Protocol v5's fixed-index forms (SPEC 10) against brute force, and their place in every
per-model table (summary.json, scale models.csv, track.csv).

B_fixed(q) = sum_A c(A, q) + sqrt(L), c(A, q) = S_q^(1/(q+2)) s^(q/(q+2)) N^((q+1)/(q+2)), every
matrix held at q. The reference (tests/support/reference.py: explicit QK = W_Q W_K^T and OV
products, numpy's dense SVD, SPEC 3's rank threshold, linear-space arithmetic) shares no code with
specbound; q = 0 must give B_ceiling exactly.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import specbound
from specbound.measures.spectrum_adaptive import (
    FIXED_FORMS,
    log10_fixed_index_bound,
    log_fixed_index_bound,
)
from tests.support.checkpoints import write_tiny_bert
from tests.support.reference import reference

#: The forms' indices, written out (not read from the package).
FORMS = {
    "spectrum_adaptive_fixed_p0.5": 0.5,
    "spectrum_adaptive_fixed_p1": 1.0,
    "spectrum_adaptive_fixed_p2": 2.0,
}
#: Largest |log10 specbound - log10 brute force| seen (printed by -s; the report quotes them).
WORST: dict[str, float] = {}


_REFS: dict[str, dict] = {}


def brute_fixed(directory, q: float) -> float:
    """log10(sum_A c(A, q) + sqrt(L)) from the raw weights (dense products, numpy SVD; the
    reference of a directory is computed once)."""
    cfg = json.loads((directory / "config.json").read_text())
    key = str(directory)
    if key not in _REFS:
        _REFS[key] = reference(directory, l_phi=1.13)
    ref = _REFS[key]
    L, N = cfg["num_hidden_layers"], cfg["hidden_size"]
    total = []
    for r in ref["rows"]:
        kept = r["kept"]
        if not kept:
            continue  # rank 0: c = 0
        sp = float(len(kept)) if q == 0 else math.fsum(x**q for x in kept)
        total.append(sp ** (1 / (q + 2)) * r["scale"] ** (q / (q + 2)) * N ** ((q + 1) / (q + 2)))
    return math.log10(math.fsum(total) + math.sqrt(L))


def _check(a: specbound.Analysis, directory, tol: float) -> None:
    forms = a.fixed_index_forms()
    assert list(forms) == list(FORMS) == list(FIXED_FORMS)
    for name, q in FORMS.items():
        want = brute_fixed(directory, q)
        err = abs(forms[name] - want)
        WORST[name] = max(WORST.get(name, 0.0), err)
        print(f"{directory.name} {name}: specbound {forms[name]!r} brute {want!r} err {err:.2e}")
        assert forms[name] == pytest.approx(want, rel=0, abs=tol)
    # q off the grid, and q = 0 = the rank ceiling, exactly
    args = (a.spectra, a.details.log_scale, a.spec.hidden_size, a.spec.num_layers)
    for q in (0.37, 1.5):
        got = log10_fixed_index_bound(*args, q)
        assert got == pytest.approx(brute_fixed(directory, q), rel=0, abs=tol)
    assert log10_fixed_index_bound(*args, 0.0) == a.log10_spectrum_adaptive_ceiling
    # the adaptive proxy never exceeds any fixed form on the grid (p* minimizes per matrix)
    for name in FORMS:
        assert a.bounds.spectrum_adaptive.log10 <= forms[name] + 1e-12
    summary = a.summary()
    for name in FORMS:
        assert summary[name] == forms[name]


def test_tiny_random_model(tmp_path):
    d = write_tiny_bert(
        tmp_path / "m", layers=3, hidden=16, heads=2, ffn=32, scale=0.1, ffn_low_rank=2
    )
    a = specbound.analyze(str(d), cache=False)
    assert 0 < a.spectrum_adaptive_share_p0 < 1  # mixed: the forms differ from the proxy
    _check(a, d, 1e-10)


def test_minilm(minilm_dir):
    a = specbound.analyze("demo:minilm", cache=False)  # the real all-MiniLM-L6-v2
    # every matrix at p* = 0: the proxy is the ceiling, the fixed forms lie far above it
    _check(a, minilm_dir, 1e-9)
    forms = a.fixed_index_forms()
    assert forms["spectrum_adaptive_fixed_p0.5"] > a.bounds.spectrum_adaptive.log10 + 1


def test_q_is_checked_and_rank_zero_adds_nothing():
    svs = [np.array([2.0, 1.0]), np.zeros(3)]
    k = np.array([2, 3])
    log_s = np.array([0.0, 0.0])
    with pytest.raises(ValueError, match="q must be finite and >= 0"):
        log_fixed_index_bound(svs, k, log_s, 4, 1, -1.0)
    # c(A, 1) = (2 + 1)^(1/3) * 1 * 4^(2/3); the zero matrix adds 0; sqrt(L) = 1
    want = math.log(3 ** (1 / 3) * 4 ** (2 / 3) + 1.0)
    assert log_fixed_index_bound(svs, k, log_s, 4, 1, 1.0) == pytest.approx(want, abs=1e-14)
    nan = [np.array([np.nan, 1.0])]
    assert math.isnan(log_fixed_index_bound(nan, np.array([2]), np.array([0.0]), 4, 1, 1.0))


def test_scale_models_csv_and_track_carry_the_forms(tmp_path):
    from specbound.studies.scale import FORM_COLUMNS, model_columns, model_row
    from specbound.track import FORM_COLUMNS as TRACK_FORMS
    from specbound.track.tracker import computed_columns

    d = write_tiny_bert(tmp_path / "m", layers=2, hidden=8, heads=2, ffn=16, scale=0.3)
    a = specbound.analyze(str(d), cache=False)
    assert list(FORMS) == FORM_COLUMNS and list(FORMS) == list(TRACK_FORMS)
    cols = model_columns()
    assert cols.index("adaptive_headroom_min") < cols.index(FORM_COLUMNS[0])
    row = model_row(a)
    for name, q in FORMS.items():
        assert row[name] == pytest.approx(brute_fixed(d, q), rel=0, abs=1e-10)
    assert computed_columns()[-4:-1] == list(FORMS)
