"""Fast spectral paths against brute force: explicit N x N products and full dense SVDs.

Contract: factored QK/OV spectra agree with the dense SVD of the explicit product to the
accuracy of a backward-stable SVD, |s_i - s'_i| <= 50 eps k scale (absolute; see
spectral_checks.py), and exactly on the rank away from the rank threshold; norms agree to 1e-10
relative. The FFN Gram route is used only behind an accuracy guard, else LAPACK.
"""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
import scipy.linalg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specbound.adapters.base import LayerWeights, ModelSpec
from specbound.linalg import spectra as sp
from specbound.linalg.spectra import (
    MATRIX_TYPES,
    Spectra,
    attention_spectra,
    block_spectra,
    dense_svdvals,
    gram_is_accurate,
    lowrank_svdvals,
    numerical_rank,
)
from tests.conftest import THREAD_VARS
from tests.support.spectral_checks import (
    assert_sv_match,
    spec_rank,
    spec_rank_threshold,
    sv_tolerance,
)

TOL = 1e-10  # relative, for norms (dominated by large terms)


def dense_row(m: np.ndarray, scale: float | None = None) -> dict:
    """Brute force: full SVD and norms of an explicit matrix (SPEC.md section 3).

    ``scale``: size of the round-off in forming m (||X||_F ||Y||_F for m = X Y^T), else s_1.
    """
    s = scipy.linalg.svd(m, compute_uv=False, lapack_driver="gesvd")
    return {
        "sv": s,
        "scale": float(s[0]) if scale is None else scale,
        "rank": spec_rank(s, min(m.shape)),
        "fro": float(np.linalg.norm(m)),
        "nuc": float(s.sum()),
        "n21": float(np.linalg.norm(m, axis=0).sum()),
        "n11": float(np.abs(m).sum()),
    }


