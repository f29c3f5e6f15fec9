#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries (issue: GPU throughput): GPU correctness
# (kernels and staged transfers against the CPU, proofs that verify), the whole H at 2^24 through
# the staging buffers against page-locked in place, and `serve` of 48 × SHA-256 2^22 batches
# with the next batch synthesised beside the current one's GPU phases against one at a time,
# each recorded. Runs alternate (ORDER, e.g. "seq ovl ovl seq") so neither gains from its place.
# Usage (device tool): ORDER="seq ovl" bash tools/gpu-overlap.sh   — results under $OUT.
# SKIP_TESTS=1 / SKIP_BENCH=1 leave out the correctness tests / the H bench.
source "$(dirname "$0")/gpu-env.sh"
free -g | head -2
if [ -z "${SKIP_TESTS:-}" ]; then
  echo "== gpu tests (kernels equal the CPU up to 2^${MAX_LOG:-20}; staged transfers; GPU proofs verify)"
  PROOFSCOPE_GPU_TESTS=1 PROOFSCOPE_GPU_MAX_LOG=${MAX_LOG:-20} timeout 200 $B/gpu-tests --test-threads 1 2>&1 \
    | grep -E "^test |test result|panicked"
fi
if [ -z "${SKIP_BENCH:-}" ]; then
  echo "== whole H at 2^24: staged against page-locked in place"
  timeout 200 $B/prover gpu-bench --sizes 24 --h-log 24 --reps 8 --msm 2>&1 | sed -n '/whole H/,$p'
fi
n=0
for mode in ${ORDER:-seq ovl}; do
  n=$((n + 1))
  flag=""; [ "$mode" = seq ] && flag="--sequential"
  echo "== serve $mode (run $n): 3 × (48 × sha256 2^22), GPU backend, synthetic SRS"
  timeout 280 $B/prover serve --backend gpu --circuit sha256 --log-size 22 --circuits 48 --srs synthetic \
    --proofs 3 --dealloc async --verify off $flag --record "$OUT/h200-$mode-$n.psrec" --socket none 2>&1 \
    | grep -E "^proof|throughput|stopping|error|warning"
done
ls -la "$OUT"
