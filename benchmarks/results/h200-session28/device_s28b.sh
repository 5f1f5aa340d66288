#!/usr/bin/env bash
# Session 28, call B (1 GPU): one -O run of each set (stage times; outputs' sha256 to compare
# with the 2-core machine's CPU outputs) and the 10^5 grown family (PF00078.10000 x 10,
# datasets/semisynthetic.py seed 1) with the default command.
set -u
source benchmarks/results/h200-session26/install.sh
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
mkdir -p $OUT/r
cd /tmp; python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q; sleep 1
for s in balifam1000 balifam10000-dev; do
  rm -rf /tmp/oo; t0=$(date +%s%3N); python3 -m msa align $R/bench-data/$s/in/* -O /tmp/oo -v 2>>$OUT/r/O.log; t1=$(date +%s%3N)
  echo "$s one -O run: $(( t1 - t0 )) ms" | tee -a $OUT/r/O.log; sha256sum /tmp/oo/* | sed "s|/tmp/oo/||" >> $OUT/r/O.sha256
done
cd $R
G=/tmp/grown; mkdir -p $G/in $G/ref $G/info
python3 datasets/semisynthetic.py bench-data/balifam10000-dev/in/PF00078.10000 -o $G/in/PF00078.100060 --seed 1
cp bench-data/balifam10000-dev/ref/PF00078.10000 $G/ref/PF00078.100060; echo PF00078.100060 > $G/info/ids.txt
MSA="env -C /tmp PYTHONPATH=/tmp/v:/tmp/site {python} -m msa align {input} -o {output} --threads {threads} --quiet"
for i in 1 2; do
  timeout 100 python3 benchmarks/balifam.py --sets $G --threads 16 --tools msa --msa-cmd "$MSA" --timeout 90 \
      --out $OUT/r/semi-PF00078.100060-$i.json 2>>$OUT/r/O.log | tail -2
done
