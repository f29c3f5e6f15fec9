#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries: the batch-addition kernels against
# blst (G1 and G2, every list shape), proofs that verify with the GPU backend, then the
# `batch_add` phase of real batches — SHA-256 (mostly 0/1 witnesses) at 2^22 × 4, × 10 and
# 2^24 × 4, two proofs each (the first pays the bases' upload), and the dense squaring chain
# at 2^22 × 4 — each recorded and its proof table printed. Results under $OUT.
# Usage (device tool): bash tools/gpu-batch-add.sh   (RUNS="22:4 22:10 24:4" to choose)
source "$(dirname "$0")/gpu-env.sh"
mkdir -p "$PROOFSCOPE_CACHE"
stamp() { echo "== $* ($(date +%T))"; }
if [ "${SKIP_TESTS:-0}" != 1 ]; then
    stamp "gpu msm + batch addition tests"
    PROOFSCOPE_GPU_TESTS=1 PROOFSCOPE_GPU_MAX_LOG=${MAX_LOG:-20} timeout 150 $B/gpu-msm-tests --test-threads 1 --nocapture 2>&1 | grep -E "^test |equal|panicked|result"
    stamp "gpu proofs verify"
    PROOFSCOPE_GPU_TESTS=1 timeout 120 $B/gpu-tests gpu_proofs_verify --test-threads 1 --nocapture 2>&1 | grep -E "^test |verif|panicked|result"
fi
one() { # circuit log k
    stamp "$1 2^$2 x $3, --backend gpu, 2 proofs"
    rec="$OUT/ba-$1-$2x$3.psrec"
    PROOFSCOPE_SOCKET=none timeout 200 $B/prover serve --backend gpu --circuit "$1" --log-size "$2" \
        --circuits "$3" --proofs 2 --srs synthetic --verify off --record "$rec" 2>&1 | grep -E "proof [12]|error|stopping" | head -4
    timeout 60 $B/proofscope replay "$rec" --headless > "$OUT/ba-$1-$2x$3-report.txt" 2>&1
    sed -n '/-- proofs --/,/-- memory releases --/p' "$OUT/ba-$1-$2x$3-report.txt" \
        | grep -E "^proof #|upload_bases|synthesis |batch_add|b_g2_msm|ntt_msm_h |sums|upload_ones"
    rm -f "$rec"
}
for r in ${RUNS:-22:4 22:10 24:4}; do one sha256 "${r%%:*}" "${r##*:}"; done
[ "${SQUARING:-1}" = 1 ] && one squaring 22 4
stamp done
