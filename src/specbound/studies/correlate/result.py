"""The result of a correlation study: ``Correlation``, its JSON and its output folder.

``Correlation.summary()`` is correlate.json; ``Correlation.cli_summary(out)`` is what
``specbound correlate --json`` prints; ``Correlation.to_dir(out, files)`` writes the tables and
correlate.json through ``io.output_dir`` (atomic, ownership-checked), and ``files`` (the report
page and its figures, rendered in memory) in the same write.

Output schema (protocol v3; what ``Correlation.to_dir`` writes and the report and terminal
render):

``models.csv``: one row per analyzed model, columns in order
    ``model``, the axes, the other manifest columns, ``gap``, ``converged``, the measures
    (SPEC 9 names in registry order, then ``<m>_per_sqrt_n`` for the bound-type measures and
    ``sample_size_only`` when ``train_size`` is known / varies), then
    with ``data_measures`` SPEC 12's data measures (registry order; ``correlate.data``), then
    ``spectrum_adaptive_share_p0``, ``spectrum_adaptive_ceiling_gap`` (the rank-ceiling
    diagnosis, SPEC 10) and ``adaptive_headroom_min`` (SPEC 4; each empty when the analysis
    does not provide it).
``correlation.csv``: one row per measure, the columns of the protocol registry
    (``protocol.tables.correlation_columns(axes)``): ``measure, n_models, n_configurations``, each
    statistic's columns in registry order (``protocol.statistics``: its value, its ``_low`` /
    ``_high`` interval when bootstrapped, its evidence; per axis for psi_<a> and sign_error_<a>;
    ``sign_error_robust`` is empty when no axis has >= 10 pairs and ``sign_error_robust_axis`` then
    says ``too few pairs``), then ``verdict`` (SPEC 10's words: "predicts the gap (...)", "ranks the
    gap the wrong way (...)", "fails on axis a (...)" joined by "; ", or "undetermined: ..." with
    the counts; "insufficient evidence: ..." with fewer than 8 configurations or 1000 draws; the
    grid's configurations without a usable model named after it). ``cmi_axes``: the S attaining the
    minimum, axes joined by "+", ``(none)`` for the empty set. Undefined numbers are empty cells.
``differences.csv``: ``measure, versus, statistic, delta, low, high, family, contrast, B, p,
    p_holm, q_bh, verdict, evidence, verdict_stable, p_seeds, low_seeds, high_seeds``
    (``protocol.tables.DIFFERENCE_COLUMNS``). First the primary rows (``family`` primary,
    ``contrast`` the id of a contrast of the zoo's family, ``protocol.families``: P1-P3 on
    tau_fixed_n or tau, or A1-A3 on tau_arch; max(bootstrap, 10000) draws from the same seed,
    under 5 seeds), then the exploratory ones: ``statistic`` each compared statistic of the
    registry;
    ``versus`` each of ``sample_size_only``, ``num_parameters``, ``num_parameters_per_sqrt_n``
    present and the best other measure by that statistic (once). delta = point(measure) -
    point(versus), [low, high] the paired bootstrap interval, ``B`` the draws where the
    difference is defined, ``p`` its bootstrap p-value, ``p_holm`` (primary rows: Holm over
    them) or ``q_bh`` (exploratory rows: Benjamini-Hochberg over them), ``verdict`` one of
    ``verdicts.VERDICTS`` and ``evidence`` the counts beside it (``table.with_verdicts``).
``skipped.csv``: ``model, reason``.
``pstar.csv`` (protocol v5, when per-matrix choices are known): ``model, cell, layer, head,
    matrix_type, p_star, p_modal`` (``modal.PSTAR_COLUMNS``); models.csv then also has
    ``spectrum_adaptive_fixed_p0.5``, ``_p1``, ``_p2`` and ``spectrum_adaptive_modal`` after the
    ceiling columns, and correlate.json ``p_switch_share`` (``modal.switch_shares``).
``correlate.json``: ``protocol`` (4), ``manifest, task, gap, axes, measures, n_listed,
    n_models, n_configurations, n_skipped, n_unconverged, include_unconverged, bootstrap,
    bootstrap_unit`` ("configuration"), ``seed, level, min_sign_pairs, baselines,
    interval_statistics``, ``rank_ceiling`` (object: ``threshold, n_models, n_at_ceiling,
    median_ceiling_gap, cells, n_cells, r2_spectrum_adaptive, r2_norm_based, statement``),
    ``primary_statistic, primary_bootstrap, primary_contrasts, alpha, min_configurations,
    min_bootstrap_verdict, missing`` (the number of the grid's configurations without a usable
    model: missing, skipped or unconverged; 0 without a zoo.json grid),
    ``missing_configurations`` (their names, ``axis=value`` joined by spaces) and
    ``notes`` (one line each: defaults taken, statistics left undefined and why).

Labels (axis names and values, measure names) are user text: draw them as plain text (no TeX)
and escape them in HTML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...io import output_dir
from ...io.files import dumps_json, write_csv, write_files
from ..protocol import verdicts as V
from ..protocol.families import primary_contrasts
from ..protocol.registry import PROTOCOL, REGISTRY
from ..protocol.statistics import KENDALL_TAU
from ..protocol.stats import MIN_SIGN_PAIRS
from ..protocol.tables import DIFFERENCE_COLUMNS
from .modal import PSTAR_CSV
from .rules import BASELINES, interval_statistics

if TYPE_CHECKING:
    import pandas as pd

SKIPPED_COLUMNS = ["model", "reason"]


@dataclass
class Correlation:
    """The result of ``correlate`` (or ``pool``): models.csv, correlation.csv, differences.csv,
    skipped.csv and correlate.json (module doc). specbound builds it by keyword; the first
    five fields stay positional for old callers."""

    models: pd.DataFrame
    correlation: pd.DataFrame
    skipped: pd.DataFrame
    axes: list[str]
    measures: list[str]
    gap: str = "accuracy"
    manifest: str = ""
    task: str | None = None
    n_listed: int = 0
    n_unconverged: int = 0
    include_unconverged: bool = False
    bootstrap: int = 1000
    seed: int = 0
    notes: list[str] = field(default_factory=list)
    differences: pd.DataFrame | None = None
    rank_ceiling: dict[str, Any] = field(default_factory=dict)
    n_configurations: int = 0
    level: float = 0.95
    #: The grid's configurations without a usable model (zoo.json's grid), named.
    missing: list[str] = field(default_factory=list)
    primary_statistic: str = KENDALL_TAU.name
    primary_bootstrap: int = 0
    #: The zoos whose models were pooled (``pool``), in order; [] for one zoo's own run.
    zoos: list[str] = field(default_factory=list)
    #: Models whose data measures failed (in ``skipped``; the CLI exits 1 when any did).
    data_failed: list[str] = field(default_factory=list)
    #: The zoos read (their folders, manifests, grids; ``io.outdir.local_inputs``): ``to_dir``
    #: never writes over, inside or around them. A correlate folder re-evaluated (``pool`` of
    #: ``read_part``) is read whole and is no input: ``to_dir`` may replace it in place.
    inputs: tuple[str, ...] = field(default=(), repr=False, compare=False)
    #: Protocol v5's switching shares (``modal.switch_shares``; correlate.json
    #: ``p_switch_share``), None when no per-matrix choice is known (the key is then absent).
    p_switch_share: dict[str, Any] | None = None
    #: SPEC 10 v5's design of the zoo (``adaptivity``), None for none (the key is then absent).
    design: str | None = None
    #: The primary family's name; correlate.json records it (``primary_family``) only for a
    #: family a zoo must declare (``Family.design``): the others follow from the statistic.
    primary_family: str | None = None
    #: The per-matrix table behind them (pstar.csv, ``modal.PSTAR_COLUMNS``); None: no file.
    pstar: pd.DataFrame | None = None

    @property
    def primary(self) -> pd.DataFrame | None:
        """The primary rows of ``differences`` (P1-P3), with p, p_holm and verdict."""
        d = self.differences
        return None if d is None else d[d["family"] == V.PRIMARY].reset_index(drop=True)

    @property
    def exploratory(self) -> pd.DataFrame | None:
        """The exploratory rows of ``differences``, with p, q_bh and verdict."""
        d = self.differences
        return None if d is None else d[d["family"] == V.EXPLORATORY].reset_index(drop=True)

    def _declared_family(self) -> str | None:
        """The primary family's name when it is one a zoo must declare, else None."""
        fam = REGISTRY.families.get(self.primary_family or "")
        return self.primary_family if fam is not None and fam.design is not None else None

    def summary(self) -> dict[str, Any]:
        """The content of correlate.json (module doc)."""
        out = {
            "protocol": PROTOCOL,
            "manifest": self.manifest,
            "task": self.task,
            "gap": self.gap,
            "axes": list(self.axes),
            "measures": list(self.measures),
            "n_listed": self.n_listed,
            "n_models": len(self.models),
            "n_configurations": self.n_configurations,
            "n_skipped": len(self.skipped),
            "n_unconverged": self.n_unconverged,
            "include_unconverged": self.include_unconverged,
            "bootstrap": self.bootstrap,
            "bootstrap_unit": "configuration",
            "seed": self.seed,
            "level": self.level,
            "min_sign_pairs": MIN_SIGN_PAIRS,
            "baselines": [b for b in BASELINES if b in self.measures],
            "interval_statistics": interval_statistics(),
            "rank_ceiling": dict(self.rank_ceiling),
            "primary_statistic": self.primary_statistic,
            "primary_bootstrap": self.primary_bootstrap,
            "primary_contrasts": {
                c: f"{a} - {b}"
                for c, a, b in primary_contrasts(self.primary_statistic, self._declared_family())
            },
            "alpha": V.ALPHA,
            "min_configurations": V.MIN_CONFIGURATIONS,
            "min_bootstrap_verdict": V.MIN_VERDICT_BOOTSTRAP,
            "missing": len(self.missing),
            "missing_configurations": list(self.missing),
            "zoos": list(self.zoos),
            "notes": list(self.notes),
        }
        if self.design is not None:
            out["design"] = self.design
        if self._declared_family() is not None:
            out["primary_family"] = self.primary_family
        if self.p_switch_share is not None:
            out["p_switch_share"] = dict(self.p_switch_share)
        return out

    def cli_summary(self, out: str | Path) -> dict[str, Any]:
        """What ``specbound correlate --json`` prints: the output folder ``out``, the counts and
        the tables (DataFrames; the CLI's strict-JSON printer turns them into records)."""
        return {
            "out": str(out),
            "n_models": len(self.models),
            "gap": self.gap,
            "axes": list(self.axes),
            "protocol": PROTOCOL,
            "bootstrap": self.bootstrap,
            "primary_bootstrap": self.primary_bootstrap,
            "primary_statistic": self.primary_statistic,
            "missing": len(self.missing),
            "missing_configurations": list(self.missing),
            "correlation": self.correlation,
            "primary": self.primary,
            "differences": self.differences,
            "skipped": self.skipped,
        }

    def to_dir(self, out: str | Path, files: Mapping[str, bytes | str] | None = None) -> Path:
        """Write models.csv, correlation.csv, differences.csv, skipped.csv and correlate.json
        into ``out`` through ``io.output_dir`` (atomic; refuses a directory specbound did not
        write, or one that is, lies inside or contains one of ``inputs``). ``files`` (relative
        path -> bytes or text: figures/, report.html) are written by ``io.files.write_files``
        in the same atomic write. Returns ``out`` as a Path."""
        with output_dir(out, inputs=self.inputs) as tmp:
            write_tables(self, tmp)
            if files:
                write_files(tmp, files)
        return Path(out)


def write_tables(result: Correlation, directory: str | Path) -> list[Path]:
    """Write models.csv, correlation.csv, differences.csv, skipped.csv and correlate.json into
    ``directory`` (an existing folder; not atomic: ``Correlation.to_dir`` is). Returns the
    paths."""
    d = Path(directory)
    out = []
    frames = {
        "models.csv": result.models,
        "correlation.csv": result.correlation,
        "differences.csv": (
            result.differences
            if result.differences is not None
            else _empty_frame(DIFFERENCE_COLUMNS)
        ),
        "skipped.csv": result.skipped,
    }
    if result.pstar is not None:
        frames[PSTAR_CSV] = result.pstar
    for name, frame in frames.items():
        write_csv(frame, d / name)
        out.append(d / name)
    (d / "correlate.json").write_text(dumps_json(result.summary(), indent=2) + "\n")
    out.append(d / "correlate.json")
    return out


def _empty_frame(columns: Sequence[str]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(columns=list(columns))
