#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/prover: the probe's accounted cost on GPU proofs
# (its threads' CPU time + hot-path events × the calibrated cost, as shares of the proof's CPU
# and wall time) beside the ABBA wall-clock pairs, at the issue's two sizes: 1 × sha256 2^20
# and 4 × sha256 2^22. Output: $OUT/run.txt, and one file per size for `prover bench --pool`.
# Usage (device tool): PAIRS=10 PAIRS_BIG=6 bash tools/gpu-accounted.sh
source "$(dirname "$0")/gpu-env.sh"
for size in "1 20 ${PAIRS:-10}" "4 22 ${PAIRS_BIG:-6}"; do
  set -- $size
  echo "== probe cost: $1 × sha256 2^$2, GPU backend, $3 ABBA pairs"
  timeout 280 $B/prover bench --probe-overhead --circuit sha256 --log-size "$2" \
    --circuits "$1" --srs synthetic --backend gpu --runs "$3" 2>&1 | tee "$OUT/accounted-$1x2e$2.txt"
done
