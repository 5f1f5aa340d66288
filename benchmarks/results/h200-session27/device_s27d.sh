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
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
cd /tmp; python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q; sleep 1; cd $R
mkdir -p $OUT/r
MSA="env -C /tmp PYTHONPATH=/tmp/v:/tmp/site {python} -m msa align {input} -o {output} --threads {threads} --quiet"
timeout 100 python3 benchmarks/balifam.py --sets $R/bench-data/balifam1000 --threads 16 --tools msa,famsa \
    --msa-cmd "$MSA" --out $OUT/r/balifam1000.json 2>$OUT/r/balifam1000.log | tail -2
timeout 170 python3 benchmarks/balifam.py --sets $R/bench-data/balifam10000-dev --threads 16 --tools msa,famsa \
    --msa-cmd "$MSA" --out $OUT/r/balifam10000-dev.json 2>$OUT/r/balifam10000-dev.log | tail -2
timeout 60 python3 benchmarks/balifam.py --sets $R/bench-data/balifam10000-dev --threads 16 --tools msa \
    --msa-cmd "$MSA --consistency off" --out $OUT/r/balifam10000-dev-off.json 2>$OUT/r/balifam10000-dev-off.log | tail -1
cd /tmp
for s in balifam1000 balifam10000-dev; do
  rm -rf /tmp/oo; t0=$(date +%s%3N); python3 -m msa align $R/bench-data/$s/in/* -O /tmp/oo -v 2>$OUT/r/$s-O.log; t1=$(date +%s%3N)
  echo "$s one -O run: $(( t1 - t0 )) ms"; sha256sum /tmp/oo/* | sed "s|/tmp/oo/||" > $OUT/r/$s-O.sha256
done
