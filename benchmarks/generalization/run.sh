#!/usr/bin/env bash
# The generalization study of README.md: two standard zoos, then SPEC 10 correlations.
# Resumable: re-running skips finished models (and correlate recomputes from the cache).
set -euo pipefail
cd "$(dirname "$0")/../.."
for task in modular-addition digits; do
  specbound zoo train "$task" --preset standard --out "benchmarks/generalization/zoos/$task"
done
for task in modular-addition digits; do
  specbound correlate "benchmarks/generalization/zoos/$task" \
    --out "benchmarks/generalization/results/$task" --bootstrap 1000 --seed 0
done
python benchmarks/generalization/tables.py
