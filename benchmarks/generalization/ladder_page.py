"""Re-render the ladder's folder (results/digits-ladder) from its own models.csv and growth.csv,
with the zoo's training columns (train_acc, test_acc, steps from zoos/digits-ladder/zoo.csv)
added to models.csv, so the page shows what each model reached and how long it trained.

Nothing is analyzed again (the ladder's model folders are not committed); the folder is written
through specbound's own writer (``Study.to_dir``) with the current report code.

Usage: python benchmarks/generalization/ladder_page.py
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from specbound.io.siblings import sibling_pages
from specbound.report.pages.scale import write_study
from specbound.studies.scale.run import Study

HERE = Path(__file__).resolve().parent
FOLDER = HERE / "results" / "digits-ladder"
ZOO = HERE / "zoos" / "digits-ladder" / "zoo.csv"
TRAINING = ("train_acc", "test_acc", "steps")
TITLE = "Size ladder: digits, depth x width at n = 200 (benchmarks/generalization)"


def main() -> None:
    models = pd.read_csv(FOLDER / "models.csv")
    growth = pd.read_csv(FOLDER / "growth.csv")
    zoo = pd.read_csv(ZOO)[["model", *TRAINING]]
    key = models["model"].str.split("zoos/digits-ladder/", n=1).str[-1]
    models = models.drop(columns=[c for c in TRAINING if c in models.columns])
    models = models.assign(_key=key).merge(
        zoo.rename(columns={"model": "_key"}), on="_key", how="left", validate="one_to_one"
    )
    models = models.drop(columns="_key")
    if models[list(TRAINING)].isna().any().any():
        raise SystemExit("ladder_page.py: a ladder model has no row in zoos/digits-ladder/zoo.csv")
    study = Study(models, growth, title=TITLE)
    pages = sibling_pages(FOLDER)  # the study's page and every correlate folder's, both ways
    study.to_dir(
        FOLDER, extra=lambda tmp: write_study(study, tmp, figure_formats="svg", siblings=pages)
    )
    print(f"wrote {FOLDER}/report.html")


if __name__ == "__main__":
    main()
