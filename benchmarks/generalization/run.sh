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
# the fixed-n zoos of the other two tasks
specbound zoo train modular-addition --preset fixed-n --out zoos/modular-addition-fixed-n --ensemble auto
# sparse parity: one model at a time on a local Ray runtime (2 workers on 2 cores); with
# --ensemble 1 the fixed-n zoo is the standard zoo's n = 384 stratum, model for model
specbound zoo train sparse-parity --preset standard --out zoos/sparse-parity-v2 --ensemble 1 --engine ray
specbound zoo train sparse-parity --preset fixed-n --out zoos/sparse-parity-fixed-n --ensemble 1 --engine ray
# SPEC 12's data measures next to the bounds (cached, so a re-run is quick)
specbound correlate zoos/digits-v2 --out results/digits-v2-data --bootstrap 1000 --seed 0 --data-measures --data-workers 2
specbound correlate zoos/digits-fixed-n --out results/digits-fixed-n-data --bootstrap 1000 --seed 0 --data-measures --data-workers 2
for z in modular-addition-fixed-n sparse-parity-v2 sparse-parity-fixed-n; do
  specbound correlate "zoos/$z" --out "results/$z" --bootstrap 1000 --seed 0 --data-measures --data-workers 2
done
# the modular-addition grid again, with data measures (on another CPU it gives other models)
specbound zoo train modular-addition --preset standard --out zoos/modular-addition-v2-avx2 --ensemble auto
specbound correlate zoos/modular-addition-v2-avx2 --out results/modular-addition-v2-avx2 --bootstrap 1000 --seed 0 --data-measures --data-workers 2
python tables.py
# third answer (protocol v3): independent replicates (seeds 3-5) and the size ladder
specbound zoo train digits --grid grids/digits-replicate.yaml --out zoos/digits-replicate --ensemble 1 --engine ray
specbound zoo train modular-addition --grid grids/modular-addition-replicate.yaml --out zoos/modular-addition-replicate --ensemble 1 --engine ray
for z in digits-replicate modular-addition-replicate; do
  specbound correlate "zoos/$z" --out "results/$z" --bootstrap 1000 --seed 0
done
specbound zoo train digits --grid grids/digits-ladder.yaml --out zoos/digits-ladder --ensemble 1 --engine ray
specbound scale --manifest zoos/digits-ladder/models.txt --out results/digits-ladder
# fourth answer (protocol v4): zoos designed for tau_arch (n = 200 fixed; depth x width cells of
# lr x weight decay x 3 seeds), one model at a time; correlate-digits-arch*.time, zoo-digits-arch*.time
specbound zoo train digits --grid grids/digits-arch.yaml --out zoos/digits-arch --ensemble 1
specbound zoo train digits --grid grids/digits-arch-replicate.yaml --out zoos/digits-arch-replicate --ensemble 1
for z in digits-arch digits-arch-replicate; do
  specbound correlate "zoos/$z" --out "results/$z" --bootstrap 1000 --seed 0
done
./regenerate.sh
python ladder.py --check
python tables.py --check README.md ../../README.md answer.md
