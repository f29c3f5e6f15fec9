#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries: the shipped defaults checked end to
# end — the MSM tests (the default accumulation shape and the other one beside it), the
# GPU proofs (every witness, the G2 tail on either side), and a `serve` of supraseal's mixed
# witness at 4 × 2^22 with no placement flags (`--g2-tail auto`: on the device).
# Usage (device tool): bash tools/gpu-defaults.sh
source "$(dirname "$0")/gpu-env.sh"
mkdir -p "$PROOFSCOPE_CACHE"
echo "== MSM tests up to 2^${MAX_LOG:-20}"
PROOFSCOPE_GPU_TESTS=1 PROOFSCOPE_GPU_MAX_LOG=${MAX_LOG:-20} timeout 240 $B/gpu-msm-tests \
    --test-threads 1 2>&1 | grep -E "^test |test result|panicked"
echo "== GPU tests (H, transfers, proofs verify)"
PROOFSCOPE_GPU_TESTS=1 timeout 200 $B/gpu-tests --test-threads 1 2>&1 \
    | grep -E "^test |test result|panicked|pool:"
echo "== mixed 2^22 x 4, defaults"
serve_phases defaults-mixed-report.txt 200 "b_g2_msm |tail_msm |ntt_msm_h |batch_add " \
    --circuit mixed --log-size 22 --circuits 4 --proofs 2
echo "== done ($(date +%T))"
