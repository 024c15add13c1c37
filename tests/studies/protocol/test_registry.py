"""The protocol registry (studies.protocol): the tables' columns derived from it are those the
protocol wrote before it existed (by hand below), entries are refused when they clash, a
``with registered(...)`` block leaves nothing behind, and the primary family follows SPEC 10's
rules."""

from __future__ import annotations

import math

import pytest

from specbound.errors import SpecboundError
from specbound.studies.protocol import (
    PRIMARY_CHOICES,
    REGISTRY,
    VALUE,
    Contrast,
    Family,
    Statistic,
    ZooFacts,
    choose_family,
    primary_contrasts,
    registered,
    tables,
)
from specbound.studies.protocol import verdicts as V


def _by_hand(axes: list[str]) -> list[str]:
    """correlation.csv's columns as protocol v4 lists them (result.py's output schema)."""
    cols = ["measure", "n_models", "n_configurations"]
    for st in ("kendall_tau", "psi"):
        cols += [st, f"{st}_low", f"{st}_high"]
    for a in axes:
        cols += [f"psi_{a}", f"psi_{a}_groups", f"psi_{a}_pairs"]
    for st in ("tau_fixed_n", "psi_fixed_n"):
        cols += [st, f"{st}_low", f"{st}_high"]
    cols += ["tau_arch", "tau_arch_low", "tau_arch_high", "tau_arch_cells", "tau_arch_ceiling"]
    cols += ["cmi", "cmi_low", "cmi_high", "cmi_axes", "sign_error"]
    for a in axes:
        cols += [f"sign_error_{a}", f"sign_error_{a}_low", f"sign_error_{a}_high"]
        cols += [f"sign_error_{a}_pairs"]
    return [*cols, "sign_error_robust", "sign_error_robust_axis", "verdict"]


@pytest.mark.parametrize("axes", [[], ["depth"], ["depth", "width", "lr", "train_size"]])
def test_correlation_columns_are_protocol_v4s(axes: list[str]) -> None:
    assert tables.correlation_columns(axes) == _by_hand(axes)
    assert tables.header_axes(_by_hand(axes)) == axes


def test_the_other_tables() -> None:
    assert tables.DIFFERENCE_COLUMNS == [
        "measure", "versus", "statistic", "delta", "low", "high", "family", "contrast", "B",
        "p", "p_holm", "q_bh", "verdict", "evidence", "verdict_stable", "p_seeds", "low_seeds",
        "high_seeds",
    ]  # fmt: skip
    assert tables.EXPLORATORY_COLUMNS[:2] == ("folder", "task")
    assert [s.name for s in REGISTRY.compared()] == [
        "kendall_tau", "psi", "tau_fixed_n", "psi_fixed_n", "tau_arch"
    ]  # fmt: skip


def test_typed_cells_take_range_and_kind_from_the_entries() -> None:
    cells = {c.name: c for c in tables.correlation_cells(["depth"])}
    assert (cells["kendall_tau_low"].low, cells["kendall_tau_low"].high) == (-1.0, 1.0)
    assert (cells["sign_error_depth"].low, cells["sign_error_depth"].high) == (0.0, 1.0)
    assert (cells["cmi"].low, cells["cmi"].high) == (0.0, None)
    assert cells["psi_depth_pairs"].kind == cells["tau_arch_cells"].kind == "int"
    assert cells["cmi_axes"].kind == cells["sign_error_robust_axis"].kind == "text"
    assert cells["verdict"].kind == "any"
    # a column the registry does not know is left out of the schema (kept as read)
    schema = tables.correlation_schema(["measure", "kendall_tau", "from_a_later_version"])
    assert [c.name for c in schema] == ["measure", "kendall_tau"]


def test_directions_and_evidence_words_come_from_the_entries() -> None:
    assert not V.larger_is_better("sign_error") and V.larger_is_better("kendall_tau")
    assert V.evidence(B=1000, n_configurations=9, statistic="tau_arch", n_strata_ok=2) == (
        "B = 1000; 9 configurations; 2 cells of depth x width x n with >= 3 configurations"
    )
    assert V.insufficient(bootstrap=1000, n_configurations=9, statistic="tau_fixed_n") == [
        "0 < 2 strata of n with >= 3 configurations"
    ]
    assert V.insufficient(bootstrap=1000, n_configurations=9, statistic="psi") == []


