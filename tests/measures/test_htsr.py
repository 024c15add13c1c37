"""Fit quality of every HTSR power-law fit (issue 36 item 1): ``htsr_fit`` / ``htsr_fit_reason``
in weights.csv, the Python frame and ``--json``; model-level means over ``ok`` fits only with the
number of fits used; against WeightWatcher 0.7.7's ``warning`` column on the real MiniLM.

Crafted spectra: a bulk of 38 eigenvalues in [1, 2] plus 10 spikes 100 e^(0.4 k) (the KS minimum
picks the 10 spikes: short_tail); log-uniform eigenvalues (density 1/x, alpha = 1: every
alpha_i is 1 + 1/(mean log gap) close to 1.4 and D ~ 0.157 > 1.358/sqrt(100)); an exact
Pareto quantile grid (fit at x_min = the smallest eigenvalue: the range's edge).
"""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from specbound.analysis import analyze
from specbound.measures.powerlaw import (
    FIT_VERDICTS,
    KS_CRITICAL,
    MIN_TAIL,
    fit_quality,
    power_law_fit,
)
from tests.support.cli_runner import run_cli_process

BULK = np.linspace(1.0, 2.0, 38)
SPIKES = 100.0 * np.exp(0.4 * np.arange(10))


def test_short_tail_from_too_few_eigenvalues():
    f = power_law_fit(np.linspace(1.0, 5.0, 19))
    assert f.alpha is None
    verdict, reason = fit_quality(f)
    assert verdict == "short_tail" and "19 eigenvalues" in reason and "no fit" in reason


def test_short_tail_from_a_few_spikes():
    f = power_law_fit(np.r_[BULK, SPIKES])
    assert f.num_tail == 10 and f.num_eigenvalues == 48
    assert fit_quality(f) == ("short_tail", f"tail of 10 eigenvalues (< {MIN_TAIL})")


def test_poor_from_ks_distance():
    f = power_law_fit(np.exp(np.linspace(0.0, 5.0, 100)))
    assert f.num_tail == 100  # also at the edge; D is checked first
    bound = KS_CRITICAL / math.sqrt(100)
    ks = f.D
    assert ks > bound
    verdict, reason = fit_quality(f)
    assert verdict == "poor" and reason.startswith("KS D ") and f"{bound:.3g}" in reason


def test_poor_from_xmin_at_the_edge():
    q = 1.0 - np.arange(200) / 200.0
    f = power_law_fit(q ** (-1.0 / 1.5))  # Pareto(alpha = 2.5) quantiles from x_min = 1
    ks = f.D
    assert f.num_tail == f.num_eigenvalues == 200 and ks < KS_CRITICAL / math.sqrt(200)
    verdict, reason = fit_quality(f)
    assert verdict == "poor" and "smallest eigenvalue" in reason


def test_ok_fit_has_no_reason():
    rng = np.random.default_rng(3)
    q = np.sort(rng.uniform(0.0, 1.0, 60))
    lam = np.r_[np.linspace(0.01, 0.9, 60), q ** (-1.0 / 2.0)]  # bulk below a Pareto(3) tail
    f = power_law_fit(lam)
    assert f.num_tail >= MIN_TAIL and f.num_tail < f.num_eigenvalues
    assert fit_quality(f) == ("ok", "")


@pytest.fixture(scope="module")
def minilm_fits(minilm_dir):
    return analyze(minilm_dir, cache=False)


def test_minilm_fit_columns_and_ok_means(minilm_fits):
    a = minilm_fits
    w = a.weights
    assert set(w["htsr_fit"]) <= set(FIT_VERDICTS)
    short = w[w["htsr_fit"] == "short_tail"]
    # issue 36: 5 of 36 weights have tails under 20 (9-16 eigenvalues)
    assert len(short) == 5 and set(short["htsr_num_tail"]) == {9, 15, 16}
    assert all(r.startswith("tail of ") for r in short["htsr_fit_reason"])
    assert (w["htsr_fit"] == "ok").sum() == 31 and (
        w.loc[w["htsr_fit"] == "ok", "htsr_fit_reason"] == ""
    ).all()
    ok = w[w["htsr_fit"] == "ok"]
    s = a.summary()
    assert s["htsr_fits"] == 36 and s["htsr_fits_ok"] == 31
    assert s["htsr_fits_short_tail"] == 5 and s["htsr_fits_poor"] == 0
    assert s["htsr_alpha_fits_used"] == 31 and s["htsr_alpha_weighted_fits_used"] == 31
    assert s["htsr_alpha_ok"] == pytest.approx(ok["htsr_alpha"].mean(), rel=1e-12)
    assert s["htsr_alpha_weighted_ok"] == pytest.approx(ok["htsr_alpha_weighted"].mean(), rel=1e-12)
    # SPEC 9's registered measure stays the mean over every defined fit
    assert a.measures["htsr_alpha"] == pytest.approx(w["htsr_alpha"].mean(), rel=1e-12)
    rows = s["weight_fits"]
    assert [r["tensor"] for r in rows] == list(w["tensor"])
    assert [r["htsr_fit"] for r in rows] == list(w["htsr_fit"])
    d = a.details()
    assert list(d.loc[d["kind"] == "weight", "htsr_fit"]) == list(w["htsr_fit"])


