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
    mkdir -p "$PROOFSCOPE_CACHE/kernels"
    for f in $B/cache/kernels/*.cubin; do
        [ -e "$PROOFSCOPE_CACHE/kernels/${f##*/}" ] || cp "$f" "$PROOFSCOPE_CACHE/kernels/"
    done
fi
exec > >(tee "$OUT/run.txt") 2>&1
nvidia-smi -L; nproc; date -u

# Proofs on the GPU recorded by `prover serve` (synthetic SRS, one batch at a time, no
# verification, SERVE-ARGS added), the recording replayed headless into $OUT/REPORT, the
# proofs' phase lines matching PATTERN printed, the recording removed. PROVER names another
# carried build (e.g. .gpu/prover-old) for an A/B in the same lease.
# Usage: serve_phases REPORT SECONDS PATTERN SERVE-ARGS…
serve_phases() {
    local report=$1 seconds=$2 pattern=$3
    shift 3
    local rec="$OUT/${report%.txt}.psrec"
    PROOFSCOPE_SOCKET=none timeout "$seconds" "${PROVER:-$B/prover}" serve --backend gpu --sequential \
        --srs synthetic --verify off --record "$rec" "$@" 2>&1 \
        | grep -E "^proof [0-9]|error|stopping"
    timeout 60 $B/proofscope replay "$rec" --headless > "$OUT/$report" 2>&1
    sed -n '/-- proofs --/,/-- memory releases --/p' "$OUT/$report" | grep -E "^proof #|$pattern"
    rm -f "$rec"
}
