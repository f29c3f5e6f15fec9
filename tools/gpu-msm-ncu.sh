#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries: where the G1 MSM's bucket accumulation
# spends its time (#29 item 2, against sppark), one kernel at a time under Nsight Compute —
# `msm_accumulate_affine` (the MSM's 168 of 208 ms at 2^24) and then `msm_accumulate_xyzz`,
# each profiled once (launch 1 of the first MSM at 2^${LOG:-24}, resident bases) with the
# sections that say what bounds it: speed of light, occupancy, launch statistics (registers,
# spills), memory workload, warp-state sampling; `msm_accumulate_affine_wide` is the same pass
# at sppark's launch shape (384 threads, 168 registers). Text reports under $OUT.
# Usage (device tool): bash tools/gpu-msm-ncu.sh   (LOG=24 KERNELS="msm_accumulate_affine" to choose)
source "$(dirname "$0")/gpu-env.sh"
mkdir -p "$PROOFSCOPE_CACHE"
# The kernels compile once, outside the profiler (NVRTC under ncu is slow).
timeout 200 $B/prover gpu-bench --msm-only --msm 16 --cpu-reps 1 --reps 1 2>&1 | tail -3
for k in ${KERNELS:-msm_accumulate_affine msm_accumulate_affine_wide msm_accumulate_xyzz}; do
    echo "== ncu: $k at 2^${LOG:-24}"
    timeout 280 ncu --kernel-name "$k" --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section LaunchStats \
        --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
        $B/prover gpu-bench --msm-only --msm "${LOG:-24}" --cpu-reps 1 --reps 1 \
        --msm-accumulate narrow,wide > "$OUT/ncu-$k-2e${LOG:-24}.txt" 2>&1
    grep -E "Duration|Registers Per|Local|Achieved Occupancy|Theoretical Occupancy|Compute \(SM\) Throughput|Memory Throughput|Stall|Issued Warp" \
        "$OUT/ncu-$k-2e${LOG:-24}.txt" | head -40
done
echo "== done ($(date +%T))"
