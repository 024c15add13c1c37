#!/usr/bin/env bash
# Protocol v3 on the committed correlate folders, from their models.csv (nothing is analyzed or
# trained again): each folder is re-evaluated in place, with its zoo's grid for the missing
# configurations; then the replicate zoos pooled with their standard zoo, and the study.
set -euo pipefail
cd "$(dirname "$0")"
restate() {  # FOLDER ZOO
  specbound correlate "results/$1" --grid "zoos/$2" --out "results/$1" --bootstrap 1000 --seed 0 --quiet
}
restate digits-v2 digits-v2
restate digits-v2-data digits-v2
restate digits-fixed-n digits-fixed-n
restate digits-fixed-n-data digits-fixed-n
restate modular-addition-v2 modular-addition-v2
restate modular-addition-v2-avx2 modular-addition-v2-avx2
restate modular-addition-fixed-n modular-addition-fixed-n
restate sparse-parity-v2 sparse-parity-v2
restate sparse-parity-fixed-n sparse-parity-fixed-n
# each replicate zoo pooled with the standard zoo of its grid (disjoint seeds: 0-2 and 3-5)
specbound correlate results/digits-v2 results/digits-replicate --out results/digits-pooled --bootstrap 1000 --seed 0 --quiet
specbound correlate results/modular-addition-v2 results/modular-addition-replicate --out results/modular-addition-pooled --bootstrap 1000 --seed 0 --quiet
# the study: every primary row of every zoo, Holm over all of them
specbound study results/digits-fixed-n results/modular-addition-v2-avx2 \
  results/modular-addition-fixed-n results/sparse-parity-v2 results/sparse-parity-fixed-n \
  --replicates digits=results/digits-v2,results/digits-replicate:results/digits-pooled \
  --replicates modular-addition=results/modular-addition-v2,results/modular-addition-replicate:results/modular-addition-pooled \
  --out results/study --quiet
