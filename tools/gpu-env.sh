# Sourced by the tools/gpu-*.sh scripts that run on the GPU host (device tool): the carried
# binaries in .gpu/, results under $OUT, everything printed also in $OUT/run.txt, and which
# machine it was.
set -uo pipefail
B=.gpu
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PROOFSCOPE_CACHE=/tmp/pscache
chmod +x $B/* 2>/dev/null
# Kernels compiled before the trip (tools/gpu-pack.sh with NVRTC_LIB): loaded, not compiled.
if [ -d $B/cache/kernels ]; then
    mkdir -p "$PROOFSCOPE_CACHE/kernels" && cp -n $B/cache/kernels/*.cubin "$PROOFSCOPE_CACHE/kernels/"
fi
exec > >(tee "$OUT/run.txt") 2>&1
nvidia-smi -L; nproc; date -u
