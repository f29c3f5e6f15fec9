#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/prover (see tools/gpu-run.sh): the ghost at the
# largest scale one GPU takes in a session's device time (issue 30's one-GPU part): SCALE_K ×
# sha256 2^SCALE_LOG, SCALE_PROOFS proofs one batch at a time, --dealloc sync then async, each
# recorded to $OUT/h200-<K>x2e<LOG>-<mode>.psrec (synthetic SRS: the same work, proofs cannot
# verify). Reports are made from the recordings afterwards, on the build machine.
source "$(dirname "$0")/gpu-env.sh"
K=${SCALE_K:-4}
LOG=${SCALE_LOG:-25}
PROOFS=${SCALE_PROOFS:-2}
LIMIT=${SCALE_LIMIT:-280}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; free -g; } 2>&1
TIME=""; [ -x /usr/bin/time ] && TIME="/usr/bin/time -v"
for mode in sync async; do
    echo "== $K x sha256 2^$LOG, $PROOFS proofs, --dealloc $mode ($(date +%T))"
    PROOFSCOPE_SOCKET=none $TIME timeout "$LIMIT" $B/prover serve --backend gpu --circuit sha256 \
        --log-size "$LOG" --circuits "$K" --proofs "$PROOFS" --sequential --srs synthetic \
        --verify off --dealloc "$mode" --record "$OUT/h200-${K}x2e${LOG}-$mode.psrec" 2>&1 \
        | grep -vE "^\s+(Page size|Exit status|Signals|Swaps|File system|Socket|Average|Minor|Major|Voluntary|Involuntary|Percent|System time|User time)"
done
