"""Log-space helpers shared by the bound modules (pure numpy; logs are natural)."""

from __future__ import annotations

import math

import numpy as np

LN10 = math.log(10.0)
#: s is floored here before taking logs (SPEC.md section 6): the smallest positive normal float.
S_FLOOR = float(np.finfo(np.float64).tiny)
#: ln of the largest float64: exp of anything above it overflows.
LOG_MAX = math.log(np.finfo(np.float64).max)


def safe_log(x: np.ndarray | float) -> np.ndarray:
    """Natural log as float64, log 0 = -inf without a warning."""
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(x, dtype=np.float64))


def logsumexp(a: np.ndarray, axis: int | None = None) -> np.ndarray:
    """log(sum(exp(a))) with -inf entries allowed (all -inf gives -inf)."""
    a = np.asarray(a, dtype=np.float64)
    m = np.max(a, axis=axis, keepdims=True) if a.size else np.array(-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", over="ignore"):  # an +inf entry gives +inf, as it should
        out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return np.squeeze(out, axis=axis) if axis is not None else out.reshape(())
