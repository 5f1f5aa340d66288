#!/usr/bin/env bash
# Session 27, call D (1 GPU): after the bonus tables' fix (only the pairs' cells, made on the
# device; the walks on from where they were, on the thread pool): the GPU tests of the bonuses,
# then the default command side by side with FAMSA 2 (one process per family, msa served), msa
# --consistency off per family at 10^4, and one -O run of each set (outputs' sha256).
set -u
source benchmarks/results/h200-session26/install.sh
(export PYTHONPATH=/tmp/site:$R NUMBA_CACHE_DIR=/tmp/nbcache MSA_SERVER=off
 timeout 200 python3 -m pytest -q -p no:cacheprovider -rf tests/gpu/test_consistency_gpu.py tests/gpu/test_hybrid_gpu.py \
   tests/gpu/test_memory_cap_gpu.py tests/gpu/test_align_identity_gpu.py 2>&1 | tail -2)
source benchmarks/results/h200-session27/sets.sh