def factors(
    rng: np.random.Generator, n: int, d: int, rank_x: int, rank_y: int, scale: float
) -> tuple[np.ndarray, np.ndarray]:
    x = rng.standard_normal((n, rank_x)) @ rng.standard_normal((rank_x, d)) * scale
    y = rng.standard_normal((n, rank_y)) @ rng.standard_normal((rank_y, d))
    return x, y


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(4, 96),
    d=st.integers(1, 24),
    drop_x=st.integers(0, 5),
    drop_y=st.integers(0, 5),
    log_scale=st.floats(-3, 3),
    seed=st.integers(0, 2**31 - 1),
)
def test_lowrank_matches_dense_svd(
    n: int, d: int, drop_x: int, drop_y: int, log_scale: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    d = min(d, n)
    x, y = factors(rng, n, d, max(0, d - drop_x), max(0, d - drop_y), 10.0**log_scale)
    a = x @ y.T
    ref = dense_row(a)
    sv, n21, n11 = attention_spectra(x[None], y[None])
    # round-off of both routes is relative to the factors, not to s_1 of their product
    scale = float(np.linalg.norm(x) * np.linalg.norm(y))
    assert_sv_match(sv[0], ref["sv"], n, scale, got_rank=numerical_rank(sv[0], n))
    assert (
        numerical_rank(sv[0], n) <= min(d - drop_x, d - drop_y)
        if d > max(drop_x, drop_y)
        else numerical_rank(sv[0], n) == 0
    )
    scale = max(ref["fro"], 1e-300)
    assert abs(np.sqrt(np.sum(sv[0] ** 2)) - ref["fro"]) <= TOL * scale
    assert n21[0] == pytest.approx(ref["n21"], rel=TOL, abs=1e-300)
    assert n11[0] == pytest.approx(ref["n11"], rel=TOL, abs=1e-300)


def test_lowrank_graded_spectrum() -> None:
    """A core with singular values spread over 8 orders of magnitude (all above threshold)."""
    rng = np.random.default_rng(1)
    n, d = 200, 16
    u, _ = np.linalg.qr(rng.standard_normal((n, d)))
    v, _ = np.linalg.qr(rng.standard_normal((n, d)))
    s = np.logspace(0, -6, d) * 3.0
    x, y = u * s, v  # x y^T = u diag(s) v^T
    ref = dense_row(x @ y.T)
    fast = lowrank_svdvals(x[None], y[None])[0]
    assert_sv_match(fast, s, n)  # exact answer known here
    assert_sv_match(fast, ref["sv"], n)
    assert numerical_rank(fast, n) == d  # s_d = 3e-6 is far above the threshold 6e-8


def test_lowrank_zero_and_wide_heads() -> None:
    rng = np.random.default_rng(2)
    z = np.zeros((10, 3))
    sv, n21, n11 = attention_spectra(z[None], rng.standard_normal((1, 10, 3)))
    assert numerical_rank(sv[0], 10) == 0 and n21[0] == 0 and n11[0] == 0
    # head_dim larger than N (degenerate config): the core is N x N
    x, y = rng.standard_normal((1, 5, 8)), rng.standard_normal((1, 5, 8))
    sv, _, n11 = attention_spectra(x, y)
    ref = dense_row(x[0] @ y[0].T)
    assert_sv_match(sv[0], ref["sv"], 5)
    assert n11[0] == pytest.approx(ref["n11"], rel=TOL)


def test_norm_11_chunking_is_exact() -> None:
    """Row-blocked (1,1) norms equal the one-shot sum, whatever the block size."""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((3, 50, 4)), rng.standard_normal((3, 40, 4))
    want = np.abs(np.matmul(x, np.swapaxes(y, 1, 2))).sum(axis=(1, 2))
    for chunk in (1, 7, 40, 41, 10**6):
        np.testing.assert_allclose(sp.lowrank_norm_11(x, y, chunk), want, rtol=1e-13)


# ---- FFN matrices -----------------------------------------------------------------------------


def with_spectrum(rng: np.random.Generator, m: int, n: int, s: np.ndarray) -> np.ndarray:
    u, _ = np.linalg.qr(rng.standard_normal((m, len(s))))
    v, _ = np.linalg.qr(rng.standard_normal((n, len(s))))
    return (u * s) @ v.T


@pytest.mark.parametrize("shape", [(64, 256), (256, 64), (120, 120)])
def test_gram_route_when_well_conditioned(shape: tuple[int, int], monkeypatch) -> None:
    rng = np.random.default_rng(4)
    k = min(shape)
    s = np.linspace(5.0, 0.5, k)
    m = with_spectrum(rng, *shape, s)
    calls = []
    monkeypatch.setattr(sp, "lapack_svdvals", lambda a: calls.append(1) or scipy.linalg.svdvals(a))
    got = dense_svdvals(m)
    assert calls == []  # Gram route taken
    assert_sv_match(got, s, k)  # the exact spectrum
    assert_sv_match(got, scipy.linalg.svdvals(m), k)


@pytest.mark.parametrize(("smallest", "rank"), [(1e-4, 48), (1e-7, 48), (1e-9, 40), (0.0, 40)])
def test_gram_guard_falls_back_near_rank_threshold(smallest: float, rank: int, monkeypatch) -> None:
    """Ill-conditioned or rank-deficient: the guard must reject Gram and use LAPACK."""
    rng = np.random.default_rng(5)
    s = np.concatenate([np.linspace(3.0, 1.0, 40), [smallest] * 8])
    m = with_spectrum(rng, 48, 160, s) if smallest else with_spectrum(rng, 48, 160, s[:40])
    calls = []
    real = sp.lapack_svdvals
    monkeypatch.setattr(sp, "lapack_svdvals", lambda a: calls.append(1) or real(a))
    got = dense_svdvals(m)
    assert calls == [1]
    ref = scipy.linalg.svdvals(m)
    assert_sv_match(got, ref, 48)
    assert numerical_rank(got, 48) == rank  # threshold 1e-10 * 48 * 3 = 1.44e-8
    assert spec_rank_threshold(48, 3.0) == pytest.approx(1.44e-8)
    # the Gram route alone would be wrong here: that is what the guard is for
    gram = dense_svdvals(m, method="gram")
    if smallest:
        assert not gram_is_accurate(gram, 48)


def test_guard_threshold_is_conservative() -> None:
    """Where the guard accepts Gram, the Gram values really are within 1e-10 of gesdd."""
    rng = np.random.default_rng(6)
    k = 100
    for ratio in np.geomspace(1.0, 1e-3, 25):
        s = np.geomspace(1.0, ratio, k)
        m = with_spectrum(rng, k, 3 * k, s)
        gram = dense_svdvals(m, method="gram")
        if gram_is_accurate(gram, k):
            ref = scipy.linalg.svdvals(m)
            # the guard's own contract is relative: it accepts only s_min >~ s_1 / 100
            np.testing.assert_allclose(gram, ref, rtol=TOL)


def test_dense_svdvals_methods_and_errors() -> None:
    rng = np.random.default_rng(7)
    m = rng.standard_normal((30, 70))
    ref = scipy.linalg.svdvals(m)
    for method in ("auto", "gram", "svd"):
        assert_sv_match(dense_svdvals(m, method), ref, 30)
    with pytest.raises(ValueError, match="unknown SVD method"):
        dense_svdvals(m, "qr")
    assert dense_svdvals(np.zeros((0, 4))).size == 0


# ---- whole blocks against brute force ---------------------------------------------------------


def random_block(
    rng: np.random.Generator, n: int, h: int, d: int, f: int, kv: int | None = None, index: int = 0
) -> tuple[LayerWeights, ModelSpec]:
    kv = kv or h
    spec = ModelSpec("bert", 1, n, h, d, f, "gelu", num_kv_heads=kv)
    w = LayerWeights(
        index=index,
        wq=rng.standard_normal((h * d, n)) * 0.1,
        wk=rng.standard_normal((kv * d, n)) * 0.1,
        wv=rng.standard_normal((kv * d, n)) * 0.1,
        wo=rng.standard_normal((n, h * d)) * 0.1,
        w_in=rng.standard_normal((f, n)) * 0.05,
        w_out=rng.standard_normal((n, f)) * 0.05,
    )
    return w, spec


def brute_block(w: LayerWeights, spec: ModelSpec) -> list[dict]:
    """SPEC.md section 2 verbatim: explicit N x N products, M_in = w_in.T, M_out = w_out.T."""
    h, d = spec.num_heads, spec.head_dim
    rep = h // spec.kv_heads
    rows = []
    fro = np.linalg.norm
    for head in range(h):
        hs, ks = slice(head * d, (head + 1) * d), slice((head // rep) * d, (head // rep + 1) * d)
        rows.append(dense_row(w.wq[hs].T @ w.wk[ks], fro(w.wq[hs]) * fro(w.wk[ks])))
    for head in range(h):
        hs, ks = slice(head * d, (head + 1) * d), slice((head // rep) * d, (head // rep + 1) * d)
        rows.append(dense_row(w.wv[ks].T @ w.wo[:, hs].T, fro(w.wv[ks]) * fro(w.wo[:, hs])))
    rows.append(dense_row(w.w_in.T))
    rows.append(dense_row(w.w_out.T))
    return rows


def assert_block_matches(s: Spectra, ref: list[dict]) -> None:
    assert len(s) == len(ref)
    for i, r in enumerate(ref):
        k = int(min(s.rows[i], s.cols[i]))
        assert_sv_match(s.singular_values(i), r["sv"], k, r["scale"], got_rank=int(s.rank[i]))
        for field, key in [
            ("frobenius_norm", "fro"),
            ("nuclear_norm", "nuc"),
            ("norm_21", "n21"),
            ("norm_11", "n11"),
        ]:
            assert getattr(s, field)[i] == pytest.approx(r[key], rel=TOL), (i, field)


@pytest.mark.parametrize("kv", [None, 2, 1])
def test_block_spectra_matches_brute_force(kv: int | None) -> None:
    rng = np.random.default_rng(8)
    w, spec = random_block(rng, n=48, h=4, d=12, f=96, kv=kv, index=3)
    s = block_spectra(w, spec)
    assert list(s.layer) == [3] * 10
    assert [MATRIX_TYPES[t] for t in s.matrix_type] == ["QK"] * 4 + ["OV"] * 4 + ["M_in", "M_out"]
    assert list(s.head) == [0, 1, 2, 3] * 2 + [-1, -1]
    assert list(s.rows) == [48] * 8 + [48, 96] and list(s.cols) == [48] * 8 + [96, 48]
    assert_block_matches(s, brute_block(w, spec))


def test_block_spectra_low_rank_heads() -> None:
    """Heads whose factors are rank deficient: ranks must match the dense SVD exactly."""
    rng = np.random.default_rng(9)
    w, spec = random_block(rng, n=40, h=4, d=10, f=80)
    w.wq[0:10] = rng.standard_normal((10, 3)) @ rng.standard_normal((3, 40))  # QK head 0: rank 3
    w.wv[20:30] = 0.0  # OV head 2: zero
    w.wo[:, 30:40] = np.repeat(w.wo[:, 30:31], 10, axis=1)  # OV head 3: rank 1
    s = block_spectra(w, spec)
    ref = brute_block(w, spec)
    assert_block_matches(s, ref)
    ranks = list(s.rank)
    assert ranks[0] == 3 and ranks[4 + 2] == 0 and ranks[4 + 3] == 1


def test_minilm_blocks_match_brute_force() -> None:
    """The real all-MiniLM-L6-v2: two blocks, every matrix against dense SVD of the product."""
    from specbound.adapters import get_adapter
    from specbound.demo import minilm_path
    from specbound.io.checkpoint import load_checkpoint

    adapter = get_adapter(load_checkpoint(str(minilm_path())))
    spec = adapter.spec()
    for layer in (0, spec.num_layers - 1):
        w = adapter.layer(layer)
        assert_block_matches(block_spectra(w, spec), brute_block(w, spec))


@pytest.mark.parametrize("mode", ["pool", "blas"])
def test_parallel_modes_match_brute_force(mode: str, monkeypatch) -> None:
    """Each parallel mode against the independent dense reference (not against each other)."""
    rng = np.random.default_rng(10)
    w, spec = random_block(rng, n=64, h=4, d=16, f=128)
    w.wq[:16] = rng.standard_normal((16, 2)) @ rng.standard_normal((2, 64))  # a rank-2 QK head
    monkeypatch.setenv("SPECBOUND_PARALLEL", mode)
    s = block_spectra(w, spec)
    assert_block_matches(s, brute_block(w, spec))
    assert int(s.rank[0]) == 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_pool_survives_fork(monkeypatch) -> None:
    """A child forked after the worker pool exists gets its own pool (no hang on dead threads)."""
    monkeypatch.setenv("SPECBOUND_PARALLEL", "pool")
    rng = np.random.default_rng(11)
    w, spec = random_block(rng, n=32, h=2, d=16, f=64)
    want = block_spectra(w, spec)  # creates the pool in this process
    pid = os.fork()
    if pid == 0:  # child: must finish (alarm kills a hang) with identical results
        signal.alarm(60)
        got = block_spectra(w, spec)
        tol = sv_tolerance(32, float(want.sv_values.max()))
        os._exit(0 if np.allclose(got.sv_values, want.sv_values, rtol=0, atol=tol) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_pool_limits_scipy_blas_loaded_after_the_pool():
    """scipy's own OpenBLAS, loaded after the pool was made, is also held to one thread in the
    workers (else its LAPACK oversubscribes the cores; measured 4-10x slower under load)."""
    import subprocess
    import sys

    code = """
import numpy as np
from specbound.linalg import pool
from threadpoolctl import threadpool_info
pool.usable_cpus = lambda: 2  # two pool threads even on a one-core machine
pool.run_jobs([lambda: np.linalg.svd(np.eye(3)), lambda: 1])  # the pool, numpy only
assert "scipy.linalg" not in __import__("sys").modules
import scipy.linalg
info = pool.run_jobs([lambda: threadpool_info(), lambda: 1])[0]
blas = [i for i in info if i["user_api"] == "blas"]
assert len(blas) >= 2, blas  # numpy's and scipy's
print(sorted({i["num_threads"] for i in blas}))
"""
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        # without the one-thread variables of a pytest-xdist worker (tests/conftest.py): the
        # limit seen must be the pool's own
        env={
            **{k: v for k, v in os.environ.items() if k not in THREAD_VARS},
            "SPECBOUND_PARALLEL": "pool",
        },
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[1]"
