#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries: #29 item 3, a, b, c written into
# page-locked pooled columns (`--dealloc reuse`). First the checks — the GPU H of pooled
# columns equals the CPU's, proofs from pooled columns verify batch after batch — then the
# whole H at 2^24 three ways (fresh vectors staged, fresh vectors locked in place, pooled
# columns; `prover gpu-bench`'s H section, rounds in rotating order), then real batches of
# SHA-256 2^24 × 4 proved with `--dealloc async` and `reuse` alternately (ABBA), three proofs
# each, their `ntt_msm_h` phase from the recordings. Results under $OUT.
# Usage (device tool): bash tools/gpu-h-pooled.sh   (H_LOG=24 ROUNDS=2 LOG=24 K=4 to choose)
source "$(dirname "$0")/gpu-env.sh"
mkdir -p "$PROOFSCOPE_CACHE"
stamp() { echo "== $* ($(date +%T))"; }
if [ "${SKIP_TESTS:-0}" != 1 ]; then
    stamp "gpu H equals the CPU (staged and pooled), proofs verify (with and without a pool)"
    PROOFSCOPE_GPU_TESTS=1 PROOFSCOPE_GPU_MAX_LOG=${MAX_LOG:-20} timeout 200 $B/gpu-tests \
        gpu_h_computation_equals_the_cpu gpu_proofs_verify --test-threads 1 --nocapture 2>&1 \
        | grep -E "^test |H equals|pool:|panicked|result"
fi
stamp "gpu-bench whole H at 2^${H_LOG:-24}"
timeout 240 $B/prover gpu-bench --sizes 20 --msm --h-log "${H_LOG:-24}" --reps 8 2>&1 \
    | sed -n '/whole H computation/,$p'
one() { # dealloc round
    stamp "sha256 2^${LOG:-24} x ${K:-4}, --dealloc $1, 3 proofs (round $2)"
    serve_phases "h-$1-$2-report.txt" 240 "synthesis |ntt_msm_h |upload_a|intt_coset_ntt_a" \
        --circuit sha256 --log-size "${LOG:-24}" --circuits "${K:-4}" --proofs 3 --dealloc "$1"
}
for r in $(seq "${ROUNDS:-2}"); do
    if [ $((r % 2)) = 1 ]; then one async "$r"; one reuse "$r"; else one reuse "$r"; one async "$r"; fi
done
stamp done
