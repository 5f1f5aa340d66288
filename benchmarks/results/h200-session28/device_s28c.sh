#!/usr/bin/env bash
# Session 28, call C (1 GPU): the families of 10^4 nearest 2x their --consistency off time in
# call A, three rounds of each (one process each, served, as balifam.py runs them), and a
# profile of PF00009.10000 in one warm process with and without consistency.
set -u
source benchmarks/results/h200-session26/install.sh
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
cd /tmp; python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q; sleep 1
for round in 1 2 3; do
  for f in PF00009 PF00476 PF00084 PF02836 PF05746; do
    for c in auto off; do
      t0=$(date +%s%3N); python3 -m msa align $R/bench-data/balifam10000-dev/in/$f.10000 -o /tmp/o.fa -q --consistency $c; t1=$(date +%s%3N)
      echo "$round $f $c $(( t1 - t0 )) ms"
    done
  done
done
for c in auto off; do
MSA_SERVER=off C=$c R=$R python3 -c "
import cProfile, pstats, os
from msa import align_files
f=os.environ['R']+'/bench-data/balifam10000-dev/in/PF00009.10000'
align_files([f], '/tmp/w1', quiet=True, consistency=os.environ['C'])
cProfile.run('align_files([f], \'/tmp/w2\', quiet=True, consistency=os.environ[\'C\'])', '/tmp/p.prof')
pstats.Stats('/tmp/p.prof').sort_stats('tottime').print_stats(22)
" 2>&1 | grep -E "^ +[0-9]|tottime|function calls" | head -26
done
