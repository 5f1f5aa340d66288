#!/usr/bin/env bash
# Session 28, call E (1 GPU): issue 32's "each family within 2x of msa without" at 10^4, by
# medians: every balifam10000-dev family, the default command and --consistency off one
# after the other, three rounds, one process each (served, as balifam.py runs them).
set -u
source benchmarks/results/h200-session26/install.sh
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
cd /tmp; python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q; sleep 1
for round in 1 2 3; do
  for p in $R/bench-data/balifam10000-dev/in/*; do
    for c in auto off; do
      t0=$(date +%s%3N); python3 -m msa align $p -o /tmp/o.fa -q --consistency $c; t1=$(date +%s%3N)
      echo "$round $(basename $p) $c $(( t1 - t0 ))"
    done
  done
done
