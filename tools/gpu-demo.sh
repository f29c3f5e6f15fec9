#!/usr/bin/env bash
# On the GPU host: runs `proofscope demo --backend gpu` in a real terminal (tmux) and captures
# the timeline and GPU panels into $OUT. Usage (device tool): bash tools/gpu-demo.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PROOFSCOPE_CACHE=/tmp/pscache
chmod +x .gpu/*
tmux new-session -d -s demo -x 160 -y 48 ".gpu/proofscope demo --backend gpu --circuit squaring --log-size 20 --circuits 2 --srs synthetic; sleep 30"
sleep "${WAIT:-40}"
tmux capture-pane -p -t demo > "$OUT/demo-timeline.txt"
for i in 1 2 3; do tmux send-keys -t demo Tab; sleep 0.5; done
sleep 2
tmux capture-pane -p -t demo > "$OUT/demo-gpu.txt"
tmux send-keys -t demo q; sleep 3
tmux kill-server 2>/dev/null
cat "$OUT/demo-timeline.txt"; echo ------; cat "$OUT/demo-gpu.txt"
