#!/usr/bin/env bash
# A dataset's families over N GPUs through Dask against the same run on one GPU.
# The 18 balifam10000-dev families plus 4 simulated 10^5 families (made once under $WORK);
# prints both wall times, their ratio, and checks that every output is byte-identical.
#   benchmarks/dask_scaleout.sh ../shared/datasets/balifam/balifam10000-dev/in [GPUS=2]
# Needs msa[dask] (and dask-cuda for --gpus; without it a scheduler and one `dask worker` per
# GPU, pinned by CUDA_VISIBLE_DEVICES, are started here and the run goes to them by --scheduler).
set -euo pipefail
in_dir=${1:?usage: $0 BALIFAM10000_DEV_IN [GPUS]}
gpus=${2:-2}
device=${DEVICE:-cuda}  # DEVICE=cpu SIM_N=50: a smoke test of this script without GPUs
sim_n=${SIM_N:-100000}
work=${WORK:-$(mktemp -d)}
export PYTHONPATH="$(cd "$(dirname "$0")/.." && pwd)${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$work/in"
cp "$in_dir"/* "$work/in/"
for seed in 1 2 3 4; do
  f="$work/in/sim$seed.$sim_n.fa"
  [ -s "$f" ] || python3 datasets/simulate.py -n "$sim_n" --length 300 --seed "$seed" --out "$f"
done
rm -rf "$work/one" "$work/multi"
now() { date +%s.%N; }
# Untimed, as benchmarks/common.py's warm_up: the first run on a machine fills the kernel caches
# that both timed runs then load.
python3 datasets/simulate.py -n 6000 --length 120 --seed 0 --out "$work/warm.fa"
python3 -m msa align "$work/warm.fa" -o /dev/null --device "$device" -q

t0=$(now)
python3 -m msa align "$work/in" -O "$work/one" --device "$device" -q
t1=$(now)
echo "1 GPU: $(python3 -c "print(f'{$t1 - $t0:.1f}')") s" >&2
if python3 -c "import dask_cuda" 2>/dev/null; then
  how="--gpus $gpus (a local cluster, several workers a GPU, its start included)"
  t2=$(now)
  python3 -m msa align "$work/in" -O "$work/multi" --device "$device" --gpus "$gpus" -q
  t3=$(now)
else
  how="--scheduler (dask scheduler + $gpus dask workers, one per GPU, started before the timing)"
  pids=()
  dask scheduler --scheduler-file "$work/scheduler.json" --no-dashboard >"$work/scheduler.log" 2>&1 &
  pids+=($!)
  for ((g = 0; g < gpus; g++)); do
    CUDA_VISIBLE_DEVICES=$g dask worker --scheduler-file "$work/scheduler.json" --nthreads 1 --no-dashboard \
      >"$work/worker$g.log" 2>&1 &
    pids+=($!)
  done
  trap 'kill "${pids[@]}" 2>/dev/null || true; wait' EXIT
  address=$(python3 -c "
import sys, time, json, os
f = sys.argv[1]
while not os.path.exists(f): time.sleep(0.2)
from distributed import Client
with Client(scheduler_file=f) as c: c.wait_for_workers(int(sys.argv[2]), timeout=120); print(c.scheduler.address)
" "$work/scheduler.json" "$gpus")
  t2=$(now)
  python3 -m msa align "$work/in" -O "$work/multi" --device "$device" --scheduler "$address" -q
  t3=$(now)
fi
diff -r "$work/one" "$work/multi" >/dev/null && same="byte-identical" || same="DIFFERENT"
python3 - "$t0" "$t1" "$t2" "$t3" "$gpus" "$how" "$same" "$(ls "$work/in" | wc -l)" <<'PY'
import sys
t0, t1, t2, t3 = map(float, sys.argv[1:5])
one, multi = t1 - t0, t3 - t2
print(f"{sys.argv[8]} families: 1 GPU {one:.1f} s; {sys.argv[5]} GPUs via {sys.argv[6]} {multi:.1f} s "
      f"({multi / one:.2f}x); outputs {sys.argv[7]}")
PY
