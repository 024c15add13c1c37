#!/usr/bin/env bash
# Peak RSS and wall time of `specbound analyze` on rxnmapper's ALBERT pytorch_model.bin (legacy
# torch format), three readers side by side, alternating, ROUNDS rounds:
#   before   the torch.load(weights_only=True) reader (SRC_BEFORE, e.g. `git archive` of the
#            commit before the torch-free reader), full venv (torch imported)
#   core     the torch-free reader, core-only venv (no torch installed)
#   full     the torch-free reader, full venv (torch installed, never imported)
# Usage: SRC_BEFORE=/tmp/bin_before/src benchmarks/real/bin_rss.sh [ROUNDS]
set -euo pipefail
ROUNDS=${1:-3}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
FULL=${FULL:-/work/venv/bin/python}
CORE=${CORE:-/work/venv-core/bin/python}
MODEL=$("$FULL" -c 'import importlib.metadata as m; print(m.distribution("rxnmapper").locate_file("rxnmapper/models/transformers/albert_heads_8_uspto_all_1310k"))')
OUT=$(mktemp -d)
run() {  # label python src
  rm -rf "$OUT/o"
  /usr/bin/time -f "$1 %e s %M KiB" env PYTHONPATH="$3" "$2" -m specbound analyze "$MODEL" \
    --out "$OUT/o" --quiet --no-cache 2>&1 >/dev/null | tail -1
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$ROUNDS"); do
  run before "$FULL" "$SRC_BEFORE"
  run core "$CORE" "$HERE/src"
  run full "$FULL" "$HERE/src"
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$OUT"
