#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries: `prep_msm` of two builds of the prover
# in one lease, A B B A (.gpu/prover, the build under test; .gpu/prover-old, the one before),
# on supraseal's mixed witness at 4 × 2^22 (3 proofs each, synthetic SRS, one batch at a
# time); each run's prep_msm, barrier_wait-bearing and b_g2_msm lines printed. Build the old
# one with the earlier prep.rs checked out: `cargo build --release -p prover-core --bin prover`,
# copy target/release/prover to .gpu/prover-old, then tools/gpu-pack.sh for the rest.
# Usage (device tool): run(command="bash tools/gpu-prep-ab.sh", carry=[".gpu"]) — the .gpu
# folder must hold prover, prover-old, proofscope (and the kernel cache) only, under 64 MiB
# with the tree.
source "$(dirname "$0")/gpu-env.sh"
LOG=${LOG:-22}
K=${K:-4}
for who in new old old new; do
    if [ "$who" = old ]; then P=$B/prover-old; else P=$B/prover; fi
    echo "== $who: mixed 2^$LOG x $K ($(date +%T))"
    PROVER=$P serve_phases "prep-$who.txt" 240 "prep_msm |barrier|b_g2_msm " \
        --circuit mixed --log-size "$LOG" --circuits "$K" --proofs 3
done
echo "== done ($(date +%T))"
