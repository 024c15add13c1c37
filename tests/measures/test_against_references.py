"""SPEC 9 measures against computations that share no code with specbound.

- ``htsr_alpha`` per matrix against WeightWatcher 0.7.7 itself on the real MiniLM, and the fit
  against a plain loop over every candidate x_min written from the SPEC formula;
- every measure and weights.csv column from the raw tensors (numpy SVD, explicit sums) on MiniLM,
  a tiny random GPT-2 (fused c_attn, Conv1D) and a tiny random LLaMA (GQA, gated MLP), with the
  raw matrices taken from the transformers modules themselves;
- ``distance_from_init`` against its closed form for a rescaled copy.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specbound.analysis import analyze
from specbound.measures import measure_names
from specbound.measures.htsr_alpha import power_law_fit
from tests.support.cli_runner import run_cli_process

RTOL = 1e-9
ROLES = ("query", "key", "value", "output", "ffn_in", "ffn_out")


# ---- independent reference (no specbound code) ----------------------------------------------
def ref_fit(eigs: np.ndarray) -> tuple[float, float, float, int] | None:
    """SPEC 9's fit by a loop over every candidate x_min (i = 1..n-1), one numpy row each."""
    lam = np.sort(np.asarray(eigs, dtype=np.float64))
    n = lam.size
    if n < 20:
        return None
    best = None
    for i in range(n - 1):
        t = n - i
        tail = lam[i:]
        s = float(np.sum(np.log(tail / lam[i])))
        a = 1 + t / s if s > 0 else math.inf
        if a > 1 and math.isfinite(a):
            d = float(np.max(np.abs(1 - (tail / lam[i]) ** (1 - a) - np.arange(t) / t)))
        else:
            d = 1.0
        if best is None or d < best[0]:
            best = (d, a, float(lam[i]), t)
    d, a, xmin, t = best
    return a, xmin, d, t


def ref_matrix(w_row: np.ndarray) -> dict:
    """Norms and fit of one raw weight in row-vector orientation (numpy's own SVD)."""
    s = np.linalg.svd(w_row, compute_uv=False)
    k = min(w_row.shape)
    tol = 1e-10 * k * max(float(s[0]), 1.0)  # SPEC 3, written out
    kept = s[s > tol]
    fro2 = float((w_row * w_row).sum())
    fit = ref_fit(kept * kept)
    return {
        "rows": w_row.shape[0],
        "cols": w_row.shape[1],
        "s1": float(s[0]),
        "fro2": fro2,
        "stable_rank": fro2 / float(s[0]) ** 2,
        "fit": fit,
        "lmax": float(s[0]) ** 2,
        # WeightWatcher's log10 sum_i lambda_i^alpha, over the eigenvalues lambda = s^2
        "log_alpha_norm": None
        if fit is None
        else math.log10(math.fsum(float(x) ** (2 * fit[0]) for x in kept)),
    }


def ref_measures(mats: list[dict], num_parameters: int) -> dict:
    fits = [m for m in mats if m["fit"] is not None]
    return {
        "log_spectral_product": sum(2 * math.log10(m["s1"]) for m in mats),
        "log_frobenius_product": sum(math.log10(m["fro2"]) for m in mats),
        "frobenius_sum": sum(m["fro2"] for m in mats),
        "mean_stable_rank": sum(m["stable_rank"] for m in mats) / len(mats),
        "htsr_alpha": sum(m["fit"][0] for m in fits) / len(fits),
        "htsr_alpha_weighted": sum(m["fit"][0] * math.log10(m["lmax"]) for m in fits) / len(fits),
        "num_parameters": float(num_parameters),
    }


