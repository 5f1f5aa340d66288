#!/usr/bin/env bash
# Session 28, call F (1 GPU): where the default's extra time goes in the shortest family of
# 10^4 (PF00037.10000, 2.01x its --consistency off run in call E): a profile of each in one
# warm process, after the changes of call D.
set -u
source benchmarks/results/h200-session26/install.sh
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
cd /tmp
for c in auto off; do
MSA_SERVER=off C=$c R=$R python3 -c "
import cProfile, pstats, os, time
from msa import align_files
f=os.environ['R']+'/bench-data/balifam10000-dev/in/PF00037.10000'
align_files([f], '/tmp/w1', quiet=True, consistency=os.environ['C'])
t=time.perf_counter(); align_files([f], '/tmp/w3', quiet=True, consistency=os.environ['C']); print('warm run', os.environ['C'], round(time.perf_counter()-t, 3))
cProfile.run('align_files([f], \'/tmp/w2\', quiet=True, consistency=os.environ[\'C\'])', '/tmp/p.prof')
pstats.Stats('/tmp/p.prof').sort_stats('tottime').print_stats(18)
" 2>&1 | grep -E "^ +[0-9]|tottime|function calls|warm run" | head -22
done
