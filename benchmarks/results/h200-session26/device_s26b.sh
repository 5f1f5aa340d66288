#!/usr/bin/env bash
# Session 26, call B (1 GPU): the local GPU cluster with several workers on one GPU (--gpus 1,
# --workers W), against one process, 72 families (balifam10000-dev x 4); tests/gpu/test_dask_gpu.py.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-build-isolation --no-deps --no-index --target /tmp/v . 2>&1 | tail -3
python3 -m compileall -q /tmp/v/msa >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
R=$PWD
mkdir -p $R/../shared/datasets && ln -sfn $R/bench-data $R/../shared/datasets/balifam
(export PYTHONPATH=/tmp/site:$R NUMBA_CACHE_DIR=/tmp/nbcache MSA_SERVER=off; timeout 200 python3 -m pytest -q -p no:cacheprovider -rf tests/gpu/test_dask_gpu.py 2>&1 | tail -4)
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
mkdir -p /tmp/in
for f in $R/bench-data/balifam10000-dev/in/*; do for k in 0 1 2 3; do cp $f /tmp/in/$(basename $f).c$k; done; done
cd /tmp; python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q
mkdir -p /tmp/wu && cp $R/bench-data/balifam1000/in/PF00018.1000 /tmp/wu/
python3 -m msa align /tmp/wu -O /tmp/wuo -q --gpus 1
rm -rf /tmp/one; s=$(date +%s%3N); python3 -m msa align /tmp/in -O /tmp/one -q; e=$(date +%s%3N)
echo "one process -O: $(( e - s )) ms"
for flags in "--gpus 1" "--gpus 1 --workers 4" "--gpus 1 --workers 6"; do
  rm -rf /tmp/multi
  s=$(date +%s%3N); MSA_DASK_TIMELINE=/tmp/tl.json python3 -m msa align /tmp/in -O /tmp/multi -q $flags; e=$(date +%s%3N)
  echo "$flags: $(( e - s )) ms"
  diff -rq /tmp/one /tmp/multi >/dev/null && echo "  outputs byte-identical" || echo "  outputs DIFFER"
  python3 - <<PY
import json,collections
t=json.load(open('/tmp/tl.json'));s0=t['start']
by=collections.defaultdict(list)
for x in t['tasks']: by[x['worker']].append(x)
print('  ready %.1f s, %d workers' % (t['ready']-s0, len(by)))
for w,xs in sorted(by.items()):
  st=collections.Counter()
  for x in xs: st.update(x.get('stages',{}))
  busy=sum(x['end']-x['start'] for x in xs)
  print('  ',w[-6:],len(xs),'threads',xs[-1].get('threads'),'busy %.1f'%busy,{k:round(v,1) for k,v in st.items()},'end %.1f'%(max(x['end'] for x in xs)-s0))
PY
done