def check_against(a, mats: list[dict], num_parameters: int) -> None:
    want = ref_measures(mats, num_parameters)
    got = a.measures
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=RTOL, abs=0), k
    w = a.weights
    assert len(w) == len(mats)
    for (_, row), m in zip(w.iterrows(), mats, strict=True):
        assert (row["rows"], row["cols"]) == (m["rows"], m["cols"])
        # singular values: absolute agreement c * eps * k * s_1 (two backward-stable SVDs)
        assert (
            abs(row["spectral_norm"] - m["s1"])
            <= 50 * 2.2e-16 * max(m["rows"], m["cols"]) * m["s1"]
        )
        assert row["frobenius_norm"] ** 2 == pytest.approx(m["fro2"], rel=1e-12)
        assert row["stable_rank"] == pytest.approx(m["stable_rank"], rel=1e-9)
        assert row["lambda_max"] == pytest.approx(m["lmax"], rel=1e-12)
        assert row["log_spectral_norm"] == pytest.approx(math.log10(m["lmax"]), rel=1e-12)
        assert row["log_norm"] == pytest.approx(math.log10(m["fro2"]), rel=1e-12, abs=1e-13)
        if m["fit"] is None:
            assert np.isnan(row["htsr_alpha"])
            assert np.isnan(row["log_alpha_norm"])
        else:
            alpha, xmin, d, t = m["fit"]
            assert row["htsr_alpha"] == pytest.approx(alpha, rel=RTOL)
            assert row["htsr_xmin"] == pytest.approx(xmin, rel=1e-9)
            assert row["htsr_D"] == pytest.approx(d, rel=1e-6, abs=1e-12)
            assert row["htsr_num_tail"] == t
            assert row["log_alpha_norm"] == pytest.approx(m["log_alpha_norm"], rel=1e-9)


# ---- the fit itself ---------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(n=st.integers(20, 60), seed=st.integers(0, 2**32 - 1), tail=st.floats(0.5, 4.0))
def test_power_law_fit_equals_brute_force_loop(n, seed, tail):
    rng = np.random.default_rng(seed)
    eigs = (1.0 + rng.pareto(tail, n)) * rng.uniform(0.1, 10.0)
    eigs = np.unique(eigs)  # distinct values: the D minimum is then a property of the data
    if eigs.size < 20:
        return
    want = ref_fit(eigs)
    got = power_law_fit(eigs[::-1])  # any order
    assert got.alpha == pytest.approx(want[0], rel=1e-9)
    assert got.xmin == want[1]
    assert got.num_tail == want[3]


@pytest.mark.parametrize("decades", [0, 200])
def test_ww_norm_metrics_by_hand_also_beyond_float64(decades):
    """lambda_max, log_norm, log_spectral_norm, log_alpha_norm of s = (3, 2, 1) * 10^decades,
    written out: lambda = (9, 4, 1) * 10^(2 decades); beyond float64 the logs stay exact."""
    from specbound.measures.powerlaw import ww_norm_metrics

    sv = np.array([3.0, 2.0, 1.0]) * 10.0**decades
    lmax, log_norm, log_spec, log_alpha = ww_norm_metrics(sv, 3, 1.5)
    assert log_norm == pytest.approx(math.log10(14.0) + 2 * decades, rel=1e-14)
    assert log_spec == pytest.approx(math.log10(9.0) + 2 * decades, rel=1e-14)
    want = math.log10(27.0 + 8.0 + 1.0) + 3 * decades
    assert log_alpha == pytest.approx(want, rel=1e-14)
    if decades == 0:
        assert lmax == pytest.approx(9.0, rel=1e-15)
    else:
        assert lmax == math.inf  # the CSV writes it empty; its log10 is log_spectral_norm
    assert math.isnan(ww_norm_metrics(sv, 3, None)[3])
    assert all(math.isnan(v) for v in ww_norm_metrics(np.zeros(3), 3, 1.5))


def test_power_law_fit_undefined_below_20():
    assert power_law_fit(np.arange(1.0, 20.0)).alpha is None
    assert power_law_fit(np.arange(1.0, 21.0)).alpha is not None


