"""The statistics of the correlation protocol (SPEC 10), as :class:`~.registry.Statistic`
entries, registered in the order of their columns in correlation.csv.

For a measure mu (larger = generalizes worse) and the gap g, over the models of a
:class:`~.sample.Sample`:

==================  ================================================  ===========  ==============
name                formula (:mod:`.stats`, :mod:`.arch`,             range        bootstrap
                    :mod:`.mutual_info`)
==================  ================================================  ===========  ==============
kendall_tau         Kendall tau-b of (mu, g)                          [-1, 1]      configurations
psi                 granulated Kendall Psi (mean of psi_i)            [-1, 1]      configurations
psi_axis            psi_i per axis, its groups and pairs              [-1, 1]      none
tau_fixed_n         mean over values of n of tau-b within n           [-1, 1]      configurations
psi_fixed_n         mean of psi_i over the axes other than n          [-1, 1]      configurations
tau_arch            mean over cells depth x width x n of tau-b        [-1, 1]      cells
cmi                 min over |S| <= 2 of Jiang's CMI_S, and its S     [0, inf)     configurations
sign_error          mean sign-error over one-axis pairs               [0, 1]       none
sign_error_axis     sign-error per axis, its pairs                    [0, 1]       configurations
sign_error_robust   max per-axis sign-error over axes with >= 10      [0, 1]       none
                    pairs, and that axis
==================  ================================================  ===========  ==============

Compared in differences.csv (paired differences, primary and exploratory rows): kendall_tau,
psi, tau_fixed_n, psi_fixed_n and tau_arch (the last only when some measure has a cell).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import arch as A
from . import stats as S
from .mutual_info import cmi, cmi_draws
from .registry import INTERVAL, Part, Statistic, register
from .sample import Sample
from .verdicts import MIN_STRATUM_CONFIGURATIONS

#: ``cmi_axes`` of the empty set of axes.
EMPTY_SET = "(none)"


def _constant(mu: np.ndarray, groups: Sequence[np.ndarray]) -> bool:
    """mu is constant on every set of ``groups`` with >= 2 models (and there is one)."""
    sized = [grp for grp in groups if grp.size >= 2]
    return bool(sized) and all(np.unique(mu[grp]).size == 1 for grp in sized)


def _enough(config: np.ndarray, sets: Sequence[np.ndarray]) -> int:
    """Sets holding >= ``MIN_STRATUM_CONFIGURATIONS`` configurations."""
    return sum(int(np.unique(config[idx]).size >= MIN_STRATUM_CONFIGURATIONS) for idx in sets)


def _joint_field(name: str, **kw: Any) -> Statistic:
    """A statistic that is one field of :class:`.stats.Stats`, bootstrapped over configurations
    and compared in differences.csv (``kw``: the entry's other fields)."""

    def point(s: Sample) -> dict[str, Any]:
        return {name: float(getattr(s.joint(), name)[0])}

    def draws(s: Sample, counts: np.ndarray) -> dict[str, np.ndarray]:
        return {name: getattr(s.joint_draws(counts), name)}

    return Statistic(
        name, point, -1.0, 1.0, True, "configurations", draws, INTERVAL, compared=True, **kw
    )


def _psi_blind(skip_n: bool) -> Any:
    def blind(s: Sample) -> str:
        for a, groups in enumerate(s.design.groups):
            if skip_n and a == s.design.n_axis:
                continue
            if _constant(s.mu, groups):
                return f"constant on every group of axis {s.axes[a]}"
        return ""

    return blind


def _tau_blind(s: Sample) -> str:
    return "constant on every model" if s.size >= 2 and np.unique(s.mu).size == 1 else ""


def _tau_n_blind(s: Sample) -> str:
    strata = s.design.strata
    return (
        "constant within every value of n" if strata is not None and _constant(s.mu, strata) else ""
    )


def _tau_n_strata(s: Sample) -> int:
    return 0 if s.design.strata is None else _enough(s.design.config, s.design.strata)


KENDALL_TAU = _joint_field("kendall_tau", blind=_tau_blind, doc="Kendall tau-b of (mu, g)")
PSI = _joint_field("psi", blind=_psi_blind(False), doc="granulated Kendall Psi (Jiang eq. 4)")


def _psi_axes(s: Sample) -> dict[str, Any]:
    j = s.joint()
    out: dict[str, Any] = {}
    for i, a in enumerate(s.axes):
        out[f"psi_{a}"] = float(j.psi_axes[i][0])
        out[f"psi_{a}_groups"] = int(j.psi_groups[i][0])
        out[f"psi_{a}_pairs"] = int(j.psi_pairs[i][0])
    return out


PSI_AXIS = Statistic(
    "psi_axis", _psi_axes, -1.0, 1.0, True,
    parts=(Part(""), Part("_groups", "int"), Part("_pairs", "int")), stem="psi_{axis}",
    doc="psi_i: mean of Jiang's tau over the groups sharing every axis value but i's",
)  # fmt: skip
TAU_FIXED_N = _joint_field(
    "tau_fixed_n", fixed_n=True, blind=_tau_n_blind, strata=_tau_n_strata,
    strata_words="strata of n",
    doc="mean over the values of n of tau-b within n (strata of >= 3 models)",
)  # fmt: skip
PSI_FIXED_N = _joint_field(
    "psi_fixed_n", fixed_n=True, blind=_psi_blind(True),
    doc="mean of psi_i over the axes other than the training-set size",
)  # fmt: skip


def _arch_point(s: Sample) -> dict[str, Any]:
    if s.cells is None or s.size == 0:
        return {"tau_arch": math.nan, "tau_arch_cells": 0, "tau_arch_ceiling": 0}
    pt = A.tau_arch(s.mu, s.g, s.cells, s.config, np.ones((1, s.size)))
    return {
        "tau_arch": float(pt.tau_arch[0]),
        "tau_arch_cells": pt.cells_used,
        "tau_arch_ceiling": pt.cells_at_ceiling,
    }


def _arch_draws(s: Sample, counts: np.ndarray) -> dict[str, np.ndarray]:
    if s.cells is None or s.size == 0:
        return {}
    return {"tau_arch": arch_draws(s, counts)}


def arch_draws(s: Sample, counts: np.ndarray) -> np.ndarray:
    """tau_arch on every resample of ``counts`` (configurations drawn within cells), in chunks."""
    assert s.cells is not None
    return np.concatenate(
        [
            A.tau_arch(s.mu, s.g, s.cells, s.config, s.weights(counts[c]), resample=True).tau_arch
            for c in S.draw_chunks(s.size, counts.shape[0])
        ]
    )


def _arch_blind(s: Sample) -> str:
    if s.cells is None or s.size == 0:
        return "without depth and width there are no cells of tau_arch"
    sized = [idx for idx in s.cells if idx.size >= 2]
    if sized and all(np.unique(s.mu[idx]).size == 1 for idx in sized):
        return "constant within every cell of depth x width x n (at the rank ceiling)"
    return ""


def _arch_cells_ok(s: Sample) -> int:
    return 0 if s.cells is None or s.size == 0 else _enough(s.config, s.cells)


def _some_cell(rows: list[dict[str, Any]]) -> bool:
    """tau_arch is compared only in a zoo where some measure has a cell of it."""
    vals = [r.get("tau_arch_cells") for r in rows]
    return any(isinstance(v, (int, float, np.number)) and v > 0 for v in vals)


TAU_ARCH = Statistic(
    "tau_arch", _arch_point, -1.0, 1.0, True, "cells", _arch_draws,
    (*INTERVAL, Part("_cells", "int"), Part("_ceiling", "int")),
    compared=True, compared_when=_some_cell, blind=_arch_blind, strata=_arch_cells_ok,
    strata_words="cells of depth x width x n",
    doc="mean over cells of equal depth, width and n of tau-b within the cell (protocol v4)",
)  # fmt: skip


def _cmi_point(s: Sample) -> dict[str, Any]:
    value, cs = cmi(s.mu, s.g, s.codes) if s.size > 0 else (math.nan, None)
    axes = None if cs is None else "+".join(s.axes[i] for i in cs) if cs else EMPTY_SET
    return {"cmi": value, "cmi_axes": axes}


def _cmi_draws(s: Sample, counts: np.ndarray) -> dict[str, np.ndarray]:
    return {"cmi": cmi_draws(s.mu, s.g, s.codes, s.weights(counts))}


CMI = Statistic(
    "cmi", _cmi_point, 0.0, None, True, "configurations", _cmi_draws,
    (*INTERVAL, Part("_axes", "text")),
    doc="min over sets S of <= 2 axes of Jiang's conditional mutual information, and its S",
)  # fmt: skip


def _sign_error(s: Sample) -> dict[str, Any]:
    return {"sign_error": float(s.joint().sign_error[0])}


SIGN_ERROR = Statistic(
    "sign_error", _sign_error, 0.0, 1.0, False,
    doc="mean of (1 - sign(dmu) sign(dg)) / 2 over pairs differing in one axis, dg != 0",
)  # fmt: skip


def _sign_axes(s: Sample) -> dict[str, Any]:
    j = s.joint()
    out: dict[str, Any] = {}
    for i, a in enumerate(s.axes):
        out[f"sign_error_{a}"] = float(j.sign_axes[i][0])
        out[f"sign_error_{a}_pairs"] = int(j.sign_pairs[i][0])
    return out


def _sign_axes_draws(s: Sample, counts: np.ndarray) -> dict[str, np.ndarray]:
    j = s.joint_draws(counts)
    return {f"sign_error_{a}": j.sign_axes[i] for i, a in enumerate(s.axes)}


SIGN_ERROR_AXIS = Statistic(
    "sign_error_axis", _sign_axes, 0.0, 1.0, False, "configurations", _sign_axes_draws,
    (*INTERVAL, Part("_pairs", "int")), stem="sign_error_{axis}",
    doc="the sign-error over the pairs differing in axis i only, and their count",
)  # fmt: skip


def _robust(s: Sample) -> dict[str, Any]:
    j = s.joint()
    robust, axis = S.robust_sign_error(
        [float(x[0]) for x in j.sign_axes], [float(x[0]) for x in j.sign_pairs]
    )
    return {
        "sign_error_robust": robust,
        "sign_error_robust_axis": S.TOO_FEW_PAIRS if axis is None else s.axes[axis],
    }


SIGN_ERROR_ROBUST = Statistic(
    "sign_error_robust", _robust, 0.0, 1.0, False, parts=(Part(""), Part("_axis", "text")),
    doc=f"max of the per-axis sign-errors over axes with >= {S.MIN_SIGN_PAIRS} pairs, that axis",
)  # fmt: skip

register(
    KENDALL_TAU,
    PSI,
    PSI_AXIS,
    TAU_FIXED_N,
    PSI_FIXED_N,
    TAU_ARCH,
    CMI,
    SIGN_ERROR,
    SIGN_ERROR_AXIS,
    SIGN_ERROR_ROBUST,
)
