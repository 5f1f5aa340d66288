#!/usr/bin/env bash
# Session 30, call D (1 GPU): after the CPU DP's change (dp_seqseq, H as a running maximum;
# the CPU is every GPU test's oracle), the GPU tests that compare the device with it.
set -u
rm -rf /tmp/v
source benchmarks/results/h200-session26/install.sh
mkdir -p $OUT/r
export PYTHONPATH=/tmp/site:$R NUMBA_CACHE_DIR=/tmp/nbcache MSA_SERVER=off
timeout 480 python3 -m pytest -q -p no:cacheprovider -rf tests/gpu/test_profile_align_gpu.py tests/gpu/test_align_identity_gpu.py \
  tests/gpu/test_consistency_gpu.py tests/gpu/test_hybrid_gpu.py tests/gpu/test_refine_gpu.py tests/gpu/test_segments_gpu.py tests/gpu/test_add_merge_gpu.py \
  2>&1 | tail -4 | tee $OUT/r/tests.txt