# ---- MiniLM ----------------------------------------------------------------------------------
def minilm_raw(directory: Path) -> tuple[list[np.ndarray], int]:
    from tests.support.safetensors_np import load_file

    sd = load_file(str(directory / "model.safetensors"))
    cfg = json.loads((directory / "config.json").read_text())
    mats = []
    for l in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{l}."
        for t in (
            "attention.self.query",
            "attention.self.key",
            "attention.self.value",
            "attention.output.dense",
            "intermediate.dense",
            "output.dense",
        ):
            mats.append(sd[p + t + ".weight"].astype(np.float64).T)
    return mats, sum(int(v.size) for v in sd.values())


@pytest.fixture(scope="module")
def minilm_analysis(minilm_dir):
    return analyze(minilm_dir, cache=False)


def test_minilm_measures_from_raw_weights(minilm_dir, minilm_analysis):
    raw, n_params = minilm_raw(minilm_dir)
    mats = [ref_matrix(w) for w in raw]
    check_against(minilm_analysis, mats, n_params)
    a = minilm_analysis
    assert a.measures["spectrum_adaptive"] == a.bounds.spectrum_adaptive.log10
    assert a.measures["norm_based"] == a.bounds.norm_based.log10
    assert a.measures["distance_from_init"] is None
    assert "init" in a.measure_notes["distance_from_init"]
    assert list(a.measures) == measure_names()
    assert list(a.weights["role"][:6]) == list(ROLES)


def test_htsr_alpha_equals_weightwatcher(minilm_dir, minilm_analysis):
    """WeightWatcher 0.7.7's default ``alpha`` and its norm columns (``lambda_max``,
    ``log_norm``, ``log_spectral_norm``, ``log_alpha_norm``) on every Q/K/V/O/FFN weight, to
    1e-9."""
    ww = pytest.importorskip("weightwatcher")
    from transformers import BertModel

    model = BertModel.from_pretrained(str(minilm_dir))
    details = ww.WeightWatcher(model=model).analyze()
    ref = {r.longname: r for r in details.itertuples()}
    w = minilm_analysis.weights
    assert len(w) == 36
    for row in w.itertuples():
        r = ref[row.tensor.removesuffix(".weight")]
        assert row.htsr_alpha == pytest.approx(r.alpha, rel=RTOL)
        assert row.htsr_alpha_weighted == pytest.approx(r.alpha_weighted, rel=RTOL)
        assert row.htsr_xmin == pytest.approx(r.xmin, rel=RTOL)
        assert row.htsr_num_tail == r.num_pl_spikes
        for col in ("lambda_max", "log_norm", "log_spectral_norm", "log_alpha_norm"):
            assert getattr(row, col) == pytest.approx(getattr(r, col), rel=RTOL), col


def test_distance_from_init_closed_form(minilm_dir, tmp_path, minilm_analysis):
    """init = 0.5 W (exact in binary): sum ||W - W/2||_F^2 = frobenius_sum / 4."""
    from tests.support.safetensors_np import load_file, save_file

    sd = load_file(str(minilm_dir / "model.safetensors"))
    half = {
        k: (v * np.float32(0.5) if k.startswith("encoder.layer.") and v.ndim == 2 else v)
        for k, v in sd.items()
    }
    d = tmp_path / "half"
    d.mkdir()
    save_file(half, str(d / "model.safetensors"))
    shutil.copy(minilm_dir / "config.json", d / "config.json")
    a = analyze(minilm_dir, init=d, cache=False)
    want = sum(float((w * w).sum()) for w in minilm_raw(minilm_dir)[0]) / 4
    assert a.measures["distance_from_init"] == pytest.approx(want, rel=1e-12)
    assert "distance_from_init" not in a.measure_notes
    # init of itself: exactly 0
    assert analyze(minilm_dir, init=minilm_dir, measures=["distance_from_init"]).measures == {
        "distance_from_init": 0.0
    }


