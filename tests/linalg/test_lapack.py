"""specbound.linalg.lapack: the GIL-releasing LAPACK calls against scipy's own LAPACK (a separate
OpenBLAS build), numpy's fallback, and every way the ctypes binding can be refused."""

from __future__ import annotations

import ctypes.util

import numpy as np
import pytest
import scipy.linalg
from threadpoolctl import threadpool_info

from specbound.linalg import lapack, spectra
from tests.support.safetensors_np import load_file
from tests.support.spectral_checks import EPS, SV_C, assert_sv_match


@pytest.fixture(autouse=True)
def _fresh_binding():
    """Each test binds anew (monkeypatched environments must not leak into the cache)."""
    lapack._state.clear()
    yield
    lapack._state.clear()


def _with_spectrum(rng: np.random.Generator, m: int, n: int, s: np.ndarray) -> np.ndarray:
    u, _ = np.linalg.qr(rng.standard_normal((m, len(s))))
    v, _ = np.linalg.qr(rng.standard_normal((n, len(s))))
    return (u * s) @ v.T


def _matrices() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(20)
    graded = _with_spectrum(rng, 90, 40, np.logspace(2, -9, 40))
    rank3 = rng.standard_normal((50, 3)) @ rng.standard_normal((3, 70))
    return [
        ("square", rng.standard_normal((64, 64))),
        ("tall", rng.standard_normal((200, 30))),
        ("wide", rng.standard_normal((30, 200))),
        ("row", rng.standard_normal((1, 17))),
        ("column", rng.standard_normal((17, 1))),
        ("graded 1e2..1e-9", graded),
        ("rank 3", rank3),
        ("zero", np.zeros((12, 5))),
        ("float32 transposed view", rng.standard_normal((40, 25)).astype(np.float32).T),
    ]


def test_numpys_openblas_gets_the_gil_free_path():
    """Where numpy runs on OpenBLAS (its PyPI wheels: this CI), the fast path must be taken;
    else the speed in benchmarks/README.md silently disappears."""
    import numpy  # noqa: F401  (loads numpy's BLAS so threadpoolctl sees it)

    numpy_openblas = [
        d
        for d in threadpool_info()
        if d.get("internal_api") == "openblas" and "numpy" in d["filepath"]
    ]
    if not numpy_openblas:
        pytest.skip("numpy is not linked to its bundled OpenBLAS here")
    assert lapack.available()


def test_a_32_bit_integer_openblas_binds_too(monkeypatch):
    """scipy's own OpenBLAS (scipy-openblas32: ``scipy_`` prefix, 32-bit integers) is a second
    real library with the other integer width: bound through it, results still match."""
    others = [
        d["filepath"]
        for d in threadpool_info()
        if d.get("internal_api") == "openblas" and "numpy" not in d["filepath"]
    ]
    if not others:
        pytest.skip("no second OpenBLAS (scipy's) is loaded here")
    monkeypatch.setattr(lapack, "_openblas_paths", lambda: others)
    assert lapack.available()
    m = np.random.default_rng(9).standard_normal((70, 45))
    want = scipy.linalg.svd(m, compute_uv=False, lapack_driver="gesvd")
    assert_sv_match(lapack.svdvals(m), want, 45)
    g = m.T @ m
    ev = lapack.eigvalsh(g)
    assert np.max(np.abs(ev - np.sort(want**2))) <= SV_C * EPS * 45 * float(want[0] ** 2)


@pytest.mark.parametrize("name", [n for n, _ in _matrices()])
def test_svdvals_match_scipy_lapack(name):
    m = dict(_matrices())[name]
    before = m.copy()
    got = lapack.svdvals(m)
    want = scipy.linalg.svd(
        np.asarray(m, dtype=np.float64), compute_uv=False, lapack_driver="gesvd"
    )
    assert got.dtype == np.float64 and got.shape == (min(m.shape),)
    assert np.all(np.diff(got) <= 0), "not descending"
    assert_sv_match(got, want, min(m.shape))
    np.testing.assert_array_equal(m, before)  # gesdd overwrites its input: a copy is used


