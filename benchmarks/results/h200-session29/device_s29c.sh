#!/usr/bin/env bash
# Session 29, call C (1 GPU): after the level loop's bonuses moved to the device (the library
# uploaded once, a level's walked columns scattered there, kernels/segments.cu add_bonuses).
# The GPU tests (the new kernel against the CPU's; bonuses, hybrid, identity, library), one -O
# run of each set (sha256 against session 28's), each 10^4 family's stages (stages.py) and the
# split of the stage's time (split2.py: off / full / scored-only) in the families of call B.
set -u
source benchmarks/results/h200-session26/install.sh
mkdir -p $OUT/r
(export PYTHONPATH=/tmp/site:$R NUMBA_CACHE_DIR=/tmp/nbcache MSA_SERVER=off
 timeout 250 python3 -m pytest -q -p no:cacheprovider -rf tests/gpu/test_segments_gpu.py tests/gpu/test_consistency_gpu.py \
   tests/gpu/test_hybrid_gpu.py tests/gpu/test_align_identity_gpu.py tests/gpu/test_refine_gpu.py 2>&1 | tail -3 | tee $OUT/r/tests.txt)
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
cd /tmp; python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q; sleep 1; cd $R
for s in balifam1000 balifam10000-dev; do
  rm -rf /tmp/oo; t0=$(date +%s%3N); (cd /tmp && python3 -m msa align $R/bench-data/$s/in/* -O /tmp/oo -q); t1=$(date +%s%3N)
  echo "$s one -O run: $(( t1 - t0 )) ms" | tee -a $OUT/r/O.log; sha256sum /tmp/oo/* | sed "s|/tmp/oo/||" >> $OUT/r/O.sha256
done
echo "sha256 equal to session 28's: $(sort benchmarks/results/h200-session28/callD-O.sha256 | comm -12 - <(sort $OUT/r/O.sha256) | wc -l) of $(wc -l < $OUT/r/O.sha256)" | tee -a $OUT/r/O.log
cd /tmp; MSA_SERVER=off timeout 150 python3 $R/benchmarks/results/h200-session29/stages.py $R/bench-data/balifam10000-dev/in \
  PF00155 2>&1 | tee $OUT/r/stages.txt | grep -v "^ " | head -40
MSA_SERVER=off timeout 100 python3 $R/benchmarks/results/h200-session29/split2.py $R/bench-data/balifam10000-dev/in \
  PF00155 PF00009 PF00313 2>&1 | tee $OUT/r/split.txt