def test_init_of_other_shape_is_one_line(minilm_dir, tmp_path):
    from specbound.errors import SpecboundError
    from tests.support.checkpoints import write_tiny_bert

    other = write_tiny_bert(tmp_path / "tiny", layers=6, hidden=8, heads=2)
    with pytest.raises(SpecboundError, match="hidden_size"):
        analyze(minilm_dir, init=other)


def test_cached_measures_identical(minilm_dir):
    cold = analyze(minilm_dir)
    warm = analyze(minilm_dir)
    assert warm.from_cache and not cold.from_cache
    assert warm.measures == cold.measures
    assert warm.weights.equals(cold.weights)


def test_proxies_only_skip_the_raw_weight_svds(minilm_dir, minilm_analysis, monkeypatch, tmp_path):
    """Measures that do not read the raw-weight spectra do not pay for their SVDs; the cache
    then holds the canonical spectra only, and a later run that needs them recomputes."""
    import specbound.linalg.model as model_module
    import specbound.linalg.weights as weights_module

    proxies = ["spectrum_adaptive", "norm_based", "num_parameters"]

    def no_svds(*a, **k):
        raise AssertionError("raw-weight SVDs computed although no chosen measure needs them")

    with monkeypatch.context() as m:
        for where in (weights_module, model_module):  # defined in one, called from the other
            m.setattr(where, "attention_jobs", no_svds)
            m.setattr(where, "block_weight_spectra", no_svds)
        cold = analyze(minilm_dir, measures=proxies)
        warm = analyze(minilm_dir, measures=proxies)
        with pytest.raises(AssertionError, match="raw-weight SVDs"):
            analyze(minilm_dir, measures=["htsr_alpha"], cache=False)
    assert not cold.from_cache and warm.from_cache
    for a in (cold, warm):
        assert a.weight_spectra is None and len(a.weights) == 0
        assert a.measures == {k: minilm_analysis.measures[k] for k in proxies}
    # the entry lacks the raw weights: a run that needs them recomputes, then reuses
    full = analyze(minilm_dir)
    assert not full.from_cache and full.weights.equals(minilm_analysis.weights)
    assert full.measures == minilm_analysis.measures
    again = analyze(minilm_dir, measures=proxies)  # cached with weights: same outputs as cold
    assert again.from_cache and again.weight_spectra is None
    assert analyze(minilm_dir).from_cache
    out = cold.to_dir(tmp_path / "o")
    assert not (out / "weights.csv").exists() and (out / "matrices.csv").is_file()
    assert (analyze(minilm_dir).to_dir(tmp_path / "p") / "weights.csv").is_file()


# ---- tiny GPT-2 (fused c_attn, Conv1D) and LLaMA (GQA, gated MLP) -----------------------------
def _save(model, path: Path) -> Path:
    model.save_pretrained(str(path), safe_serialization=True)
    return path


def _n_params(path: Path) -> int:
    from tests.support.safetensors_np import load_file

    return sum(int(v.size) for v in load_file(str(path / "model.safetensors")).values())


def test_gpt2_measures_from_modules(tmp_path):
    pytest.importorskip("torch")  # needs the extra
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_embd=32, n_head=4, n_inner=64, vocab_size=50, n_positions=16)
    model = GPT2LMHeadModel(cfg).eval()
    path = _save(model, tmp_path / "gpt2")
    mats = []
    n = cfg.n_embd
    for blk in model.transformer.h:
        c_attn = blk.attn.c_attn.weight.detach().double().numpy()  # Conv1D: (in, out) = x W
        mats += [
            c_attn[:, :n],
            c_attn[:, n : 2 * n],
            c_attn[:, 2 * n :],
            blk.attn.c_proj.weight.detach().double().numpy(),
            blk.mlp.c_fc.weight.detach().double().numpy(),
            blk.mlp.c_proj.weight.detach().double().numpy(),
        ]
    a = analyze(path, cache=False)
    check_against(a, [ref_matrix(w) for w in mats], _n_params(path))


