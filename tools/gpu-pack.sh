#!/usr/bin/env bash
# Builds here (release) what the tools/gpu-*.sh scripts run on the GPU host and copies it,
# stripped, into .gpu/ (ignored by git): prover, proofscope, and the GPU test binaries
# (tests/gpu.rs as gpu-tests, tests/gpu_msm.rs as gpu-msm-tests). Then, with the device tool:
# run(command="bash tools/gpu-g2-tail.sh", carry=[".gpu"]).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p prover-core -p proofscope --bins
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
strip .gpu/*
du -sh .gpu/*
