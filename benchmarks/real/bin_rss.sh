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
# Streaming: a 420 MB zip-format .bin (100 float32 1024 x 1024 tensors, written by the tests'
# torch-free writer), every tensor read as float64 and dropped: the torch-free reader in the core
# venv against torch.load(weights_only=True, mmap=True) + .double() in the full venv, and the
# floor (python + numpy + the reader imported, nothing read).
PYTHONPATH="$HERE/src:$HERE" "$FULL" -c "
import numpy as np; from pathlib import Path; from tests.support.torch_bin_writer import write_state
rng = np.random.default_rng(0)
write_state(Path('$OUT/big.bin'), {f't{i}': rng.standard_normal((1024, 1024)).astype(np.float32) for i in range(100)})"
/usr/bin/time -f "stream-floor %e s %M KiB" env PYTHONPATH="$HERE/src" "$CORE" -c \
  "import numpy, specbound.io.torch_files"
/usr/bin/time -f "stream-torch-free %e s %M KiB" env PYTHONPATH="$HERE/src" "$CORE" -c "
from specbound.io.torch_files import TorchBinFile
f = TorchBinFile('$OUT/big.bin')
for n in f.names(): f.get(n)"
/usr/bin/time -f "stream-torch.load %e s %M KiB" "$FULL" -c "
import torch
sd = torch.load('$OUT/big.bin', weights_only=True, mmap=True)
for t in sd.values(): t.double().numpy()"
rm -rf "$OUT"
