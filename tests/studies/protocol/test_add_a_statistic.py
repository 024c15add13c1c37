"""docs/guide/add-a-statistic.md, run: its code block registers Spearman's rho in one place, and
the statistic reaches correlation.csv, correlate.json and differences.csv, the checked readers
accept the files back (and refuse a value out of its range), and every value is
scipy.stats.spearmanr's, computed independently."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from specbound.io.readback import ReadbackError
from specbound.studies import readback as R
from specbound.studies.correlate.result import Correlation, write_tables
from specbound.studies.correlate.table import correlation_study
from specbound.studies.protocol import REGISTRY, tables

PAGE = Path(__file__).resolve().parents[3] / "docs" / "guide" / "add-a-statistic.md"
AXES = ["lr", "weight_decay"]
MEASURES = ["good", "noisy", "num_parameters"]


def page_code() -> str:
    """The page's first python code block (the example)."""
    found = re.search(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert found is not None, f"{PAGE} has no python code block"
    return found.group(1)


@pytest.fixture
def restored() -> Iterator[None]:
    """The registry as it was, whatever the test registers."""
    saved = (dict(REGISTRY.statistics), dict(REGISTRY.contrasts), dict(REGISTRY.families))
    try:
        yield
    finally:
        REGISTRY.statistics, REGISTRY.contrasts, REGISTRY.families = saved


def _models() -> pd.DataFrame:
    """4 learning rates x 3 weight decays x 2 seeds; a measure that follows the gap with noise,
    one that is noise, and a parameter count with ties."""
    rng = np.random.default_rng(7)
    rows = []
    for i, lr in enumerate([1e-3, 2e-3, 4e-3, 8e-3]):
        for j, wd in enumerate([0.0, 0.01, 0.1]):
            for seed in range(2):
                gap = 0.05 * i - 0.03 * j + rng.normal(0, 0.02)
                rows.append(
                    {"model": f"m{i}{j}{seed}", "lr": lr, "weight_decay": wd, "gap": gap,
                     "good": gap + rng.normal(0, 0.03), "noisy": rng.normal(),
                     "num_parameters": float(1000 + 100 * (i // 2))}
                )  # fmt: skip
    return pd.DataFrame(rows)


def test_the_page_example_adds_spearman_rho_in_one_place(tmp_path: Path, restored: None) -> None:
    before = tables.correlation_columns(AXES)
    namespace: dict[str, object] = {}
    exec(compile(page_code(), str(PAGE), "exec"), namespace)  # the page's one registration
    entry = REGISTRY.statistics["spearman_rho"]
    assert tables.correlation_columns(AXES) == [
        *before[:-1], "spearman_rho", "spearman_rho_low", "spearman_rho_high", "verdict"
    ]  # fmt: skip
    assert set(tables.carriers(entry)) == {
        "correlation.csv", "differences.csv", "primary.csv", "exploratory.csv"
    }  # fmt: skip

    models = _models()
    t = correlation_study(models, MEASURES, AXES, bootstrap=200, seed=0)
    result = Correlation(
        models=models, correlation=t.correlation, skipped=pd.DataFrame(columns=["model", "reason"]),
        axes=AXES, measures=MEASURES, gap="accuracy", n_listed=len(models), bootstrap=200,
        differences=t.differences,
        n_configurations=t.n_configurations, primary_statistic=t.primary_statistic,
        primary_bootstrap=t.primary_bootstrap,
    )  # fmt: skip
    write_tables(result, tmp_path)

    meta = R.read_correlate_json(tmp_path)
    assert "spearman_rho" in meta["interval_statistics"]
    back = R.read_correlation_csv(tmp_path, meta)
    assert list(back.columns) == tables.correlation_columns(AXES)
    for name in MEASURES:
        row = back[back["measure"] == name].iloc[0]
        want = spearmanr(models[name], models["gap"]).statistic  # independent of the entry
        assert row["spearman_rho"] == pytest.approx(want, abs=1e-12)
        assert row["spearman_rho_low"] <= row["spearman_rho"] <= row["spearman_rho_high"]
    diffs = R.read_differences_csv(tmp_path, meta)
    mine = diffs[diffs["statistic"] == "spearman_rho"]
    assert set(mine["measure"]) == set(MEASURES) and (mine["family"] == "exploratory").all()
    good = mine[(mine["measure"] == "good") & (mine["versus"] == "num_parameters")].iloc[0]
    rho = back.set_index("measure")["spearman_rho"]
    assert good["delta"] == pytest.approx(rho["good"] - rho["num_parameters"], abs=1e-12)

    # the reader takes the range from the entry: rho 1.5 is refused, naming the cell
    bad = pd.read_csv(tmp_path / "correlation.csv")
    bad.loc[0, "spearman_rho"] = 1.5
    bad.to_csv(tmp_path / "correlation.csv", index=False)
    with pytest.raises(ReadbackError, match="spearman_rho"):
        R.read_correlation_csv(tmp_path, meta)


def test_the_registry_is_back_without_the_example() -> None:
    assert "spearman_rho" not in REGISTRY.statistics
