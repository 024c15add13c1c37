"""The scaling study (SPEC.md section 7): many models -> one table, growth fits (``fit``).

``scale(models)`` analyzes every model on an engine (``engines.get_engine``; the spectra cache
is reused) and returns a ``Study``:

- ``models``: one row per model (sizes, every measure, the rank-ceiling diagnosis of SPEC 10,
  share of matrices at p = 0 / 2);
- ``growth``: fitted growth of each measure and of the rank ceiling along each axis
  (``hidden_size``, ``num_layers``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...analysis.sweep import analyze_models
from ...engines import resolve
from ...errors import SpecboundError
from ...io import output_dir
from ...io.files import json_safe, write_csv
from ...io.outdir import local_inputs
from ...io.records import RecordStore
from ...linalg.model import DEVICE
from ...measures.bounds import GRID_M, L_PHI
from ...measures.spectrum_adaptive import FIXED_FORMS
from ...validation import Boolean, PathLike, Text, validate_params
from .fit import CEILING_COLUMN, growth_table, measure_columns
from .verdict import growth_verdict, study_verdict

if TYPE_CHECKING:
    import pandas as pd

    from ...analysis import Analysis
    from ...engines.base import Engine

PROXIES = ("spectrum_adaptive", "norm_based")
#: models.csv: sizes, then one column per registered measure (``measure_columns()``), then the
#: rank-ceiling diagnosis (SPEC 10), then the shares of matrices at p = 0 and p = 2.
SIZE_COLUMNS = ["model", "num_layers", "hidden_size", "num_heads", "intermediate_size"]
CEILING_COLUMNS = [
    "spectrum_adaptive_share_p0",
    "spectrum_adaptive_ceiling_gap",
    CEILING_COLUMN,
    "adaptive_headroom_min",
]
#: The fixed-index forms of SPEC 10 v5 (``Analysis.fixed_index_forms``): log10 of the proxy with
#: every matrix held at q = 1/2, 1, 2.
FORM_COLUMNS = list(FIXED_FORMS)
P_COLUMNS = ["share_p0", "share_p2"]
#: The HTSR means over ok fits only, with the number of fits each used and the fits made
#: (``Analysis.htsr_fit_summary``); empty when the raw-weight spectra were not computed.
HTSR_FIT_COLUMNS = [
    "htsr_fits",
    "htsr_alpha_ok",
    "htsr_alpha_fits_used",
    "htsr_alpha_weighted_ok",
    "htsr_alpha_weighted_fits_used",
]


def model_columns() -> list[str]:
    """The columns of models.csv, in order."""
    return (
        SIZE_COLUMNS
        + measure_columns()
        + CEILING_COLUMNS
        + FORM_COLUMNS
        + P_COLUMNS
        + HTSR_FIT_COLUMNS
    )


def model_row(a: Analysis) -> dict[str, Any]:
    """One row of ``models.csv`` from an Analysis."""
    s = a.spec
    p = a.details.p_star
    return {
        "model": a.model,
        "num_layers": s.num_layers,
        "hidden_size": s.hidden_size,
        "num_heads": s.num_heads,
        "intermediate_size": s.intermediate_size,
        **{n: a.measures.get(n) for n in measure_columns()},
        "spectrum_adaptive_share_p0": a.spectrum_adaptive_share_p0,
        "spectrum_adaptive_ceiling_gap": a.spectrum_adaptive_ceiling_gap,
        CEILING_COLUMN: a.log10_spectrum_adaptive_ceiling,
        "adaptive_headroom_min": a.adaptive_headroom_min,
        **a.fixed_index_forms(),
        "share_p0": float(np.mean(p == 0)) if p.size else 0.0,
        "share_p2": float(np.mean(p == 2)) if p.size else 0.0,
        **_htsr_fit_columns(a),
    }


def _htsr_fit_columns(a: Analysis) -> dict[str, Any]:
    if getattr(a, "weight_spectra", None) is None:
        return dict.fromkeys(HTSR_FIT_COLUMNS)
    h = a.htsr_fit_summary()
    return {c: h[c] for c in HTSR_FIT_COLUMNS}


@dataclass
class Study:
    """A multi-model scaling study: ``models`` and ``growth`` DataFrames plus the analyses."""

    models: pd.DataFrame
    growth: pd.DataFrame
    analyses: list[Analysis] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    title: str = "Scaling study"
    #: (model, reason) for each model that could not be analyzed (bad input) and was left out.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: The local model paths given (``io.outdir.local_inputs``): ``to_dir`` never writes over,
    #: inside or around them.
    inputs: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def verdict(self) -> list[str]:
        """The study's answer in plain sentences, caveats included (``verdict.study_verdict``):
        which proxy grows faster, whether the spectrum-adaptive growth is its rank ceiling's,
        models at the ceiling, dominance, measures without a fit or an exponent."""
        return study_verdict(self)

    def summary(self) -> dict[str, Any]:
        """What ``specbound scale --json`` prints, less the output folder the CLI adds: a
        JSON-ready dict (``json.dumps(..., allow_nan=False)`` holds). Keys, in order: ``title``;
        ``models`` and ``growth`` (the tables as records, a missing cell None); ``verdict`` (per
        axis with a pooled fit of both proxies, ``verdict.growth_verdict``'s ``sentence`` and
        ``interaction`` notes); ``skipped`` (``{"model", "reason"}`` each); ``missing``."""
        g = self.growth
        verdicts = {}
        for axis in ("hidden_size", "num_layers"):
            v = growth_verdict(g, axis) if len(g) else None
            if v is not None:
                verdicts[axis] = {"sentence": v.sentence, "interaction": list(v.interaction)}
        return json_safe(
            {
                "title": self.title,
                "models": json_safe(self.models),
                "growth": json_safe(g),
                "verdict": verdicts,
                "skipped": [{"model": m, "reason": r} for m, r in self.skipped],
                "missing": list(self.missing),
            }
        )

    def to_dir(self, path: Any, extra: Callable[[Any], object] | None = None) -> Any:
        """Write models.csv, growth.csv and skipped.csv (when models were skipped) into ``path``
        through ``io.output_dir`` (one atomic write; refuses a folder specbound did not write).
        No figures: ``extra(tmp)`` may add files to the same write, e.g.
        ``lambda tmp: report.write_study(study, tmp)`` for figures/ and report.html (the CLI
        does this); CSVs alone need no matplotlib."""
        from pathlib import Path

        import pandas as pd

        with output_dir(path, inputs=self.inputs) as tmp:
            write_csv(self.models, tmp / "models.csv")
            write_csv(self.growth, tmp / "growth.csv")
            if self.skipped:
                write_csv(
                    pd.DataFrame(self.skipped, columns=["model", "reason"]), tmp / "skipped.csv"
                )
            if extra is not None:
                extra(tmp)
        return Path(path)


def _check_unique(models: Sequence[Any], names: Sequence[str] | None) -> None:
    """A model listed twice would weigh twice in the growth fits: refuse it."""
    seen: dict[str, str] = {}
    for i, m in enumerate(models):
        if not isinstance(m, (str, os.PathLike)):
            continue
        label = str(names[i] if names is not None else os.fspath(m))
        key = os.path.realpath(m) if os.path.exists(m) else os.fspath(m)  # ./a and a alike
        if key in seen:
            same = "" if seen[key] == label else f" (as '{seen[key]}' and '{label}')"
            raise SpecboundError(f"model '{label}' is listed twice{same}; list each model once")
        seen[key] = label


@validate_params(
    {
        "l_phi": (None, *L_PHI),
        "grid_m": GRID_M,
        "device": DEVICE,
        "cache": (Boolean(),),
        "prefix": (None, Text(empty=True)),
        "state_dir": (None, PathLike()),
        "title": (Text(empty=True),),
    }
)
def scale(
    models: Sequence[Any],
    *,
    l_phi: float | None = None,
    grid_m: int | None = None,
    device: str | None = None,
    cache: bool = True,
    names: Sequence[str] | None = None,
    on_model: Callable[[int, int, str], None] | None = None,
    on_skip: Callable[[str, str], None] | None = None,
    engine: str | Engine = "local",
    engine_options: Any = None,
    prefix: str | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    on_resume: Callable[[str], None] | None = None,
    title: str = "Scaling study",
    missing: Sequence[str] = (),
) -> Study:
    """Analyze every model (cache reused) and fit the growth of every measure.

    ``engine``: an engine name (``"local"``: this process; ``"ray"``: one Ray task per model)
    with ``engine_options`` (its options dataclass, e.g. ``RayOptions(address=...)``), or an
    ``Engine`` object. ``state_dir``: keep one resume record per finished model there
    (``io.records``), so a re-run analyzes only the rest (``on_resume(name)`` for each
    model found there).

    A model that cannot be analyzed (a ``SpecboundError``: bad checkpoint, config, ...) is
    skipped: ``on_skip(name, reason)`` is called and it is listed in ``Study.skipped``.
    ``on_model(done, n, name)`` as each model finishes. Raises SpecboundError only when no
    model could be analyzed. ``title`` (the report's heading) and ``missing`` (models the
    study meant to have but could not find, e.g. absent checkpoints) are kept on the Study.
    """
    import pandas as pd

    if len(models) == 0:
        raise SpecboundError("scale needs at least one model")
    _check_unique(models, names)
    # options are checked once, up front (@validate_params): a bad option is not a broken model
    eng = resolve(engine, engine_options, default=None)
    result = analyze_models(
        eng,
        models,
        names=names,
        on_model=on_model,
        on_skip=on_skip,
        analyze_kwargs={
            "l_phi": l_phi,
            "grid_m": grid_m,
            "device": device,
            "cache": cache,
            **({"prefix": prefix} if prefix is not None else {}),
        },
        records=None if state_dir is None else RecordStore(state_dir),
        on_resume=on_resume,
    )
    analyses, skipped = result.analyses, result.skipped
    if not analyses:
        raise SpecboundError(
            f"none of the {len(models)} models could be analyzed (first: "
            f"{skipped[0][0]}: {skipped[0][1]})"
        )
    table = pd.DataFrame([model_row(a) for a in analyses], columns=model_columns())
    table = table.sort_values(["num_layers", "hidden_size", "model"], kind="stable")
    order = list(table.index)
    table = table.reset_index(drop=True)
    return Study(
        table,
        growth_table(table),
        [analyses[i] for i in order],
        missing=list(missing),
        title=title,
        skipped=skipped,
        inputs=local_inputs(*models),
    )
