"""The torch backend gives the numpy backend's spectra and clear errors.

Norms and proxies agree to 1e-10 relative; singular values to |s_i - s'_i| <= 50 eps k s_1
(absolute, as any two backward-stable SVDs do) and ranks exactly away from the rank threshold.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from specbound.adapters.base import LayerWeights, ModelSpec
from specbound.errors import SpecboundError
from specbound.linalg.spectra import Spectra, block_spectra
from tests.support.spectral_checks import assert_sv_match, rank_is_ambiguous

torch = pytest.importorskip("torch")
from specbound.linalg.torch_backend import make_block_spectra, resolve_device  # noqa: E402

TOL = 1e-10
CUDA = torch.cuda.is_available()


def rel(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), np.finfo(float).tiny)))


def assert_same_spectra(got: Spectra, want: Spectra) -> float:
    """Same rows; norms within TOL relative; singular values within 50 eps k s_1 absolute;
    ranks equal except where a singular value sits at the rank threshold."""
    for f in ("layer", "head", "matrix_type", "rows", "cols", "sv_offsets"):
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f))
    worst = 0.0
    for f in ("frobenius_norm", "nuclear_norm", "norm_21", "norm_11"):
        worst = max(worst, rel(getattr(got, f), getattr(want, f)))
    assert worst <= TOL
    k = np.minimum(want.rows, want.cols)
    for i in range(len(want)):
        w, g = want.singular_values(i), got.singular_values(i)
        if w.size == 0:
            continue
        assert_sv_match(g, w, int(k[i]), got_rank=int(got.rank[i]))
        if not rank_is_ambiguous(w, int(k[i])):
            assert int(got.rank[i]) == int(want.rank[i]), i
    return worst


def random_block(
    seed: int, n: int = 40, h: int = 4, d: int = 10, f: int = 90, kv: int | None = None
) -> tuple[LayerWeights, ModelSpec]:
    rng = np.random.default_rng(seed)
    kv = kv or h
    spec = ModelSpec("bert", 1, n, h, d, f, "gelu", num_kv_heads=kv)
    w = LayerWeights(
        0,
        rng.standard_normal((h * d, n)),
        rng.standard_normal((kv * d, n)),
        rng.standard_normal((kv * d, n)),
        rng.standard_normal((n, h * d)),
        rng.standard_normal((f, n)),
        rng.standard_normal((n, f)),
    )
    return w, spec


@pytest.mark.parametrize("kv", [None, 2])
@pytest.mark.parametrize("method", ["auto", "svd"])
def test_cpu_block_matches_numpy(kv: int | None, method: str) -> None:
    w, spec = random_block(0, kv=kv)
    w.wq[:10] = 0.0  # a zero QK head
    fn = make_block_spectra("cpu")
    assert_same_spectra(fn(w, spec, method), block_spectra(w, spec, method))


def test_ill_conditioned_ffn_falls_back_identically() -> None:
    w, spec = random_block(1)
    w.w_in[:, :5] *= 1e-9  # singular values near the rank threshold: guard -> SVD
    assert_same_spectra(make_block_spectra("cpu")(w, spec), block_spectra(w, spec))


def test_norm_11_row_blocks(monkeypatch) -> None:
    """Tiny chunk budget forces the per-head row-block path; results unchanged."""
    import specbound.linalg.torch_backend as tb

    w, spec = random_block(2)
    want = block_spectra(w, spec)
    monkeypatch.setattr(tb, "CHUNK_ENTRIES", 7)
    assert_same_spectra(tb.make_block_spectra("cpu")(w, spec), want)


def test_minilm_analysis_numpy_vs_torch() -> None:
    from specbound.analysis import analyze
    from specbound.demo import minilm_path

    a = analyze(str(minilm_path()), cache=False)
    b = analyze(str(minilm_path()), cache=False, device="cpu")
    assert_same_spectra(b.spectra, a.spectra)
    for x, y in [
        (a.bounds.spectrum_adaptive.ln, b.bounds.spectrum_adaptive.ln),
        (a.bounds.norm_based.ln, b.bounds.norm_based.ln),
    ]:
        assert y == pytest.approx(x, rel=TOL)
    np.testing.assert_array_equal(a.details.p_star, b.details.p_star)
    np.testing.assert_allclose(b.details.log_contribution, a.details.log_contribution, rtol=TOL)


@pytest.mark.skipif(not CUDA, reason="no CUDA GPU")
def test_cuda_matches_numpy() -> None:  # pragma: no cover - needs a GPU
    w, spec = random_block(3, n=128, h=8, d=16, f=512)
    assert_same_spectra(make_block_spectra("cuda")(w, spec), block_spectra(w, spec))


@pytest.mark.skipif(CUDA, reason="a CUDA GPU is present")
def test_cuda_unavailable_is_one_line_error() -> None:
    with pytest.raises(SpecboundError, match="no CUDA GPU") as e:
        make_block_spectra("cuda")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("bad", ["tpu", "mps", "gpu0", ""])
def test_unknown_device(bad: str) -> None:
    with pytest.raises(SpecboundError) as e:
        resolve_device(bad)
    assert "\n" not in str(e.value)


def test_missing_torch_is_one_line_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    with pytest.raises(SpecboundError, match="needs PyTorch"):
        make_block_spectra("cpu")


def test_cli_device_error_exit_2(tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from specbound.cli import app

    monkeypatch.setenv("SPECBOUND_CACHE_DIR", str(tmp_path))
    r = CliRunner().invoke(app, ["analyze", "demo:minilm", "--no-cache", "-q", "--device", "tpu"])
    assert r.exit_code == 2
    out = r.output.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("error:") and "device" in out[0]


@pytest.mark.skipif(CUDA, reason="a CUDA GPU is present")
def test_cli_device_error_names_the_flag(tmp_path) -> None:
    """The library says ``device='cuda'``; the CLI said ``use device='cpu'`` too (a Python
    parameter on the command line): it writes ``--device`` now."""
    from tests.support.checkpoints import write_tiny_bert
    from tests.support.cli_runner import run_cli

    m = write_tiny_bert(tmp_path / "m")
    line = run_cli("analyze", str(m), "--device", "cuda").one_error_line()
    assert line.startswith("error: --device 'cuda' requested but no CUDA GPU")
    assert line.endswith("; use --device cpu or numpy") and "device=" not in line
    with pytest.raises(
        SpecboundError, match=r"^device='cuda' requested .*; use device=cpu or numpy$"
    ):
        resolve_device("cuda")
