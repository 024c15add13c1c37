"""The primary contrasts of the correlation protocol (SPEC 10) and the families that hold them,
as :class:`~.registry.Contrast` and :class:`~.registry.Family` entries.

- ``standard`` (protocol v3): P1 spectrum_adaptive - norm_based, P2 spectrum_adaptive -
  num_parameters, P3 norm_based - num_parameters, on tau_fixed_n when the training-set size n
  takes >= 2 values, else on kendall_tau; every zoo can have it (the last one ``primary`` auto
  tries).
- ``arch`` (protocol v4): A1 spectrum_adaptive - norm_based, A2 spectrum_adaptive -
  log_spectral_product, A3 spectrum_adaptive - distance_from_init, on tau_arch; ``primary``
  auto takes it for a zoo designed for it (:func:`designed_for_arch`), and it needs depth and
  width columns.

:func:`choose_family` applies ``primary`` (auto, or a family's name) to a zoo's
:class:`~.registry.ZooFacts`; :func:`primary_contrasts` is the ``(id, measure, versus)`` of a
family.
"""

from __future__ import annotations

from ...errors import SpecboundError
from .arch import CELL_AXES
from .registry import REGISTRY, Contrast, Family, ZooFacts, register
from .verdicts import MIN_STRATA

TAU_ARCH = "tau_arch"


def primary_statistic(n_sizes: int) -> str:
    """The statistic of the standard family: ``tau_fixed_n`` when the training-set size
    takes >= 2 values, else ``kendall_tau``."""
    return "tau_fixed_n" if n_sizes >= 2 else "kendall_tau"


def designed_for_arch(n_sizes: int, cells_ok: int) -> bool:
    """A zoo is designed for tau_arch (protocol v4) when its training-set size is fixed
    (``n_sizes`` <= 1 distinct values) and at least :data:`~.verdicts.MIN_STRATA` cells of equal
    depth and width hold >= ``MIN_STRATUM_CONFIGURATIONS`` configurations each (several learning
    rates, weight decays, ...: ``cells_ok``), the evidence tau_arch verdicts need."""
    return n_sizes <= 1 and cells_ok >= MIN_STRATA


def _arch_refused(facts: ZooFacts) -> str:
    if facts.has_cells:
        return ""
    return (
        f"primary arch needs {' and '.join(CELL_AXES)} columns in the models table "
        "(the cells of tau_arch); use primary standard"
    )


register(
    Contrast("P1", "spectrum_adaptive", "norm_based"),
    Contrast("P2", "spectrum_adaptive", "num_parameters"),
    Contrast("P3", "norm_based", "num_parameters"),
    Contrast("A1", "spectrum_adaptive", "norm_based"),
    Contrast("A2", "spectrum_adaptive", "log_spectral_product"),
    Contrast("A3", "spectrum_adaptive", "distance_from_init"),
    Family(
        "arch", ("A1", "A2", "A3"), lambda facts: TAU_ARCH, (TAU_ARCH,),
        lambda facts: facts.has_cells and designed_for_arch(facts.n_sizes, facts.cells_ok),
        _arch_refused, rank=10, doc="protocol v4: within architecture, on tau_arch",
    ),
    Family(
        "standard", ("P1", "P2", "P3"), lambda facts: primary_statistic(facts.n_sizes),
        ("tau_fixed_n", "kendall_tau"), lambda facts: True, rank=1000,
        doc="protocol v3: on tau_fixed_n when n takes >= 2 values, else kendall_tau",
    ),
)  # fmt: skip


def choose_family(primary: str, facts: ZooFacts) -> Family:
    """The primary family of a zoo: with ``primary`` auto the first family by rank that
    applies to ``facts``, else the family named ``primary`` (SpecboundError when it refuses the
    zoo, e.g. arch without depth and width)."""
    if primary == "auto":
        return next(f for f in REGISTRY.ranked_families() if f.applies(facts))
    family = REGISTRY.families[primary]
    why = family.refuse(facts)
    if why:
        raise SpecboundError(why)
    return family


def primary_contrasts(
    statistic: str, family: str | None = None
) -> tuple[tuple[str, str, str], ...]:
    """``(id, measure, versus)`` of the contrasts of ``family`` (by name), or of the first family
    by rank that can be on ``statistic`` (the standard family when none can)."""
    fam = REGISTRY.family_of(statistic, family) or REGISTRY.families["standard"]
    return REGISTRY.contrasts_of(fam)