def test_esd_worst_skips_failed_fits(minilm_fits):
    from specbound.report.figures.htsr import esd_selection

    w = minilm_fits.weights
    worst = esd_selection(minilm_fits, "worst")
    assert worst and all(w["htsr_fit"][i] == "ok" for i in worst)
    assert 26 not in worst  # layer 4 value: alpha 8.44 on a tail of 9 (the outlier)


def test_weightwatcher_warnings_on_minilm(minilm_dir, minilm_fits):
    """WeightWatcher's ``warning`` flags only alpha outside 2..6 (under-trained > 6,
    over-trained < 2); on MiniLM its 3 warnings are all among our 5 short tails."""
    ww = pytest.importorskip("weightwatcher")
    from transformers import BertModel

    details = ww.WeightWatcher(model=BertModel.from_pretrained(str(minilm_dir))).analyze()
    warning = {r.longname: (r.warning or "") for r in details.itertuples()}
    w = minilm_fits.weights
    ours = dict(zip(w["tensor"].str.removesuffix(".weight"), w["htsr_fit"], strict=True))
    flagged = {k for k in ours if warning[k]}
    assert {warning[k] for k in flagged} == {"under-trained"}
    assert len(flagged) == 3
    assert all(ours[k] == "short_tail" for k in flagged)
    assert sum(v != "ok" for v in ours.values()) == 5  # 2 short tails WeightWatcher passes


def test_cli_crafted_short_tail(tiny_bert, tmp_path):
    """A checkpoint whose layer-0 query has the bulk + 10 spikes spectrum: weights.csv and
    ``--json`` both say short_tail for it, with the reason."""
    from tests.support.safetensors_np import load_file, save_file

    path = tiny_bert(hidden=48, heads=2, ffn=96, layers=1)
    sd = load_file(str(path / "model.safetensors"))
    (name,) = [k for k in sd if k.endswith("layer.0.attention.self.query.weight")]
    rng = np.random.default_rng(0)
    u, _ = np.linalg.qr(rng.standard_normal((48, 48)))
    v, _ = np.linalg.qr(rng.standard_normal((48, 48)))
    sd[name] = ((u * np.sqrt(np.r_[BULK, SPIKES])) @ v.T).astype(np.float32)
    save_file(sd, str(path / "model.safetensors"))
    out = tmp_path / "o"
    r = run_cli_process("analyze", str(path), "--out", str(out), "--json", "-q")
    assert r.code == 0, r.err
    import pandas as pd

    csv = pd.read_csv(out / "weights.csv", keep_default_na=False)
    row = csv[csv["tensor"] == name].iloc[0]
    assert row["htsr_fit"] == "short_tail" and row["htsr_num_tail"] == 10
    assert row["htsr_fit_reason"] == "tail of 10 eigenvalues (< 20)"
    s = json.loads(r.out)
    (j,) = [x for x in s["weight_fits"] if x["tensor"] == name]
    assert j["htsr_fit"] == "short_tail" and j["htsr_fit_reason"] == row["htsr_fit_reason"]
    assert list(csv["htsr_fit"]) == [x["htsr_fit"] for x in s["weight_fits"]]
    assert s["htsr_alpha_fits_used"] == s["htsr_fits_ok"] == list(csv["htsr_fit"]).count("ok")
    assert json.loads((out / "summary.json").read_text())["weight_fits"] == s["weight_fits"]
    shutil.rmtree(out)


def test_terminal_and_page_name_the_failed_fits(minilm_fits, capsys):
    from specbound.report.pages.analysis import analysis_sections
    from specbound.report.terminal import print_summary

    print_summary(minilm_fits, width=120)
    out = capsys.readouterr().out
    assert "HTSR fits: 31 of 36 ok, 5 short_tail (tail < 20), 0 poor." in out
    ok_mean = minilm_fits.htsr_fit_summary()["htsr_alpha_ok"]
    assert f"htsr_alpha over the 31 ok fits: {ok_mean:.4g}" in out
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip() == "power-law fits not to trust")
    rows = [ln for ln in lines[start:] if "short_tail" in ln]
    assert len(rows) == 5 and any("8.44" in r and " 9 " in r for r in rows)
    html = "".join(analysis_sections(minilm_fits, []))
    assert "Power-law fit quality:" in html and "31 of 36 ok" in html


