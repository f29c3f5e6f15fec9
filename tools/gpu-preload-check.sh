#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries (tools/gpu-pack.sh): a CUDA program
# that uses the runtime's memory pool as supraseal does (tools/mempool.cu, compiled here with
# the host's nvcc) under the allocator probe, recorded to $OUT/mempool.psrec with its headless
# report beside it. Read back on the build machine: `python3 tools/psrec.py
# $OUT/mempool.psrec | grep -E "^(alloc|release|alloc_sample) "` — live bytes should peak near
# the 64 MiB of heap and 32 MiB pinned (no block of hundreds of GB: the pool's reservation is
# address space, preload/src/mappings.rs).
source "$(dirname "$0")/gpu-env.sh"
nvcc -O2 -o /tmp/mempool tools/mempool.cu || exit 1
LD_PRELOAD=$PWD/$B/libproofscope_preload.so PROOFSCOPE_SOCKET=none PROOFSCOPE_PRELOAD_DELAY_MS=0 \
    PROOFSCOPE_RECORD="$OUT/mempool.psrec" /tmp/mempool
$B/proofscope replay --headless "$OUT/mempool.psrec" > "$OUT/mempool.txt" 2>&1
head -30 "$OUT/mempool.txt"
