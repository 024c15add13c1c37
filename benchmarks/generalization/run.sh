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
python tables.py
