#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries: what each NVML query the probe's GPU
# sampler makes costs (probe/examples/nvml_cost.rs, carried as .gpu/nvml_cost: back to back, at
# the sampler's 100 ms spacing, and the driver's sample buffer; ~35 s a run) on an idle GPU and
# twice while `prover serve` proves 4 × SHA-256 2^22 on it (probe off, so that its own sampler
# does not share NVML with the measurement). ~2.5 minutes.
# Usage (device tool): bash tools/gpu-nvml-load.sh
source "$(dirname "$0")/gpu-env.sh"
mkdir -p "$PROOFSCOPE_CACHE"
echo "== idle ($(date +%T))"
$B/nvml_cost
PROOFSCOPE_OFF=1 PROOFSCOPE_SOCKET=none timeout 170 $B/prover serve --backend gpu --sequential \
    --srs synthetic --verify off --circuit sha256 --log-size 22 --circuits 4 --proofs 30 \
    > "$OUT/load.txt" 2>&1 &
load=$!
sleep 15
for i in 1 2; do
    echo "== while proving ($i, $(date +%T))"
    $B/nvml_cost
done
kill "$load" 2>/dev/null  # timeout passes it on to the prover
wait
grep -E "^proof [0-9]" "$OUT/load.txt" | head -3
echo "== done ($(date +%T))"
