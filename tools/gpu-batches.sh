#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries: #29 item 1's batches with the shipped
# defaults (no placement flags), each a `serve` of PROOFS proofs, phases from the recording —
# supraseal's witness (`--circuit mixed`) and SHA-256 at 2^22 × 4, 2^22 × 10 and 2^24 × 4 —
# after `gpu-bench`'s NTT, transfer and whole-H sections (BENCH=0 leaves them out).
# Usage (device tool): bash tools/gpu-batches.sh   (BATCHES="circuit:log:circuits …", PROOFS=2,
# PROVER=.gpu/prover-old for another carried build)
source "$(dirname "$0")/gpu-env.sh"
mkdir -p "$PROOFSCOPE_CACHE"
if [ "${BENCH:-1}" = 1 ]; then
    echo "== gpu-bench: NTT, transfers, whole H ($(date +%T))"
    timeout 240 $B/prover gpu-bench --sizes 20,22,24 --msm --reps 5 2>&1 | grep -v "^\s*$"
fi
for batch in ${BATCHES:-mixed:22:4 mixed:22:10 mixed:24:4 sha256:22:10 sha256:24:4}; do
    IFS=: read -r circuit log k <<< "$batch"
    build=$(basename "${PROVER:-$B/prover}")
    echo "== $circuit 2^$log x $k, ${PROOFS:-2} proofs, defaults, $build ($(date +%T))"
    serve_phases "batch-$circuit-$log-$k-$build.txt" 200 \
        "b_g2_msm |tail_msm |ntt_msm_h |batch_add |upload_ones|_sums" \
        --circuit "$circuit" --log-size "$log" --circuits "$k" --proofs "${PROOFS:-2}"
done
echo "== done ($(date +%T))"
