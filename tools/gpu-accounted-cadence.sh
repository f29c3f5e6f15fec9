#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries: the probe's accounted cost (its threads'
# CPU time + hot-path events × their cost, as shares of each proof's wall and CPU time) for each
# configuration in CONFIGS — `BINARY:ASSIGNMENTS` (a binary of .gpu/, then comma-separated
# environment assignments or `-` for the defaults) — at each size in SIZES (`circuits:log:pairs`),
# one after the other in one lease so that they compare like for like.
# Usage (device tool):
#   CONFIGS="prover:- prover-old:- prover:PROOFSCOPE_ALLOC_SAMPLE_MS=20" SIZES="1:20:6 4:22:4" \
#     bash tools/gpu-accounted-cadence.sh
source "$(dirname "$0")/gpu-env.sh"
for size in ${SIZES:-1:20:6 4:22:4}; do
  IFS=: read -r k log pairs <<< "$size"
  for cfg in ${CONFIGS:-prover:-}; do
    bin=${cfg%%:*}; assign=${cfg#*:}
    env=(); [ "$assign" != - ] && IFS=, read -r -a env <<< "$assign"
    echo "== [$cfg] $k × sha256 2^$log, GPU backend, $pairs ABBA pairs ($(date +%T))"
    env "${env[@]}" timeout 200 "$B/$bin" bench --probe-overhead --circuit sha256 --log-size "$log" \
      --circuits "$k" --srs synthetic --backend gpu --runs "$pairs" 2>&1 \
      | tee "$OUT/accounted-${cfg//[^A-Za-z0-9]/_}-${k}x2e$log.txt" \
      | grep -E "^accounted \(median|^overhead|^hot path|error"
  done
done
echo "== done ($(date +%T))"