def _const(name: str) -> Statistic:
    return Statistic(name, lambda s: {name: math.nan}, 0.0, 1.0, True, parts=VALUE)


def test_registered_adds_for_a_block_and_clashes_are_refused() -> None:
    n = len(REGISTRY.statistics)
    with registered(_const("extra")):
        assert tables.correlation_columns([])[-2] == "extra"
    assert len(REGISTRY.statistics) == n and "extra" not in tables.correlation_columns([])
    with pytest.raises(ValueError, match="registered already"):
        REGISTRY.add(_const("psi"))
    with pytest.raises(ValueError, match="no contrast"):
        REGISTRY.add(Family("f", ("Z9",), lambda f: "psi", ("psi",), lambda f: True))
    with pytest.raises(ValueError, match="draws go with a bootstrap"):
        Statistic("x", lambda s: {}, 0.0, 1.0, True, bootstrap="configurations")
    # a failing registration leaves the registry as it was
    with pytest.raises(ValueError, match="psi"), registered(_const("fine"), _const("psi")):
        pass
    assert "fine" not in REGISTRY.statistics


def test_primary_families_follow_spec_10() -> None:
    assert PRIMARY_CHOICES == ("auto", "arch", "standard", "adaptivity")
    arch = ZooFacts(n_sizes=1, cells_ok=2, has_cells=True)
    assert choose_family("auto", arch).name == "arch"
    assert choose_family("auto", arch).statistic(arch) == "tau_arch"
    varied = ZooFacts(n_sizes=3, cells_ok=5, has_cells=True)
    assert choose_family("auto", varied).statistic(varied) == "tau_fixed_n"
    flat = ZooFacts(n_sizes=1, cells_ok=0, has_cells=False)
    assert choose_family("standard", flat).statistic(flat) == "kendall_tau"
    with pytest.raises(SpecboundError, match="primary arch needs depth and width"):
        choose_family("arch", flat)
    assert [c[0] for c in primary_contrasts("tau_arch")] == ["A1", "A2", "A3"]
    # protocol v5: a zoo declaring design adaptivity gets D0, A1, A3 on tau_arch; the family is
    # never implied by tau_arch alone (a folder records it)
    adaptive = ZooFacts(n_sizes=1, cells_ok=2, has_cells=True, declared="adaptivity")
    assert choose_family("auto", adaptive).name == "adaptivity"
    assert choose_family("auto", adaptive).statistic(adaptive) == "tau_arch"
    assert [c[0] for c in primary_contrasts("tau_arch", family="adaptivity")] == ["D0", "A1", "A3"]
    assert primary_contrasts("tau_arch", family="adaptivity")[0] == (
        "D0", "spectrum_adaptive", "spectrum_adaptive_modal"
    )  # fmt: skip
    with pytest.raises(SpecboundError, match="declares design: adaptivity"):
        choose_family("adaptivity", arch)
    assert primary_contrasts("kendall_tau")[0] == ("P1", "spectrum_adaptive", "norm_based")
    assert primary_contrasts("", family="arch")[2] == (
        "A3", "spectrum_adaptive", "distance_from_init"
    )  # fmt: skip


def test_a_new_family_is_one_entry() -> None:
    d0 = Contrast("Z0", "spectrum_adaptive", "norm_based")
    fam = Family(
        "declared", ("Z0",), lambda f: "tau_arch", ("tau_arch",),
        lambda f: f.declared == "declared", rank=1,
    )  # fmt: skip
    with registered(d0, fam):
        facts = ZooFacts(n_sizes=1, cells_ok=2, has_cells=True, declared="declared")
        assert choose_family("auto", facts).name == "declared"
        assert REGISTRY.primary_choices() == ("auto", "arch", "standard", "adaptivity", "declared")
        assert primary_contrasts("tau_arch", family="declared") == (
            ("Z0", "spectrum_adaptive", "norm_based"),
        )
    assert "declared" not in REGISTRY.families
