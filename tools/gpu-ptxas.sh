#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries: the MSM module's ptxas level and the
# paired carry-chain asm (#29 item 2), timed like for like in one run. Three contenders, the
# same MSM call (bases resident / scalars page-locked and the other placements, both
# accumulation shapes), in the order A B C C B A:
#   A  .gpu/prover-old   the kernels before the change (one module, ptxas -O3, halves apart)
#   B  .gpu/prover with PROOFSCOPE_PTXAS_LEVEL=3   (paired asm and Fp chains, -O3)
#   C  .gpu/prover as shipped                      (the same, MSM unit at -O1)
# Then the NTT of both binaries (A C C A): the paired asm changes ntt_pass too.
# Build: cp the previous build's stripped prover to .gpu/prover-old, then bash tools/gpu-pack.sh.
# Usage (device tool): bash tools/gpu-ptxas.sh   (MSM="20 22 24" REPS=5 to choose)
source "$(dirname "$0")/gpu-env.sh"
mkdir -p "$PROOFSCOPE_CACHE"
msm() { # label, binary, env
    echo "== $1"
    env $3 timeout 170 $2 gpu-bench --msm-only --msm ${MSM:-20 22 24} --cpu-reps 1 \
        --reps ${REPS:-5} --msm-accumulate narrow,wide 2>&1 | grep -vE "^\s*$|blst"
}
ntt() { # label, binary
    echo "== NTT $1"
    timeout 120 $2 gpu-bench --sizes 22,24 --msm --reps ${REPS:-5} 2>&1 \
        | sed -n '/NTT/,/^$/p' | head -12
}
A=$B/prover-old; N=$B/prover
msm "A old" $A ""; msm "B paired -O3" $N PROOFSCOPE_PTXAS_LEVEL=3; msm "C shipped" $N ""
msm "C shipped" $N ""; msm "B paired -O3" $N PROOFSCOPE_PTXAS_LEVEL=3; msm "A old" $A ""
ntt "A old" $A; ntt "C shipped" $N; ntt "C shipped" $N; ntt "A old" $A
echo "== done ($(date +%T))"
