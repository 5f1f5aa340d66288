#!/usr/bin/env bash
# Session 28, call D (1 GPU): after the level loop's bonuses were made in one compiled call a
# level (added on the device) and the library's residue pairs in one compiled pass. The GPU
# tests of the bonuses and the library (CUDA == CPU bytes), balifam10000-dev side by side with
# FAMSA 2 (one process per family, served) and with --consistency off, three more rounds of
# the families nearest 2x, and one -O run of each set (outputs' sha256).
set -u
source benchmarks/results/h200-session26/install.sh
(export PYTHONPATH=/tmp/site:$R NUMBA_CACHE_DIR=/tmp/nbcache MSA_SERVER=off
 timeout 200 python3 -m pytest -q -p no:cacheprovider -rf tests/gpu/test_consistency_gpu.py tests/gpu/test_hybrid_gpu.py \
   tests/gpu/test_align_identity_gpu.py tests/gpu/test_refine_gpu.py 2>&1 | tail -2)
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
cd /tmp; python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q; sleep 1; cd $R
mkdir -p $OUT/r
LOG=$OUT/r/runs.log
MSA="env -C /tmp PYTHONPATH=/tmp/v:/tmp/site {python} -m msa align {input} -o {output} --threads {threads} --quiet"
timeout 170 python3 benchmarks/balifam.py --sets $R/bench-data/balifam10000-dev --threads 16 --tools msa,famsa \
    --msa-cmd "$MSA" --out $OUT/r/balifam10000-dev.json 2>>$LOG | tail -3
timeout 60 python3 benchmarks/balifam.py --sets $R/bench-data/balifam10000-dev --threads 16 --tools msa \
    --msa-cmd "$MSA --consistency off" --out $OUT/r/balifam10000-dev-off.json 2>>$LOG | tail -3
cd /tmp
for round in 1 2 3; do
  for f in PF00009 PF00476 PF02836; do
    for c in auto off; do
      t0=$(date +%s%3N); python3 -m msa align $R/bench-data/balifam10000-dev/in/$f.10000 -o /tmp/o.fa -q --consistency $c; t1=$(date +%s%3N)
      echo "$round $f $c $(( t1 - t0 )) ms" | tee -a $LOG
    done
  done
done
for s in balifam1000 balifam10000-dev; do
  rm -rf /tmp/oo; t0=$(date +%s%3N); python3 -m msa align $R/bench-data/$s/in/* -O /tmp/oo -v 2>>$OUT/r/O.log; t1=$(date +%s%3N)
  echo "$s one -O run: $(( t1 - t0 )) ms" | tee -a $OUT/r/O.log; sha256sum /tmp/oo/* | sed "s|/tmp/oo/||" >> $OUT/r/O.sha256
done