def test_minilm_query_weights(minilm_dir):
    """The real weights the raw-weight measures use, every attention projection of layer 0."""
    sd = load_file(str(minilm_dir / "model.safetensors"))
    for name in ("query", "key", "value"):
        w = sd[f"encoder.layer.0.attention.self.{name}.weight"].astype(np.float64)
        want = scipy.linalg.svd(w, compute_uv=False, lapack_driver="gesvd")
        assert_sv_match(lapack.svdvals(w), want, 384)


@pytest.mark.parametrize("n", [1, 7, 120])
def test_eigvalsh_matches_scipy(n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, 2 * n + 3))
    g = a @ a.T
    got = lapack.eigvalsh(g)
    want = scipy.linalg.eigvalsh(g, driver="evr")
    assert np.all(np.diff(got) >= 0), "not ascending"
    tol = SV_C * EPS * n * float(np.abs(want).max())
    assert np.max(np.abs(got - want)) <= tol


def test_eigvalsh_reads_the_lower_triangle_like_numpy():
    g = np.array([[2.0, 99.0], [1.0, 3.0]])  # upper triangle is garbage on purpose
    np.testing.assert_allclose(lapack.eigvalsh(g), np.linalg.eigvalsh(g), rtol=1e-14)


def test_environment_switch_uses_numpy_bit_for_bit(monkeypatch):
    monkeypatch.setenv(lapack.ENV, "numpy")
    assert not lapack.available()
    m = np.random.default_rng(1).standard_normal((33, 21))
    np.testing.assert_array_equal(lapack.svdvals(m), np.linalg.svd(m, compute_uv=False))
    g = m.T @ m
    np.testing.assert_array_equal(lapack.eigvalsh(g), np.linalg.eigvalsh(g))


@pytest.mark.parametrize(
    "paths",
    [
        [],  # no OpenBLAS loaded (MKL, Accelerate)
        ["/nonexistent/libopenblas.so"],  # cannot be opened
        [ctypes.util.find_library("c") or "libc.so.6"],  # opens, has no LAPACKE symbols
    ],
)
def test_unusable_libraries_fall_back_to_numpy(paths, monkeypatch):
    monkeypatch.setattr(lapack, "_openblas_paths", lambda: paths)
    assert not lapack.available()
    m = np.random.default_rng(2).standard_normal((15, 9))
    np.testing.assert_array_equal(lapack.svdvals(m), np.linalg.svd(m, compute_uv=False))


def test_a_binding_that_fails_its_self_check_is_not_used(monkeypatch):
    """A routine returning wrong numbers (e.g. a mistaken integer width) must never be used."""

    def bogus(path):
        def gesdd(layout, jobz, m, n, a, lda, s, u, ldu, vt, ldvt):
            ctypes.memset(s, 0, 8 * min(m, n))
            return 0

        def syevd(layout, jobz, uplo, n, a, lda, w):
            ctypes.memset(w, 0, 8 * n)
            return 0

        return gesdd, syevd

    monkeypatch.setattr(lapack, "_openblas_paths", lambda: ["bogus"])
    monkeypatch.setattr(lapack, "_bind", bogus)
    assert not lapack.available()


def test_nonzero_info_is_a_linalg_error_and_robust_svdvals_retries_gesvd(monkeypatch):
    """gesdd that does not converge (info > 0): LinAlgError, and spectra retries with gesvd."""
    monkeypatch.setattr(lapack, "_openblas_paths", lambda: ["fake"])
    monkeypatch.setattr(
        lapack,
        "_bind",
        lambda path: (lambda *a: 7, lambda *a: 7),
    )
    monkeypatch.setattr(lapack, "_functions", lambda: (lambda *a: 7, lambda *a: 7))
    m = np.random.default_rng(3).standard_normal((20, 11))
    with pytest.raises(np.linalg.LinAlgError, match="dgesdd returned info=7"):
        lapack.svdvals(m)
    with pytest.raises(np.linalg.LinAlgError, match="dsyevd returned info=7"):
        lapack.eigvalsh(m.T @ m)
    got = spectra.robust_svdvals(m)
    assert_sv_match(got, scipy.linalg.svdvals(m), 11)


def test_shape_errors():
    with pytest.raises(ValueError, match="2-D"):
        lapack.svdvals(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match="square"):
        lapack.eigvalsh(np.zeros((2, 3)))
    assert lapack.svdvals(np.zeros((0, 4))).shape == (0,)
    assert lapack.eigvalsh(np.zeros((0, 0))).shape == (0,)