def test_esd_worst_title_when_no_ok_fit_is_an_outlier(minilm_fits, tmp_path):
    """MiniLM's ok fits all lie in 2..6 (2.46 to 5.13): the figure does not call them outliers
    and names the left-out failed fits."""
    pytest.importorskip("matplotlib")  # needs the extra
    from specbound.report.figures.htsr import esd_figures

    (fig,) = esd_figures(minilm_fits, tmp_path, "worst")
    assert "every ok fit lies in alpha 2-6" in fig.title and "farthest" not in fig.title
    assert "5 of 36 fits are short_tail or poor" in fig.caption


def test_scale_models_csv_counts_the_ok_fits(minilm_fits):
    from specbound.studies.scale.run import HTSR_FIT_COLUMNS, model_columns, model_row

    row = model_row(minilm_fits)
    assert model_columns()[-len(HTSR_FIT_COLUMNS) :] == HTSR_FIT_COLUMNS
    assert row["htsr_fits"] == 36 and row["htsr_alpha_fits_used"] == 31
    assert row["htsr_alpha_ok"] == minilm_fits.htsr_fit_summary()["htsr_alpha_ok"]
    assert row["htsr_alpha"] == minilm_fits.measures["htsr_alpha"]  # SPEC 9's mean, unchanged


def _brute_fit(lam: list[float]) -> tuple[float | None, float]:
    """CSN fit by plain loops (fractions of math, no numpy): candidates with 1 < alpha < inf,
    the first minimising D; (None, 1.0) when there is none."""
    lam = sorted(lam)
    n = len(lam)
    best: tuple[float, float | None] = (1.0, None)
    for i in range(n - 1):
        t = n - i
        s = sum(math.log(lam[j] / lam[i]) for j in range(i, n))
        if s <= 0:
            continue  # a tail of equal eigenvalues: alpha_i = inf, undefined
        a = 1 + t / s
        if a <= 1:
            continue
        d = max(abs(1 - (lam[j] / lam[i]) ** (1 - a) - (j - i) / t) for j in range(i, n))
        if d < best[0]:
            best = (d, a)
    return best[1], best[0]


@pytest.mark.parametrize("n", [20, 64])
def test_equal_eigenvalues_are_no_fit_and_no_warning(n):
    """Orthogonal / permutation weights: every eigenvalue is 1. alpha_i = inf made inf * 0 =
    NaN (a numpy RuntimeWarning on every analysis) and argmin picked the NaN."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = power_law_fit(np.ones(n))
    assert f.alpha is None and f.D is None and f.num_eigenvalues == n
    assert fit_quality(f)[0] == "poor"


def test_a_tie_at_the_top_does_not_hide_the_fit():
    """The two largest eigenvalues equal: that one candidate is undefined, the others are not
    (before, its NaN D won the argmin and the whole fit came out undefined)."""
    import warnings

    q = 1.0 - np.arange(60) / 60.0
    lam = list(q ** (-1.0 / 1.5))
    lam[-1] = lam[-2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = power_law_fit(np.array(lam))
    alpha, d = _brute_fit(lam)
    assert alpha is not None and f.alpha is not None and f.D is not None
    assert f.alpha == pytest.approx(alpha, rel=1e-9)
    ks = f.D
    assert ks == pytest.approx(d, abs=1e-9)


def test_permutation_weights_analyze_silently(tmp_path):
    """A checkpoint of permutation matrices (orthogonal, all singular values 1) analyzes without
    a numpy RuntimeWarning (one per matrix before)."""
    import warnings

    from tests.support.safetensors_np import save_file

    rng = np.random.default_rng(0)
    h, f_, layers = 32, 64, 2

    def perm(rows: int, cols: int) -> np.ndarray:
        k = max(rows, cols)
        return np.eye(k, dtype=np.float32)[rng.permutation(k)][:rows, :cols]

    sd = {}
    for l in range(layers):
        p = f"encoder.layer.{l}."
        for name in ("query", "key", "value"):
            sd[p + f"attention.self.{name}.weight"] = perm(h, h)
        sd[p + "attention.output.dense.weight"] = perm(h, h)
        sd[p + "intermediate.dense.weight"] = perm(f_, h)
        sd[p + "output.dense.weight"] = perm(h, f_)
    d = tmp_path / "perm"
    d.mkdir()
    save_file(sd, str(d / "model.safetensors"))
    cfg = {"model_type": "bert", "num_hidden_layers": layers, "hidden_size": h}
    cfg |= {"num_attention_heads": 2, "intermediate_size": f_, "hidden_act": "gelu"}
    (d / "config.json").write_text(json.dumps(cfg))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = analyze(str(d), cache=False)
    assert all(v is None or math.isfinite(v) for v in a.measures.values())
