#!/usr/bin/env bash
# End to end, side by side in one run: msa (GPU and CPU) against FAMSA 2 (default
# single-linkage tree and medoid tree) and MAFFT (--auto and PartTree), on simulated
# families (accuracy against the true alignment) and on BaliFam (SP/TC against
# BAliBASE), then the plots of it all.
#
#   benchmarks/end_to_end.sh [SIZES] [BALIFAM_DIRS]
#
# SIZES: comma-separated family sizes (default 1000,10000,100000; add 1000000 for the
# 10^6 comparison: msa and FAMSA's medoid tree only, set TIMEOUT=600; '' for none).
# BALIFAM_DIRS: comma-separated BaliFam folders, relative to the checkout or absolute
# (default data/balifam/balifam1000, where `python -m datasets.fetch balifam` puts it;
# one that is absent is skipped).
# Every tool uses all CPU cores; RESULTS (default: today's run-set folder,
# benchmarks/results/<date>_<commit>_<host>/, with its manifest.json) gets one JSON per
# simulated size and per BaliFam folder, and time.png/svg, accuracy.png/svg and table.md
# (benchmarks/plot.py, when matplotlib is installed); TIMEOUT (default 300) stops
# a tool that runs longer; BALIFAM_TOOLS replaces the BaliFam tool list.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
sizes=${1-1000,10000,100000}
balifam_dirs=${2-data/balifam/balifam1000}
results=${RESULTS:-$(python3 benchmarks/common.py)}
timeout=${TIMEOUT:-300}
threads=$(nproc)
mkdir -p "$results"
gpu_tools=msa
if python3 -c "import cupy, sys; sys.exit(0 if cupy.is_available() else 1)" 2>/dev/null; then
    gpu_tools=msa-gpu,msa
fi
msa_first=${gpu_tools%%,*}
for n in ${sizes//,/ }; do
    if [ "$n" -le 20000 ]; then
        tools="$gpu_tools,famsa,famsa-medoid,mafft,mafft-parttree"
    elif [ "$n" -le 200000 ]; then
        # mafft --auto takes hours here (FFT-NS-2 over all pairs); PartTree is MAFFT's mode.
        tools="$gpu_tools,famsa,famsa-medoid,mafft-parttree"
    else
        # FAMSA's default tree, MAFFT PartTree and msa on the CPU take hours at 10^6; the
        # medoid tree is FAMSA's mode for this size (about 6 minutes on 16 cores).
        tools="$msa_first,famsa-medoid"
    fi
    ref=()
    if [ "$n" -gt 20000 ]; then
        ref=(--ref-size 2000)  # the full true alignment of a huge family is huge
    fi
    python3 benchmarks/simulated.py -n "$n" --seed 1 --threads "$threads" --tools "$tools" \
        --timeout "$timeout" "${ref[@]}" --out "$results/sim$n.json"
done
# On BaliFam msa runs once: its CPU and GPU alignments are the same bytes.
balifam_tools=${BALIFAM_TOOLS:-$msa_first,famsa,famsa-medoid,mafft,mafft-parttree}
for dir in ${balifam_dirs//,/ }; do
    if [ -d "$dir" ]; then
        python3 benchmarks/balifam.py --sets "$dir" --threads "$threads" --tools "$balifam_tools" \
            --timeout "$timeout" --out "$results/$(basename "$dir").json"
    else
        echo "end_to_end.sh: no BaliFam folder $dir, skipped (python -m datasets.fetch balifam gets data/balifam/)" >&2
    fi
done
if python3 -c "import matplotlib" 2>/dev/null; then
    python3 benchmarks/plot.py "$results"/*.json -o "$results" --table "$results/table.md"
else
    echo "end_to_end.sh: matplotlib not installed (pip install '.[bench]'), no plots" >&2
fi
