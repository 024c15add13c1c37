"""LAPACK singular values and eigenvalues that release the GIL, from numpy's own OpenBLAS.

numpy's ``linalg`` holds the GIL for the whole of a LAPACK call, so the worker threads of
``spectra.run_jobs`` run its SVDs one after another (measured: 24 SVDs of 384 x 384 take as long on
two threads as on one). ctypes releases the GIL around a foreign call, so the same routines (LAPACKE
``dgesdd`` and ``dsyevd``, values only, as numpy calls them) called through ctypes from the OpenBLAS
library that numpy links run on every core at once. Used only where the library is OpenBLAS, its
integer width is known from the symbol names and a self-check on a fixed matrix agrees with numpy;
everywhere else (MKL, Accelerate, an unknown build) and under ``SPECBOUND_LAPACK=numpy`` the calls
go through numpy: same LAPACK algorithms, same results up to round-off, one at a time.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from .. import config

#: ``$SPECBOUND_LAPACK``: "auto" (ctypes when available) or "numpy" (always numpy.linalg).
ENV = "SPECBOUND_LAPACK"
_COL_MAJOR = 102
#: Symbol spellings of OpenBLAS builds: numpy >= 2 wheels (scipy-openblas64, 64-bit integers),
#: scipy's wheels (scipy-openblas32), older openblas64_ wheels, plain 32-bit-integer builds.
_SPELLINGS = (
    ("scipy_", "64_", ctypes.c_int64),
    ("scipy_", "", ctypes.c_int32),
    ("", "64_", ctypes.c_int64),
    ("", "", ctypes.c_int32),
)

_lock = threading.Lock()
_state: dict[str, Any] = {}


def _openblas_paths() -> list[str]:
    """Paths of the OpenBLAS libraries loaded in this process, numpy's first."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return []
    paths = [d["filepath"] for d in threadpool_info() if d.get("internal_api") == "openblas"]
    return sorted(paths, key=lambda p: "numpy" not in p)


def _bind(path: str) -> Any:
    """(LAPACKE_dgesdd, LAPACKE_dsyevd) of the library at ``path``, typed, or None."""
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None
    for prefix, suffix, int_t in _SPELLINGS:
        fn = getattr(lib, f"{prefix}LAPACKE_dgesdd{suffix}", None)
        ev = getattr(lib, f"{prefix}LAPACKE_dsyevd{suffix}", None)
        if fn is None or ev is None:
            continue
        config = getattr(lib, f"{prefix}openblas_get_config{suffix}", None)
        if config is not None:  # the build says whether its integers are 64-bit
            config.restype = ctypes.c_char_p
            wide = b"USE64BITINT" in (config() or b"")
            if wide != (int_t is ctypes.c_int64):
                continue
        fn.restype = int_t
        fn.argtypes = [
            ctypes.c_int,  # matrix layout
            ctypes.c_char,  # jobz
            int_t,  # m
            int_t,  # n
            ctypes.c_void_p,  # a
            int_t,  # lda
            ctypes.c_void_p,  # s
            ctypes.c_void_p,  # u
            int_t,  # ldu
            ctypes.c_void_p,  # vt
            int_t,  # ldvt
        ]
        ev.restype = int_t
        ev.argtypes = [
            ctypes.c_int,  # matrix layout
            ctypes.c_char,  # jobz
            ctypes.c_char,  # uplo
            int_t,  # n
            ctypes.c_void_p,  # a
            int_t,  # lda
            ctypes.c_void_p,  # w
        ]
        return fn, ev
    return None


def _gesdd(fn: Any, m: np.ndarray) -> np.ndarray:
    # A C-ordered r x c array is, read column-major, its c x r transpose: same singular values,
    # no transposing copy. gesdd overwrites its input, hence the copy.
    a = np.array(m, dtype=np.float64, order="C", copy=True)
    rows, cols = a.shape
    s = np.empty(min(rows, cols))
    info = fn(
        _COL_MAJOR, b"N", cols, rows, a.ctypes.data, max(cols, 1), s.ctypes.data, None, 1, None, 1
    )
    if info != 0:
        raise np.linalg.LinAlgError(f"LAPACK dgesdd returned info={info}")
    return s


def _syevd(ev: Any, g: np.ndarray) -> np.ndarray:
    # Read column-major, the C-ordered array is its transpose: its "U" triangle is the "L" one
    # numpy.linalg.eigvalsh reads. dsyevd overwrites its input, hence the copy.
    a = np.array(g, dtype=np.float64, order="C", copy=True)
    n = a.shape[0]
    w = np.empty(n)
    info = ev(_COL_MAJOR, b"N", b"U", n, a.ctypes.data, max(n, 1), w.ctypes.data)
    if info != 0:
        raise np.linalg.LinAlgError(f"LAPACK dsyevd returned info={info}")
    return w


def _functions() -> Any:
    """The bound (dgesdd, dsyevd) after their self-check, or None (numpy then)."""
    if config.lapack_backend() == "numpy":
        return None
    with _lock:
        if "fns" not in _state:
            _state["fns"] = None
            check = np.array([[3.0, 1.0], [1.0, 3.0], [0.5, -2.0]])
            expect_sv = np.linalg.svd(check, compute_uv=False)
            gram = check.T @ check
            expect_ev = np.linalg.eigvalsh(gram)
            for path in _openblas_paths():
                fns = _bind(path)
                if fns is None:
                    continue
                try:
                    sv, ev = _gesdd(fns[0], check), _syevd(fns[1], gram)
                except (np.linalg.LinAlgError, OSError, ValueError):
                    continue
                if np.allclose(sv, expect_sv, rtol=1e-12, atol=0) and np.allclose(
                    ev, expect_ev, rtol=1e-12, atol=0
                ):
                    _state["fns"] = fns
                    break
        return _state["fns"]


def available() -> bool:
    """Whether LAPACK calls run through the GIL-releasing ctypes path."""
    return _functions() is not None


def svdvals(m: np.ndarray) -> np.ndarray:
    """Singular values (descending, float64) of the 2-D array ``m`` by LAPACK gesdd.

    Raises ``np.linalg.LinAlgError`` when gesdd does not converge (callers retry with gesvd).
    """
    if m.ndim != 2:
        raise ValueError(f"svdvals takes a 2-D array, got shape {m.shape}")
    if m.size == 0:
        return np.zeros(0)
    fns = _functions()
    if fns is None:
        return np.linalg.svd(np.asarray(m, dtype=np.float64), compute_uv=False)
    return _gesdd(fns[0], m)


def eigvalsh(g: np.ndarray) -> np.ndarray:
    """Eigenvalues (ascending, float64) of the symmetric 2-D array ``g`` (lower triangle read)
    by LAPACK dsyevd, as ``numpy.linalg.eigvalsh``. Raises ``np.linalg.LinAlgError`` when it does
    not converge."""
    if g.ndim != 2 or g.shape[0] != g.shape[1]:
        raise ValueError(f"eigvalsh takes a square 2-D array, got shape {g.shape}")
    if g.size == 0:
        return np.zeros(0)
    fns = _functions()
    if fns is None:
        return np.linalg.eigvalsh(np.asarray(g, dtype=np.float64))
    return _syevd(fns[1], g)
