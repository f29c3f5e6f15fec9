#!/usr/bin/env bash
# Runs on the GPU host over the carried .gpu/prover: where the probe's collector thread spends
# its CPU during GPU proofs (1 × sha256 2^20): `perf` samples of that thread alone, by symbol,
# kernel included, and its syscalls counted by `strace -c`. Output: $OUT/run.txt.
# Usage (device tool): bash tools/gpu-collector-profile.sh
source "$(dirname "$0")/gpu-env.sh"
$B/prover bench --probe-overhead --circuit sha256 --log-size 20 --circuits 1 --srs synthetic \
  --backend gpu --runs 8 > "$OUT/bench.txt" 2>&1 &
P=$!
sleep 25
T=$(for t in /proc/$P/task/*; do [ "$(cat "$t/comm" 2>/dev/null)" = probe-collector ] && basename "$t"; done | head -1)
echo "prover $P, collector $T"
if command -v perf >/dev/null && [ -n "$T" ]; then
  timeout 6 perf record -F 4000 -t "$T" -o "$OUT/perf.data" >/dev/null 2>&1
  perf report -i "$OUT/perf.data" --no-children --sort dso,sym --stdio 2>/dev/null | grep -E "^ +[0-9]" | head -30
else
  echo "no perf here"
fi
if command -v strace >/dev/null && [ -n "$T" ]; then
  timeout 5 strace -c -p "$T" 2>&1 | head -25
else
  echo "no strace here"
fi
wait $P
grep -E "^accounted" "$OUT/bench.txt" | tail -3 | cut -c1-260
