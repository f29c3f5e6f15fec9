# Sourced by the tools/gpu-*.sh scripts that run on the GPU host (device tool): the carried
# binaries in .gpu/, results under $OUT, everything printed also in $OUT/run.txt, and which
# machine it was.
set -uo pipefail
B=.gpu
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PROOFSCOPE_CACHE=/tmp/pscache
chmod +x $B/* 2>/dev/null
exec > >(tee "$OUT/run.txt") 2>&1
nvidia-smi -L; nproc; date -u
