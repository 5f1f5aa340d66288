#!/usr/bin/env bash
# Session 29, call D (1 GPU): the final code of the session (walks on one thread, jumps only
# past JUMP_HOPS steps, bonuses added on the device). The GPU tests, one -O run of each set
# (sha256 against session 28's), and issue 32's "each 10^4 family within 2x of msa without":
# every balifam10000-dev family, the default command and --consistency off one after the other,
# three rounds, one process each (served, as balifam.py runs them; session 28's call E).
set -u
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
  for p in $R/bench-data/balifam10000-dev/in/*; do
    for c in auto off; do
      t0=$(date +%s%3N); python3 -m msa align $p -o /tmp/o.fa -q --consistency $c; t1=$(date +%s%3N)
      echo "$round $(basename $p) $c $(( t1 - t0 ))" >> $OUT/r/rounds.txt
    done
  done
  echo "round $round done at $SECONDS s"
done
python3 - $OUT/r/rounds.txt <<'PY'
import collections, statistics, sys
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, f, c, ms = line.split()
    t[f, c].append(int(ms))
fams = sorted({f for f, _ in t})
worst = []
for f in fams:
    a, o = statistics.median(t[f, "auto"]), statistics.median(t[f, "off"])
    single = max(x / y for x, y in zip(t[f, "auto"], t[f, "off"]))
    worst.append(a / o)
    print(f"{f} auto {a:.0f} off {o:.0f} median ratio {a / o:.2f} worst round {single:.2f}")
print(f"sum of medians {sum(statistics.median(t[f, 'auto']) for f in fams) / sum(statistics.median(t[f, 'off']) for f in fams):.2f}, most {max(worst):.2f}")
PY
