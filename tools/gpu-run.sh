#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries: GPU correctness tests, kernel and
# transfer benchmarks, a recorded GPU session and its report, the probe's hot-path bench.
# Usage (device tool): bash tools/gpu-run.sh [quick]   — results under $OUT.
source "$(dirname "$0")/gpu-env.sh"
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nproc; which tmux; } 2>&1 | tee "$OUT/host.txt"
echo "== gpu tests"
PROOFSCOPE_GPU_TESTS=1 PROOFSCOPE_GPU_MAX_LOG=${MAX_LOG:-24} timeout 300 $B/gpu-tests --test-threads 1 --nocapture 2>&1 | tee "$OUT/gpu-tests.txt" | grep -E "^test |equal|panicked|result" 
echo "== gpu bench"
timeout 240 $B/prover gpu-bench ${GPU_BENCH_ARGS:-} 2>&1 | tee "$OUT/gpu-bench.txt"
[ "${1:-}" = quick ] && exit 0
echo "== recorded GPU session"
timeout 180 $B/prover serve --backend gpu --circuit sha256 --log-size 17 --circuits 2 --proofs 3 \
  --record "$OUT/h200-gpu-sha256.psrec" --socket /tmp/ps.sock 2>&1 | tail -5
timeout 60 $B/proofscope replay "$OUT/h200-gpu-sha256.psrec" --headless > "$OUT/h200-report.txt" 2>&1
head -40 "$OUT/h200-report.txt"
echo "== probe hot path"
timeout 120 $B/probe-bench --bench span --warm-up-time 1 --measurement-time 3 2>&1 | grep -E "^span|time:" | tee "$OUT/probe-bench.txt"
