#!/usr/bin/env bash
# Session 26, call A (1 GPU): is one worker's GPU idle enough that 2-4 Dask workers on the same GPU
# finish a dataset sooner than one process? 72 families (balifam10000-dev x 4), default command.
source benchmarks/results/h200-session26/install.sh
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
mkdir -p /tmp/in
for f in $R/bench-data/balifam10000-dev/in/*; do for k in 0 1 2 3; do cp $f /tmp/in/$(basename $f).c$k; done; done
ls /tmp/in | wc -l
cd /tmp; python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q
mkdir -p /tmp/wu && cp $R/bench-data/balifam1000/in/PF00018.1000 /tmp/wu/
rm -rf /tmp/one; s=$(date +%s%3N); python3 -m msa align /tmp/in -O /tmp/one -v 2>/tmp/one.log; e=$(date +%s%3N)
echo "one process -O: $(( e - s )) ms"; python3 -c "
import re,collections;c=collections.Counter()
for l in open('/tmp/one.log'):
  m=re.match(r'msa: ([a-z ]+) \(([0-9.]+) s\)',l)
  if m: c[m.group(1)]+=float(m.group(2))
print({k:round(v,1) for k,v in c.items()})"; tail -1 /tmp/one.log
for n in 2 3; do
  s=$(date +%s%3N)
  rm -f /tmp/sched.json
  python3 -m distributed.cli.dask_scheduler --scheduler-file /tmp/sched.json --no-dashboard >/tmp/sched.log 2>&1 &
  sp=$!
  pids=""
  for w in $(seq $n); do CUDA_VISIBLE_DEVICES=0 python3 -m distributed.cli.dask_worker --scheduler-file /tmp/sched.json --nthreads 1 --no-dashboard >/tmp/w$w.log 2>&1 & pids="$pids $!"; done
  while [ ! -f /tmp/sched.json ]; do sleep 0.1; done
  addr=$(python3 -c "import json;print(json.load(open('/tmp/sched.json'))['address'])")
  python3 - <<PY
from distributed import Client
c=Client("$addr"); c.wait_for_workers($n, timeout=120); c.close()
PY
  rm -rf /tmp/multi
  (cd /tmp && MSA_DASK_TIMELINE=/tmp/tl$n.json python3 -m msa align /tmp/wu -O /tmp/wuo -q --scheduler $addr)
  s2=$(date +%s%3N)
  MSA_DASK_TIMELINE=/tmp/tl$n.json python3 -m msa align /tmp/in -O /tmp/multi -q --scheduler $addr
  e=$(date +%s%3N)
  echo "$n workers on one GPU: $(( e - s2 )) ms (cluster start and a warm-up run before: $(( s2 - s )) ms)"
  diff -rq /tmp/one /tmp/multi >/dev/null && echo "outputs byte-identical" || echo "outputs DIFFER"
  python3 - <<PY
import json,collections
t=json.load(open('/tmp/tl$n.json'));s0=t['start']
by=collections.defaultdict(list)
for x in t['tasks']: by[x['worker']].append(x)
for w,xs in by.items():
  st=collections.Counter()
  for x in xs: st.update(x.get('stages',{}))
  busy=sum(x['end']-x['start'] for x in xs)
  print(w,len(xs),'threads',xs[-1].get('threads'),'busy %.1f'%busy,{k:round(v,1) for k,v in st.items()},'end %.1f'%(max(x['end'] for x in xs)-s0))
PY
  kill $pids $sp; wait 2>/dev/null
done
