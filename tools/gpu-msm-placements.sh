#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries: the MSM tests (every placement of the
# inputs equal to blst) and `prover gpu-bench --msm-only` with sppark's four placements (inputs
# pageable, page-locked, bases resident with scalars pageable or page-locked), for both shapes
# of the G1 accumulation (`--msm-accumulate narrow,wide`: 256 threads × 2 blocks an SM at 128
# registers, or sppark's 384 × 1 at 168), all in one rotating order; then `--msm-tune` at the
# largest size (c = 14…17, runs of 64…512, both shapes: device time, best of 3).
# Usage (device tool): bash tools/gpu-msm-placements.sh   (SKIP_TESTS=1, SIZES=…, SHAPES=…)
source "$(dirname "$0")/gpu-env.sh"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
    echo "== MSM tests (placements, both accumulation shapes, sizes up to 2^${MAX_LOG:-20}, edge cases)"
    PROOFSCOPE_GPU_TESTS=1 PROOFSCOPE_GPU_MAX_LOG=${MAX_LOG:-20} timeout 240 $B/gpu-msm-tests --test-threads 1 2>&1 \
      | grep -E "^test |test result|panicked"
    echo "== gpu tests (staged transfers, H, proofs verify)"
    PROOFSCOPE_GPU_TESTS=1 PROOFSCOPE_GPU_MAX_LOG=20 timeout 200 $B/gpu-tests --test-threads 1 2>&1 \
      | grep -E "^test |test result|panicked"
fi
echo "== G1 MSM by placement and accumulation shape"
timeout 300 $B/prover gpu-bench --msm-only --msm ${SIZES:-20,22,24} --cpu-reps 1 --reps 5 \
    --msm-accumulate ${SHAPES:-narrow,wide} --msm-tune
