#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries (see tools/gpu-run.sh): the whole C2
# pipeline with GPU MSMs. In order: GPU tests (proofs verify with the GPU backend, NTT/H/MSM
# against the CPU and blst), the ghost at scale (a large SHA-256 batch recorded with
# --dealloc sync and async, and their reports), the MSM benchmark beside blst, and a batch of
# 2^22-constraint SHA-256 circuits on the GPU and on the CPU backend. Each step has its own
# time limit so a slow one cannot starve the rest. Results under $OUT, in 5 files (the device
# tool brings back at most 8): run.txt (everything printed), the two recordings and their
# reports; on a host with two or more GPUs also a recording of a batch split across them and
# its report (7 files).
source "$(dirname "$0")/gpu-env.sh"
mkdir -p "$PROOFSCOPE_CACHE"
[ -d $B/cache ] && cp -r $B/cache/. "$PROOFSCOPE_CACHE"/
GHOST_LOG=${GHOST_LOG:-22}
GHOST_K=${GHOST_K:-48}
BATCH_LOG=${BATCH_LOG:-22}
BATCH_K=${BATCH_K:-4}
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; free -g; } 2>&1
TIME=""; [ -x /usr/bin/time ] && TIME="/usr/bin/time -v"
stamp() { echo "== $* ($(date +%T))"; }

if [ "${SKIP_TESTS:-0}" != 1 ]; then
    stamp "gpu tests"
    PROOFSCOPE_GPU_TESTS=1 PROOFSCOPE_GPU_MAX_LOG=${MAX_LOG:-20} timeout 120 $B/gpu-tests --test-threads 1 --nocapture 2>&1
    PROOFSCOPE_GPU_TESTS=1 PROOFSCOPE_GPU_MAX_LOG=${MAX_LOG:-20} timeout 60 $B/gpu-msm-tests --test-threads 1 --nocapture 2>&1
fi

for mode in sync async; do
    stamp "ghost at scale: $GHOST_K x sha256 2^$GHOST_LOG, --dealloc $mode"
    rec="$OUT/h200-ghost-$mode.psrec"
    PROOFSCOPE_SOCKET=none $TIME timeout 90 $B/prover serve --backend gpu --circuit sha256 \
        --log-size "$GHOST_LOG" --circuits "$GHOST_K" --proofs 1 --srs synthetic --verify off \
        --dealloc "$mode" --record "$rec" 2>&1 | grep -E "proof 1|stopping|error|Maximum resident|Elapsed"
    timeout 60 $B/proofscope replay "$rec" --headless > "$OUT/h200-ghost-$mode-report.txt" 2>&1
    sed -n '/-- proofs --/,/-- memory releases --/p' "$OUT/h200-ghost-$mode-report.txt"
done

NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$NGPU" -ge 2 ]; then
    stamp "multi-GPU: 4 x sha256 2^20 split across $NGPU GPUs"
    rec="$OUT/h200-multi-gpu.psrec"
    PROOFSCOPE_SOCKET=none timeout 90 $B/prover serve --backend gpu --circuit sha256 --log-size 20 \
        --circuits 4 --proofs 2 --srs synthetic --verify off --record "$rec" 2>&1 | tail -4
    timeout 60 $B/proofscope replay "$rec" --headless > "$OUT/h200-multi-gpu-report.txt" 2>&1
    sed -n '/-- proofs --/,/-- memory releases --/p;/-- GPU --/,/-- dropped/p' "$OUT/h200-multi-gpu-report.txt"
fi

# SKIP_TESTS=1 leaves out the GPU tests; SKIP_BENCH=1 leaves out the MSM benchmark and the GPU/CPU batch (already measured), so the
# recordings fit one device call.
[ "${SKIP_BENCH:-0}" = 1 ] && { stamp done; exit 0; }

stamp "msm bench"
timeout 120 $B/prover gpu-bench --msm-only ${MSM_BENCH_ARGS:---msm 20,22,24 --cpu-reps 1} 2>&1

for be in gpu cpu; do
    stamp "batch: $BATCH_K x sha256 2^$BATCH_LOG, --backend $be"
    PROOFSCOPE_SOCKET=none timeout 80 $B/prover prove --backend "$be" --circuit sha256 \
        --log-size "$BATCH_LOG" --circuits "$BATCH_K" --srs synthetic --verify off 2>&1
done
stamp done
