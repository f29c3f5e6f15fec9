#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/ binaries: GPU correctness (kernels against the
# CPU, proofs that verify), the probe's overhead on a real GPU proof (ABBA pairs, bootstrap
# interval), and the probe's hot path there. Everything printed goes to $OUT/run.txt.
# Usage (device tool): PAIRS=20 bash tools/gpu-overhead.sh
# SKIP_TESTS=1 / SKIP_HOTPATH=1 leave out the correctness tests / the hot-path bench; KNOBS="VAR=x …"
# repeats the overhead with each setting (KNOB_PAIRS pairs). LOG and CIRCUITS size the batch
# (default 4 × 2^20). Each overhead run's output also goes to a file of its own under $OUT
# (overhead.txt, overhead-VAR=x.txt), so runs of several commands can be pooled afterwards
# with `prover bench --pool FILE…`.
source "$(dirname "$0")/gpu-env.sh"
if [ -z "${SKIP_TESTS:-}" ]; then
  echo "== gpu tests (kernels equal the CPU up to 2^${MAX_LOG:-20}; GPU proofs verify)"
  PROOFSCOPE_GPU_TESTS=1 PROOFSCOPE_GPU_MAX_LOG=${MAX_LOG:-20} timeout 200 $B/gpu-tests --test-threads 1 2>&1 \
    | grep -E "^test |test result|panicked"
fi
LOG=${LOG:-20}
CIRCUITS=${CIRCUITS:-4}
overhead() {
  timeout 420 $B/prover bench --probe-overhead --circuit sha256 --log-size "$LOG" \
    --circuits "$CIRCUITS" --srs synthetic --backend gpu --runs "$1"
}
echo "== probe overhead: $CIRCUITS × sha256 2^$LOG, GPU backend, ${PAIRS:-20} ABBA pairs"
overhead "${PAIRS:-20}" | tee "$OUT/overhead.txt"
# Where a cost comes from: the same measurement with one part of the probe off.
for knob in ${KNOBS:-}; do
  echo "== probe overhead with $knob, ${KNOB_PAIRS:-15} pairs"
  env "$knob" bash -c "$(declare -f overhead); B=$B LOG=$LOG CIRCUITS=$CIRCUITS overhead ${KNOB_PAIRS:-15}" \
    | tee "$OUT/overhead-$knob.txt"
done
[ -n "${SKIP_HOTPATH:-}" ] && exit 0
echo "== probe hot path"
timeout 90 $B/probe-bench --bench span --warm-up-time 1 --measurement-time 3 2>&1 | grep -E "^span|time:"
