#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries: the device MSM against blst at every
# size (up to 2^MAX_LOG), its edge cases, and the MSM benchmark side by side with the CPU.
# Usage (device tool): bash tools/gpu-msm.sh   — results under $OUT.
source "$(dirname "$0")/gpu-env.sh"
{ nvidia-smi -L; nproc; } 2>&1 | tee "$OUT/host.txt"
echo "== gpu msm tests"
PROOFSCOPE_GPU_TESTS=1 PROOFSCOPE_GPU_MAX_LOG=${MAX_LOG:-24} timeout 300 $B/gpu-msm-tests --test-threads 1 --nocapture 2>&1 | tee "$OUT/gpu-msm-tests.txt" | grep -E "^test |equal|panicked|result"
echo "== msm bench"
timeout 300 $B/prover gpu-bench --msm-only ${MSM_BENCH_ARGS:---msm 20,22,24 --cpu-reps 1 --msm-tune} 2>&1 | tee "$OUT/gpu-msm-bench.txt"
