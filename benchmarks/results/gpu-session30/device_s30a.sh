#!/usr/bin/env bash
# Session 30, call A or B (1 GPU): the level loop's samples walked on the device (walk_columns), no
# maps to the host between levels. The GPU tests, one -O run of each set (sha256 against
# session 28's), and issue 32's "each 10^4 family within 2x of msa without": every
# balifam10000-dev family, the default command and --consistency off one after the other, three
# rounds, one process each (served), as session 29's call D; then PF00625.10000's profiles auto / off, warm.
set -u
rm -rf /tmp/v  # a warm machine keeps the last call's install, which pip --target would not replace
source benchmarks/results/h200-session26/install.sh
mkdir -p $OUT/r
(export PYTHONPATH=/tmp/site:$R NUMBA_CACHE_DIR=/tmp/nbcache MSA_SERVER=off
 timeout 200 python3 -m pytest -q -p no:cacheprovider -rf tests/gpu/test_segments_gpu.py tests/gpu/test_consistency_gpu.py \
   tests/gpu/test_hybrid_gpu.py tests/gpu/test_align_identity_gpu.py tests/gpu/test_refine_gpu.py 2>&1 | tail -3 | tee $OUT/r/tests.txt)
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
cd /tmp; python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q; sleep 1; cd $R
for s in balifam1000 balifam10000-dev; do
  rm -rf /tmp/oo; t0=$(date +%s%3N); (cd /tmp && python3 -m msa align $R/bench-data/$s/in/* -O /tmp/oo -q); t1=$(date +%s%3N)
  echo "$s one -O run: $(( t1 - t0 )) ms" | tee -a $OUT/r/O.log; sha256sum /tmp/oo/* | sed "s|/tmp/oo/||" >> $OUT/r/O.sha256
done
echo "sha256 equal to session 28's: $(sort benchmarks/results/h200-session28/callD-O.sha256 | comm -12 - <(sort $OUT/r/O.sha256) | wc -l) of $(wc -l < $OUT/r/O.sha256)" | tee -a $OUT/r/O.log
cd /tmp
for round in 1 2 3; do
  [ $SECONDS -gt 480 ] && break
  for p in $R/bench-data/balifam10000-dev/in/*; do
    for c in auto off; do
      t0=$(date +%s%3N); python3 -m msa align $p -o /tmp/o.fa -q --consistency $c; t1=$(date +%s%3N)
      echo "$round $(basename $p) $c $(( t1 - t0 ))" >> $OUT/r/rounds.txt
    done
  done
  echo "round $round done at $SECONDS s"
done
python3 $R/benchmarks/results/gpu-session30/ratios.py $OUT/r/rounds.txt | tee $OUT/r/ratios.txt
[ $SECONDS -gt 540 ] && exit 0
for c in auto off; do
MSA_SERVER=off C=$c R=$R timeout 40 python3 -c "
import cProfile, pstats, os
from msa import align_files
f=os.environ['R']+'/bench-data/balifam10000-dev/in/PF00625.10000'
align_files([f], '/tmp/w1', quiet=True, consistency=os.environ['C'])
cProfile.run('align_files([f], \'/tmp/w2\', quiet=True, consistency=os.environ[\'C\'])', '/tmp/p.prof')
pstats.Stats('/tmp/p.prof').sort_stats('tottime').print_stats(16)
" 2>&1 | grep -E "^ +[0-9]|function calls" | tee -a $OUT/r/profile-$c.txt
done