def test_llama_measures_from_modules(tmp_path):
    pytest.importorskip("torch")  # needs the extra
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(1)
    cfg = LlamaConfig(
        num_hidden_layers=2,
        hidden_size=32,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=48,
        vocab_size=50,
        max_position_embeddings=16,
    )
    model = LlamaForCausalLM(cfg).eval()
    path = _save(model, tmp_path / "llama")

    def rv(lin):  # nn.Linear computes x W^T: the row-vector matrix is weight.T
        return lin.weight.detach().double().numpy().T

    mats = []
    for blk in model.model.layers:
        at, mlp = blk.self_attn, blk.mlp
        mats += [
            rv(at.q_proj),
            rv(at.k_proj),
            rv(at.v_proj),
            rv(at.o_proj),
            np.concatenate([rv(mlp.gate_proj), rv(mlp.up_proj)], axis=1),
            rv(mlp.down_proj),
        ]
    a = analyze(path, cache=False)
    check_against(a, [ref_matrix(w) for w in mats], _n_params(path))
    # W_K, W_V are 32 x 16: 16 eigenvalues < 20, so their alpha is undefined and counted
    assert "4 of 12 matrices" in a.measure_notes["htsr_alpha"]
    assert a.weights["tensor"][4].endswith("gate_proj.weight+model.layers.0.mlp.up_proj.weight")


# ---- CLI --------------------------------------------------------------------------------------


def test_cli_measures_outputs(minilm_dir, tmp_path):
    out = tmp_path / "o"
    r = run_cli_process(
        "analyze", str(minilm_dir), "--out", str(out), "--quiet", "--init", str(minilm_dir)
    )
    assert r.code == 0, r.err
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["measures"]) == measure_names()
    assert summary["measures"]["distance_from_init"] == 0.0
    import pandas as pd

    w = pd.read_csv(out / "weights.csv")
    assert list(w.columns) == [
        "layer",
        "role",
        "tensor",
        "rows",
        "cols",
        "spectral_norm",
        "frobenius_norm",
        "stable_rank",
        "htsr_alpha",
        "htsr_alpha_weighted",
        "htsr_xmin",
        "htsr_D",
        "htsr_num_tail",
        "htsr_fit",
        "htsr_fit_reason",
        "lambda_max",
        "log_norm",
        "log_spectral_norm",
        "log_alpha_norm",
    ]
    assert w["htsr_alpha"].mean() == pytest.approx(summary["measures"]["htsr_alpha"], rel=1e-12)

    r = run_cli_process(
        "analyze", str(minilm_dir), "--measures", "htsr_alpha, num_parameters", "--json", "-q"
    )
    assert r.code == 0, r.err
    assert list(json.loads(r.out)["measures"]) == ["htsr_alpha", "num_parameters"]

    r = run_cli_process("analyze", str(minilm_dir), "--measures", "nope", "-q")
    assert r.code == 2 and r.err.count("error:") == 1 and "nope" in r.err
    assert "Traceback" not in r.err

    r = run_cli_process("measures")
    assert r.code == 0
    assert [line.split()[0] for line in r.out.splitlines()] == measure_names()


def test_live_module_equals_saved_checkpoint_with_tied_head(tmp_path):
    """A live nn.Module (tied MLM head) gives the measures of its save_pretrained directory."""
    pytest.importorskip("torch")  # needs the extra
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(2)
    model = BertForMaskedLM(
        BertConfig(
            num_hidden_layers=2,
            hidden_size=32,
            num_attention_heads=4,
            intermediate_size=64,
            vocab_size=100,
        )
    ).eval()
    path = _save(model, tmp_path / "mlm")
    live, saved = analyze(model, cache=False), analyze(path, cache=False)
    assert live.num_parameters == saved.num_parameters == _n_params(path)
    for k, v in saved.measures.items():
        if v is None:
            assert live.measures[k] is None
        else:
            assert live.measures[k] == pytest.approx(v, rel=1e-10), k
