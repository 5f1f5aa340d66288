#!/usr/bin/env bash
# Session 30, call C (1 GPU): the 10^5 grown family (PF00078.10000 x 10, datasets/semisynthetic.py
# seed 1; session 28's call B) with the default command and the session's final code, twice,
# scored against its reference (issue 32: >= 0.878 / 0.757 within 15 s).
set -u
rm -rf /tmp/v  # a warm machine keeps the last call's install, which pip --target would not replace
source benchmarks/results/h200-session26/install.sh
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
mkdir -p $OUT/r
cd /tmp; python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q; sleep 1; cd $R
G=/tmp/grown; mkdir -p $G/in $G/ref $G/info
python3 datasets/semisynthetic.py bench-data/balifam10000-dev/in/PF00078.10000 -o $G/in/PF00078.100060 --seed 1
cp bench-data/balifam10000-dev/ref/PF00078.10000 $G/ref/PF00078.100060; echo PF00078.100060 > $G/info/ids.txt
MSA="env -C /tmp PYTHONPATH=/tmp/v:/tmp/site {python} -m msa align {input} -o {output} --threads {threads} --quiet"
for i in 1 2; do
  timeout 100 python3 benchmarks/balifam.py --sets $G --threads 16 --tools msa --msa-cmd "$MSA" --timeout 90 \
      --out $OUT/r/semi-PF00078.100060-$i.json 2>>$OUT/r/log.txt | tail -2
done
