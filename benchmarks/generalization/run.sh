#!/usr/bin/env bash
# The generalization study of README.md (second answer, protocol v2): three zoos, then SPEC 10
# correlations, then the tables. Resumable: re-running skips finished models.
set -euo pipefail
cd "$(dirname "$0")"
specbound zoo train digits --preset standard --out zoos/digits-v2 --ensemble auto
specbound zoo train digits --preset fixed-n --out zoos/digits-fixed-n --ensemble auto
specbound zoo train modular-addition --preset standard --out zoos/modular-addition-v2 --ensemble auto
for z in digits-v2 digits-fixed-n modular-addition-v2; do
  specbound correlate "zoos/$z" --out "results/$z" --bootstrap 1000 --seed 0
done
# SPEC 12's data measures next to the bounds (fixed-n digits; cached, so a re-run is quick)
specbound correlate zoos/digits-fixed-n --out results/digits-fixed-n-data --bootstrap 1000 --seed 0 --data-measures
python tables.py
