#!/usr/bin/env bash
# Session 30, call E (1 GPU, the session's last device time): one process per family, msa's
# default command (served) and FAMSA 2 (pyfamsa, 16 threads) one after the other on every
# balifam10000-dev family, a line each as it ends (the call may stop before the end).
set -u
rm -rf /tmp/v
source benchmarks/results/h200-session26/install.sh
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
mkdir -p $OUT/r
cd /tmp; python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q
for p in $R/bench-data/balifam10000-dev/in/*; do
  t0=$(date +%s%3N); python3 -m msa align $p -o /tmp/m.fa -q; t1=$(date +%s%3N)
  python3 $R/benchmarks/famsa_align.py $p /tmp/f.fa --threads 16; t2=$(date +%s%3N)
  echo "$(basename $p) msa $(( t1 - t0 )) famsa $(( t2 - t1 ))" | tee -a $OUT/r/per-family.txt
done
