#!/usr/bin/env bash
# Session 27, call C (1 GPU): where the GPU run's time goes with the new guided merges: per family
# stages before (HEAD~2) and after, and a profile of the level loop of one family.
set -u
source benchmarks/results/h200-session26/install.sh
python3 -m pip install -q --no-build-isolation --no-deps --no-index --target /tmp/vold bench-data/old_src 2>&1 | tail -3
python3 -m compileall -q /tmp/vold/msa >/dev/null
cd /tmp
for v in vold v; do
  export PYTHONPATH=/tmp/$v:/tmp/site MSA_SERVER=off
  python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q
  for f in PF00009 PF00155 PF03129 PF00313 PF13393; do
    /usr/bin/time -f "%e s" python3 -m msa align $R/bench-data/balifam10000-dev/in/$f.10000 -o /tmp/o.fa -v 2>&1 | grep -E "consistency library|aligning profiles| s$" | tr '\n' ' '; echo " $v $f"
  done
done
export PYTHONPATH=/tmp/v:/tmp/site MSA_SERVER=off
R=$R python3 -c "
import cProfile, pstats, os
from msa import align_files
f=os.environ['R']+'/bench-data/balifam10000-dev/in/PF00155.10000'
align_files([f], '/tmp/w1', quiet=True)
cProfile.run('align_files([f], \'/tmp/w2\', quiet=True)', '/tmp/p.prof')
pstats.Stats('/tmp/p.prof').sort_stats('tottime').print_stats(25)
" 2>&1 | grep -E "^ +[0-9]|tottime" | head -30
