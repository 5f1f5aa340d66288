#!/usr/bin/env bash
# Session 28, call A (1 GPU): identity-weighted consistency votes. The GPU tests of the
# bonuses (CUDA == CPU bytes), then the default command side by side with FAMSA 2 on both sets
# (one process per family, msa served; per-family JSONs), msa --consistency off per family at
# 10^4, one -O run of each set (outputs' sha256 against the 2-core machine's CPU outputs), and
# the 10^5 grown family (PF00078.10000 x 10). Eight files at most come back: JSONs, one log.
set -u
source benchmarks/results/h200-session26/install.sh
(export PYTHONPATH=/tmp/site:$R NUMBA_CACHE_DIR=/tmp/nbcache MSA_SERVER=off
 timeout 170 python3 -m pytest -q -p no:cacheprovider -rf tests/gpu/test_consistency_gpu.py tests/gpu/test_hybrid_gpu.py \
   tests/gpu/test_align_identity_gpu.py 2>&1 | tail -2)
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
cd /tmp; python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q; sleep 1; cd $R
mkdir -p $OUT/r
LOG=$OUT/r/runs.log
MSA="env -C /tmp PYTHONPATH=/tmp/v:/tmp/site {python} -m msa align {input} -o {output} --threads {threads} --quiet"
timeout 110 python3 benchmarks/balifam.py --sets $R/bench-data/balifam1000 --threads 16 --tools msa,famsa \
    --msa-cmd "$MSA" --out $OUT/r/balifam1000.json 2>>$LOG | tail -3
timeout 190 python3 benchmarks/balifam.py --sets $R/bench-data/balifam10000-dev --threads 16 --tools msa,famsa \
    --msa-cmd "$MSA" --out $OUT/r/balifam10000-dev.json 2>>$LOG | tail -3
timeout 60 python3 benchmarks/balifam.py --sets $R/bench-data/balifam10000-dev --threads 16 --tools msa \
    --msa-cmd "$MSA --consistency off" --out $OUT/r/balifam10000-dev-off.json 2>>$LOG | tail -3
