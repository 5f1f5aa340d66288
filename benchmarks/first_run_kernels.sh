#!/usr/bin/env bash
# On a GPU machine: the shipped fatbins (msa/_cubin) against NVRTC on a
# first run with an empty CuPy cache, then warm; the outputs must be identical.
#
#   benchmarks/first_run_kernels.sh        (msa and CuPy installed; run from anywhere)
#
# Runs tests/gpu/test_kernels_shipped_gpu.py, then the bundled example once to warm Numba's
# cache (so that only the CUDA kernels differ), then per route: first run (empty
# CUPY_CACHE_DIR), warm run, and how many NVRTC compiles the first run left in the cache.
set -eu
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python3 -m pytest -q -rw tests/gpu/test_kernels_shipped_gpu.py
tmp=$(mktemp -d)
ex=datasets/examples/example.fa
python3 -m msa align "$ex" -o "$tmp/numba-warm.fa" --device cuda
now() { python3 -c 'import time; print(time.time())'; }
for route in fatbin nvrtc; do
    kernels=""; [ "$route" = nvrtc ] && kernels=nvrtc
    for run in first warm; do
        t0=$(now)
        CUPY_CACHE_DIR="$tmp/cache-$route" MSA_KERNELS="$kernels" \
            python3 -m msa align "$ex" -o "$tmp/$route-$run.fa" --device cuda
        t1=$(now)
        echo "$route $run run: $(python3 -c "print(f'{$t1 - $t0:.2f}')") s wall"
    done
    echo "$route: $(ls "$tmp/cache-$route" | wc -l) kernels compiled by NVRTC into the empty cache"
done
cmp "$tmp/fatbin-first.fa" "$tmp/nvrtc-first.fa" && echo "outputs identical"
rm -rf "$tmp"
