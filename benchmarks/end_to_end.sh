#!/usr/bin/env bash
# End to end, side by side in one run: msa (GPU and CPU) against FAMSA 2 (default
# single-linkage tree and medoid tree) and MAFFT PartTree, on simulated families
# (accuracy against the true alignment) and on BaliFam (SP/TC against BAliBASE).
#
#   benchmarks/end_to_end.sh [SIZES] [BALIFAM_DIR]
#
# SIZES: comma-separated family sizes (default 10000,100000; add 1000000 for the
# 10^6 comparison: msa and FAMSA's medoid tree only, set TIMEOUT=600); BALIFAM_DIR: a
# BaliFam folder (default ../shared/datasets/balifam/balifam1000; skipped if
# absent). Every tool uses all CPU cores; RESULTS (default bench-out) gets one
# JSON per run; TIMEOUT (default 300) stops a tool that runs longer.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
sizes=${1:-10000,100000}
balifam=${2:-../shared/datasets/balifam/balifam1000}
results=${RESULTS:-bench-out}
timeout=${TIMEOUT:-300}
threads=$(nproc)
mkdir -p "$results"
gpu_tools=msa
if python3 -c "import cupy, sys; sys.exit(0 if cupy.is_available() else 1)" 2>/dev/null; then
    gpu_tools=msa-gpu,msa
fi
for n in ${sizes//,/ }; do
    tools="$gpu_tools,famsa,famsa-medoid,mafft-parttree"
    if [ "$n" -gt 200000 ]; then
        # FAMSA's default tree, MAFFT PartTree and msa on the CPU take hours at 10^6; the
        # medoid tree is FAMSA's mode for this size (about 6 minutes on 16 cores).
        tools="${gpu_tools%%,*},famsa-medoid"
    fi
    ref=()
    if [ "$n" -gt 20000 ]; then
        ref=(--ref-size 2000)  # the full true alignment of a huge family is huge
    fi
    python3 benchmarks/simulated.py -n "$n" --seed 1 --threads "$threads" --tools "$tools" \
        --timeout "$timeout" "${ref[@]}" --out "$results/sim$n.json"
done
if [ -d "$balifam" ]; then
    python3 benchmarks/balifam.py --sets "$balifam" --threads "$threads" --tools "$gpu_tools,famsa" \
        --timeout "$timeout" --out "$results/$(basename "$balifam").json"
fi
