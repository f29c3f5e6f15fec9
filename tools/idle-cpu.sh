#!/usr/bin/env bash
# Measures the CPU an attached, idle dashboard uses: a prover proves one batch and then idles
# (heartbeats only); proofscope runs attached in a tmux terminal; its utime+stime is read from
# /proc over a window. Usage: tools/idle-cpu.sh [SECONDS]   (needs tmux and a release build)
set -euo pipefail
secs=${1:-20}
bin=target/release/proofscope
dir=$(mktemp -d)
sock=$dir/p.sock
"$bin" prover serve --circuit squaring --log-size 10 --circuits 2 --socket "$sock" --pause-ms 3600000 >"$dir/prover.log" 2>&1 &
prover=$!
trap 'kill $prover 2>/dev/null; tmux -L idlecpu kill-server 2>/dev/null; rm -rf "$dir"' EXIT
while [ ! -S "$sock" ]; do sleep 0.1; done
tmux -L idlecpu new-session -d -s idle -x 160 -y 48 "$bin attach $sock"
sleep 3
pid=$(pgrep -f "$bin attach $sock" | head -1)
ticks=$(getconf CLK_TCK)
t0=$(awk '{print $14+$15}' /proc/$pid/stat)
sleep "$secs"
t1=$(awk '{print $14+$15}' /proc/$pid/stat)
awk -v a="$t0" -v b="$t1" -v hz="$ticks" -v s="$secs" \
  'BEGIN { printf "idle attached UI: %.2f%% of a core over %d s (%d CPU ticks)\n", (b-a)/hz/s*100, s, b-a }'
