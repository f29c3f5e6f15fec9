#!/usr/bin/env bash
# Builds here (release) what the tools/gpu-*.sh scripts run on the GPU host and copies it,
# stripped, into .gpu/ (ignored by git): prover, proofscope, the GPU test binaries
# (tests/gpu.rs as gpu-tests, tests/gpu_msm.rs as gpu-msm-tests), nvml_cost (the probe's
# example, for tools/gpu-nvml-load.sh), the allocator probe libproofscope_preload.so, and with
# NVRTC_LIB set the kernels compiled for sm_90 (below). Then, with the device tool:
# run(command="bash tools/gpu-g2-tail.sh", carry=[".gpu"]).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p prover-core -p proofscope --bins
cargo build --release -p proofscope-probe --example nvml_cost
cargo build --release -p proofscope-preload
# The path of a test binary, from cargo's own report of what it built.
test_bin() {
    cargo test --release -p prover-core --test "$1" --no-run --message-format=json 2>/dev/null \
        | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") \
            and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])' "$1"
}
mkdir -p .gpu
cp target/release/prover target/release/proofscope .gpu/
cp "$(test_bin gpu)" .gpu/gpu-tests
cp "$(test_bin gpu_msm)" .gpu/gpu-msm-tests
cp target/release/examples/nvml_cost target/release/libproofscope_preload.so .gpu/
strip .gpu/prover .gpu/proofscope .gpu/gpu-tests .gpu/gpu-msm-tests .gpu/nvml_cost \
    .gpu/libproofscope_preload.so
# The kernels, compiled here when a libnvrtc of the GPU host's version (13.0) is at hand —
# NVRTC_LIB=the folder holding libnvrtc.so.13 (PyPI's nvidia-cuda-nvrtc wheel) — so that a
# fresh host loads them (tools/gpu-env.sh copies them into its cache) instead of compiling
# for ~76 s of device time.
rm -rf .gpu/cache
if [ -n "${NVRTC_LIB:-}" ]; then
    LD_LIBRARY_PATH="$NVRTC_LIB" target/release/prover kernels --cache .gpu/cache
fi
du -sh .gpu/*
