# Sourced by this session's device scripts, from the repository root: msa from its wheel into
# /tmp/v, the carried wheels (.whl) into /tmp/site, bench-data as the shared BaliFam sets.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-build-isolation --no-deps --no-index --target /tmp/v . 2>&1 | tail -3
python3 -m compileall -q /tmp/v/msa >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
R=$PWD
mkdir -p $R/../shared/datasets && ln -sfn $R/bench-data $R/../shared/datasets/balifam
