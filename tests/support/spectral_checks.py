"""Test-side yardsticks for singular values, written from SPEC.md section 3 (no specbound import).

Two correct, backward-stable methods (a factored core SVD and a dense LAPACK SVD, numpy and
torch, gesdd and the Gram route) agree on a singular value only to an *absolute* error of a
modest multiple of eps * k * s_1: a tiny s_i (say 1e-5 next to s_1 = 1e3) carries the same
absolute round-off as s_1, so no relative tolerance on it is honest. Hence:

- values: |s_i - s'_i| <= SV_C * eps * k * scale for every i (scale = s_1, or the product of the
  factors' norms when the matrix is formed from factors, where round-off is relative to them);
- rank: exact agreement, except when some s_i lies within a guard band
  RANK_BAND * eps * k * scale of the rank threshold (then either answer is correct);
- norms and proxies keep their relative 1e-9 / 1e-10 checks (they are dominated by large terms).
"""

from __future__ import annotations

import numpy as np

EPS = float(np.finfo(np.float64).eps)
#: Constant of the absolute singular-value criterion |s_i - s'_i| <= SV_C * eps * k * scale.
SV_C = 50.0
#: Half-width (in units of eps * k * scale) of the band around the rank threshold where the two
#: methods may legitimately disagree on the rank.
RANK_BAND = 1e3


def spec_rank_threshold(k: int, s1: float) -> float:
    """SPEC.md section 3: s_i counts toward the rank iff s_i > 1e-10 * k * max(s_1, 1)."""
    return 1e-10 * k * max(float(s1), 1.0)


def spec_rank(sv: np.ndarray, k: int) -> int:
    """Numerical rank of SPEC.md section 3, from singular values in any order."""
    sv = np.asarray(sv, dtype=float)
    if sv.size == 0:
        return 0
    return int(np.count_nonzero(sv > spec_rank_threshold(k, sv.max())))


def sv_tolerance(k: int, scale: float) -> float:
    """Absolute agreement expected between two backward-stable SVDs: SV_C * eps * k * scale."""
    return SV_C * EPS * k * float(scale)


def rank_is_ambiguous(sv: np.ndarray, k: int, scale: float | None = None) -> bool:
    """Whether some s_i lies within RANK_BAND * eps * k * scale of the rank threshold."""
    sv = np.asarray(sv, dtype=float)
    if sv.size == 0:
        return False
    s1 = float(sv.max())
    scale = s1 if scale is None else max(float(scale), s1)
    band = RANK_BAND * EPS * k * scale
    return bool(np.any(np.abs(sv - spec_rank_threshold(k, s1)) <= band))


def assert_sv_match(
    got: np.ndarray,
    want: np.ndarray,
    k: int,
    scale: float | None = None,
    got_rank: int | None = None,
) -> None:
    """``got`` (possibly only the d leading values of a factored core) against reference ``want``.

    k = min(rows, cols) of the full matrix; scale defaults to the reference s_1. Values beyond
    the shorter array must be round-off zeros. ``got_rank`` (default: the SPEC rank of ``got``)
    must equal the SPEC rank of ``want`` unless the rank is ambiguous.
    """
    got = np.sort(np.asarray(got, dtype=float))[::-1]
    want = np.sort(np.asarray(want, dtype=float))[::-1]
    s1 = float(want[0]) if want.size else 0.0
    scale = s1 if scale is None else max(float(scale), s1)
    tol = sv_tolerance(k, scale)
    n = min(got.size, want.size)
    err = np.abs(got[:n] - want[:n])
    assert np.all(err <= tol), (
        f"singular values differ by {err.max():.3g} > {tol:.3g} (= {SV_C} eps k scale, "
        f"k={k}, scale={scale:.6g})"
    )
    assert np.all(np.abs(got[n:]) <= tol) and np.all(np.abs(want[n:]) <= tol), (
        "values beyond the shorter spectrum are not round-off zeros"
    )
    if not rank_is_ambiguous(want, k, scale):
        r_got = spec_rank(got, k) if got_rank is None else int(got_rank)
        assert r_got == spec_rank(want, k), (r_got, spec_rank(want, k))


def assert_spectra_sv_match(got, want) -> None:
    """Row by row ``assert_sv_match`` of two Spectra tables with the same rows (and ranks)."""
    assert len(got) == len(want)
    for i in range(len(want)):
        k = int(min(want.rows[i], want.cols[i]))
        assert_sv_match(
            got.singular_values(i), want.singular_values(i), k, got_rank=int(got.rank[i])
        )
