#!/usr/bin/env bash
# Session 29, call B (1 GPU): what the level loop's extra time with bonuses is made of (split.py:
# off, full, host-only bonuses, scored fills only), in the families whose stage grew most in call A.
set -u
source benchmarks/results/h200-session26/install.sh
mkdir -p $OUT/r
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
cd /tmp; MSA_SERVER=off timeout 300 python3 $R/benchmarks/results/h200-session29/split.py $R/bench-data/balifam10000-dev/in \
  PF00155 PF00009 PF00313 PF13393 PF00078 2>&1 | tee $OUT/r/split.txt
