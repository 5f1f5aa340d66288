#!/usr/bin/env bash
# Session 29, call E (1 GPU): the family still past 2x in call D (PF00625.10000, 2.08x on an
# H100 host): the split of its stage's time (split2.py) and a profile of auto and off, warm.
set -u
source benchmarks/results/h200-session26/install.sh
mkdir -p $OUT/r
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
cd /tmp; MSA_SERVER=off timeout 60 python3 $R/benchmarks/results/h200-session29/split2.py $R/bench-data/balifam10000-dev/in \
  PF00625 2>&1 | tee $OUT/r/split.txt
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
