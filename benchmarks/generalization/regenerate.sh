#!/usr/bin/env bash
# Protocol v4 on the committed correlate folders, from their models.csv (nothing is analyzed or
# trained again): each folder is re-evaluated in place, with its zoo's grid for the missing
# configurations (the primary family by the v4 rule: A1-A3 on tau_arch for a zoo designed for
# it, fixed n with cells of several lr x weight decay; else P1-P3); then the replicate zoos
# pooled with their standard zoo, and the study (Holm over the independent folders only; the
# folders sharing trained models with them, such as a pooled folder, a fixed-n stratum or the
# same seeds retrained on another CPU, are listed as secondary).
# SPECBOUND overrides the command (e.g. SPECBOUND="python -m specbound").
set -euo pipefail
cd "$(dirname "$0")"
read -r -a SB <<< "${SPECBOUND:-specbound}"
restate() {  # FOLDER ZOO
  "${SB[@]}" correlate "results/$1" --grid "zoos/$2" --out "results/$1" --bootstrap 1000 --seed 0 --quiet
}
restate digits-v2 digits-v2
restate digits-v2-data digits-v2
restate digits-replicate digits-replicate
restate digits-fixed-n digits-fixed-n
restate digits-fixed-n-data digits-fixed-n
restate modular-addition-v2 modular-addition-v2
restate modular-addition-v2-avx2 modular-addition-v2-avx2
restate modular-addition-replicate modular-addition-replicate
restate modular-addition-fixed-n modular-addition-fixed-n
restate sparse-parity-v2 sparse-parity-v2
restate sparse-parity-fixed-n sparse-parity-fixed-n
# the zoos designed for tau_arch (fixed n = 200, depth x width cells): A1-A3 on tau_arch primary
restate digits-arch digits-arch
restate digits-arch-replicate digits-arch-replicate
# the adaptivity zoos (protocol v5, design: adaptivity): D0, A1, A3 on tau_arch primary
restate digits-adaptive digits-adaptive
restate digits-adaptive-replicate digits-adaptive-replicate
# each replicate zoo pooled with the standard zoo of its grid (disjoint seeds: 0-2 and 3-5)
"${SB[@]}" correlate results/digits-v2 results/digits-replicate --out results/digits-pooled --bootstrap 1000 --seed 0 --quiet
"${SB[@]}" correlate results/modular-addition-v2 results/modular-addition-replicate --out results/modular-addition-pooled --bootstrap 1000 --seed 0 --quiet
# the study: every primary row of every zoo, Holm over those of the independent zoos
"${SB[@]}" study results/digits-fixed-n results/modular-addition-v2-avx2 \
  results/modular-addition-fixed-n results/sparse-parity-v2 results/sparse-parity-fixed-n \
  results/digits-arch results/digits-arch-replicate \
  --replicates digits=results/digits-v2,results/digits-replicate:results/digits-pooled \
  --replicates modular-addition=results/modular-addition-v2,results/modular-addition-replicate:results/modular-addition-pooled \
  --replicates digits-adaptive=results/digits-adaptive,results/digits-adaptive-replicate \
  --answer answer.md --claims claims.csv --out results/study --quiet
# answer.md is the README's answer, opening the study page; `python tables.py --check answer.md`
# checks its verdicts against the family rows
# the ladder's page from its own models.csv and growth.csv, with the zoo's training columns
${PYTHON:-python} ladder_page.py  # PYTHON may be a command line (env ... python)
