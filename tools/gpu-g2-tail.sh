#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries (prover, proofscope, gpu-tests,
# gpu-msm-tests): B's G2 tail MSM on the device (`--g2-tail device`). First the checks — the
# device's G2 MSM equals blst (sizes, edge cases), GPU proofs verify with the tail on either
# side — then the G2 MSM alone against blst (`gpu-bench --g2-msm`), then whole batches with the tail on the prep thread (CPU) and on the device,
# alternated (ABBA): the dense squaring chain (no ones: the tail is the whole B_G2 query, 40 s
# on the CPU at 2^22 × 4) and SHA-256 (mostly ones: a small tail the CPU hides beside the
# device phases). The phases of each proof come from the recordings. Results under $OUT.
# Usage (device tool): bash tools/gpu-g2-tail.sh   (LOG=22 K=4 to choose; BATCHES is a list
# of circuit:proofs:rounds, each run with the tail on either side, ABBA over its rounds;
# SKIP_TESTS=1 SKIP_BENCH=1 leave out the checks and the G2 MSM alone). The mixed circuit is
# supraseal's benchmark witness (45 % zeros, 45 % ones, 10 % field elements), the like for
# like of its capture (4 × 2^22: batch_add 72–73 ms, tail_msm 287–301 ms, b_g2_msm 13.7 s):
#   SKIP_TESTS=1 SKIP_BENCH=1 BATCHES="mixed:2:2" bash tools/gpu-g2-tail.sh
source "$(dirname "$0")/gpu-env.sh"
mkdir -p "$PROOFSCOPE_CACHE"
stamp() { echo "== $* ($(date +%T))"; }
if [ "${SKIP_TESTS:-0}" != 1 ]; then
    stamp "gpu G2 MSM and batch addition equal blst; proofs verify with the G2 tail on the device"
    PROOFSCOPE_GPU_TESTS=1 PROOFSCOPE_GPU_MAX_LOG=${MAX_LOG:-18} timeout 200 $B/gpu-msm-tests \
        gpu_g2_msm gpu_batch_addition --test-threads 1 --nocapture 2>&1 \
        | grep -E "^test |equal|panicked|result"
    PROOFSCOPE_GPU_TESTS=1 timeout 200 $B/gpu-tests gpu_proofs_verify --test-threads 1 \
        --nocapture 2>&1 | grep -E "^test |pool:|panicked|result"
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
    stamp "gpu-bench G2 MSM at 2^${G2_SIZES:-18,20,22}, device against blst"
    timeout 200 $B/prover gpu-bench --msm-only --msm --g2-msm "${G2_SIZES:-18,20,22}" \
        --cpu-reps 1 2>&1 | sed -n '/G2 MSM/,$p'
fi
one() { # circuit proofs g2-tail round
    stamp "$1 2^${LOG:-22} x ${K:-4}, --g2-tail $3, $2 proof(s) (round $4)"
    serve_phases "g2-$1-$3-$4-report.txt" 280 "b_g2_msm |tail_msm |ntt_msm_h |batch_add " \
        --circuit "$1" --log-size "${LOG:-22}" --circuits "${K:-4}" --proofs "$2" --g2-tail "$3"
}
for batch in ${BATCHES:-squaring:1:2 sha256:3:1}; do
    IFS=: read -r circuit proofs rounds <<< "$batch"
    for r in $(seq "$rounds"); do
        if [ $((r % 2)) = 1 ]; then order="prep device"; else order="device prep"; fi
        for t in $order; do one "$circuit" "$proofs" "$t" "$r"; done
    done
done
stamp done
