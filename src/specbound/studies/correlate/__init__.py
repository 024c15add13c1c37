"""Does a measure predict generalization? The driver of SPEC 10's correlation protocol: the
protocol itself (its statistics, contrasts, tables' columns, verdict rules) is
``studies.protocol``'s registry and math.

- :mod:`.rows`: one measure's row of correlation.csv, every statistic of the registry;
- :mod:`.table`: correlation.csv and differences.csv from a models table;
- :mod:`.rules`: the baselines, the bootstrap settings' checks, a row's verdict words;
- :mod:`.manifest`: reading and validating a manifest or zoo directory;
- :mod:`.ceiling`: the rank-ceiling diagnosis of the spectrum-adaptive proxy;
- :mod:`.columns`: models.csv's measure columns (registry order, bound forms);
- :mod:`.run`: one zoo's study (manifest -> plan -> ``engine.map`` -> tables);
- :mod:`.driver`: one study into one folder, what ``specbound correlate`` runs (pooling, resume,
  the data workers' default);
- :mod:`.result`: ``Correlation``, its JSON and its output folder, the output schema;
- :mod:`.multizoo`: several zoos as one: pooled (``pool``) or side by side in a study
  (``study``: Holm over the independent folders).
"""

from ..gap import GAP_KINDS, gap_values
from ..protocol import verdicts
from ..protocol.mutual_info import axis_subsets, cmi, cmi_draws, cmi_values
from ..protocol.statistics import EMPTY_SET
from ..protocol.stats import (
    MIN_SIGN_PAIRS,
    TOO_FEW_PAIRS,
    axis_groups,
    bootstrap_config_counts,
    bootstrap_weights,
    granulated_psi,
    jiang_tau,
    kendall_tau,
    percentile_interval,
    sign_error,
)
from ..protocol.tables import DIFFERENCE_COLUMNS, correlation_columns
from .ceiling import CEILING_COLUMNS, CEILING_THRESHOLD, rank_ceiling
from .columns import add_bound_forms, measure_registry, output_columns
from .jobs import Analyzer, missing_configurations, model_worker
from .manifest import (
    METRIC_COLUMNS,
    NOT_DEFAULT_AXES,
    RESERVED_COLUMNS,
    ManifestError,
    Zoo,
    parse_axes,
    parse_converged,
    read_zoo,
    resolve_entry,
    validate_manifest,
)
from .result import SKIPPED_COLUMNS, Correlation, write_tables
from .rules import (
    BASELINES,
    MAX_BOOTSTRAP,
    axis_codes,
    better_word,
    interval_statistics,
    verdict,
)
from .run import correlate
from .table import correlation_study, correlation_table, differences

__all__ = [
    "BASELINES",
    "CEILING_COLUMNS",
    "CEILING_THRESHOLD",
    "DIFFERENCE_COLUMNS",
    "EMPTY_SET",
    "GAP_KINDS",
    "MAX_BOOTSTRAP",
    "METRIC_COLUMNS",
    "MIN_SIGN_PAIRS",
    "NOT_DEFAULT_AXES",
    "RESERVED_COLUMNS",
    "SKIPPED_COLUMNS",
    "TOO_FEW_PAIRS",
    "Analyzer",
    "Correlation",
    "ManifestError",
    "Zoo",
    "add_bound_forms",
    "axis_codes",
    "axis_groups",
    "axis_subsets",
    "better_word",
    "bootstrap_config_counts",
    "bootstrap_weights",
    "cmi",
    "cmi_draws",
    "cmi_values",
    "correlate",
    "correlation_columns",
    "correlation_study",
    "correlation_table",
    "differences",
    "gap_values",
    "granulated_psi",
    "interval_statistics",
    "jiang_tau",
    "kendall_tau",
    "measure_registry",
    "missing_configurations",
    "model_worker",
    "output_columns",
    "parse_axes",
    "parse_converged",
    "percentile_interval",
    "rank_ceiling",
    "read_zoo",
    "resolve_entry",
    "sign_error",
    "validate_manifest",
    "verdict",
    "verdicts",
    "write_tables",
]
