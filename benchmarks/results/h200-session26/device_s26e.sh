#!/usr/bin/env bash
# Session 26, call E (1 GPU): GPU tests the session's changes reach; balifam10000-dev in one -O
# run before (3c7cbcf) and after the linear pair library, each twice, with the library's stage.
source benchmarks/results/h200-session26/install.sh
python3 -m pip install -q --no-build-isolation --no-deps --no-index --target /tmp/vold bench-data/old_src 2>&1 | tail -3
python3 -m compileall -q /tmp/vold/msa >/dev/null
(export PYTHONPATH=/tmp/site:$R NUMBA_CACHE_DIR=/tmp/nbcache MSA_SERVER=off; timeout 300 python3 -m pytest -q -p no:cacheprovider -rf tests/gpu/test_dask_gpu.py tests/gpu/test_consistency_gpu.py tests/gpu/test_refine_gpu.py tests/gpu/test_align_identity_gpu.py 2>&1 | tail -4)
cd /tmp
for v in vold v vold v; do
  export PYTHONPATH=/tmp/$v:/tmp/site PYTHONUNBUFFERED=1
  python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q
  rm -rf /tmp/oo_$v; s=$(date +%s%3N); python3 -m msa align $R/bench-data/balifam10000-dev/in/* -O /tmp/oo_$v -v 2>/tmp/log_$v; e=$(date +%s%3N)
  echo "$v: balifam10000-dev one -O run $(( e - s )) ms; library $(python3 -c "import re;print(round(sum(float(x) for x in re.findall(r'consistency library \(([0-9.]+) s\)', open('/tmp/log_$v').read())),2))") s"
done
diff -rq /tmp/oo_v /tmp/oo_vold && echo "outputs byte-identical"
