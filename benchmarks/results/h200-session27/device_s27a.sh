#!/usr/bin/env bash
# Session 27, call A (1 GPU): the GPU tests the bonuses reach (CUDA == CPU bytes with the merges
# where a large cluster takes in a few sequences now guided too), whole GPU suite timed out at 420 s.
set -u
source benchmarks/results/h200-session26/install.sh
(export PYTHONPATH=/tmp/site:$R NUMBA_CACHE_DIR=/tmp/nbcache MSA_SERVER=off
 timeout 420 python3 -m pytest -q -p no:cacheprovider -rf tests/gpu/test_consistency_gpu.py tests/gpu/test_align_identity_gpu.py \
   tests/gpu/test_hybrid_gpu.py tests/gpu/test_refine_gpu.py tests/gpu/test_memory_cap_gpu.py tests/gpu/test_profile_align_gpu.py \
   tests/gpu/test_kernels_shipped_gpu.py tests/gpu/test_split_gpu.py 2>&1 | tail -6)
