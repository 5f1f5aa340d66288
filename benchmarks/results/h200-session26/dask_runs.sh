#!/usr/bin/env bash
# Session 26, calls B, C and D: balifam10000-dev x COPIES in one process (-O) against each set of
# Dask flags, outputs compared, each run's timeline printed (msa.run.dask.timeline_lines).
#   call B (1 H200): dask_runs.sh 4 1 "--gpus 1" "--gpus 1 --workers 4" "--gpus 1 --workers 6"
#                    (with RUN_TESTS=1: tests/gpu/test_dask_gpu.py first)
#   call C (4 H200): dask_runs.sh 8 4 "--gpus 4" "--gpus 4 --workers 4"
#   call D (2 H200): dask_runs.sh 8 2 "--gpus 2" "--gpus 2 --workers 2"
COPIES=$1 GPUS=$2; shift 2
source benchmarks/results/h200-session26/install.sh
if [ "${RUN_TESTS:-0}" = 1 ]; then
  (export PYTHONPATH=/tmp/site:$R NUMBA_CACHE_DIR=/tmp/nbcache MSA_SERVER=off
   timeout 200 python3 -m pytest -q -p no:cacheprovider -rf tests/gpu/test_dask_gpu.py 2>&1 | tail -4)
fi
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
mkdir -p /tmp/in
for f in $R/bench-data/balifam10000-dev/in/*; do
  for k in $(seq 0 $((COPIES - 1))); do cp $f /tmp/in/$(basename $f).c$k; done
done
cd /tmp; python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q
mkdir -p /tmp/wu && cp $R/bench-data/balifam1000/in/PF00018.1000 /tmp/wu/
python3 -m msa align /tmp/wu -O /tmp/wuo -q --gpus $GPUS  # untimed: fills the workers' caches
rm -rf /tmp/one; s=$(date +%s%3N); python3 -m msa align /tmp/in -O /tmp/one -q; e=$(date +%s%3N)
echo "one process -O: $(( e - s )) ms"
for flags in "$@"; do
  rm -rf /tmp/multi
  s=$(date +%s%3N); MSA_DASK_TIMELINE=/tmp/tl.json python3 -m msa align /tmp/in -O /tmp/multi -q $flags; e=$(date +%s%3N)
  echo "$flags: $(( e - s )) ms"
  diff -rq /tmp/one /tmp/multi >/dev/null && echo "  outputs byte-identical" || echo "  outputs DIFFER"
  cp /tmp/tl.json $OUT/timeline-$(echo $flags | tr -d ' -').json
  python3 -c "import json; from msa.run.dask import timeline_lines; print(*timeline_lines(json.load(open('/tmp/tl.json'))), sep='\n')"
done
