# Sourced by calls B and D (after install.sh): the default command side by side with FAMSA 2
# (one process per family, msa served), msa --consistency off per family at 10^4, then one -O
# run of each set with its stages and its outputs' sha256. (Call D ran it with timeouts of
# 100, 170 and 60 s.)
export PYTHONPATH=/tmp/v:/tmp/site PYTHONUNBUFFERED=1
cd /tmp; python3 -m msa align $R/datasets/examples/example.fa -o /tmp/ex0.fa -q; sleep 1; cd $R
mkdir -p $OUT/r
MSA="env -C /tmp PYTHONPATH=/tmp/v:/tmp/site {python} -m msa align {input} -o {output} --threads {threads} --quiet"
timeout 110 python3 benchmarks/balifam.py --sets $R/bench-data/balifam1000 --threads 16 --tools msa,famsa \
    --msa-cmd "$MSA" --out $OUT/r/balifam1000.json 2>$OUT/r/balifam1000.log | tail -3
timeout 200 python3 benchmarks/balifam.py --sets $R/bench-data/balifam10000-dev --threads 16 --tools msa,famsa \
    --msa-cmd "$MSA" --out $OUT/r/balifam10000-dev.json 2>$OUT/r/balifam10000-dev.log | tail -3
timeout 70 python3 benchmarks/balifam.py --sets $R/bench-data/balifam10000-dev --threads 16 --tools msa \
    --msa-cmd "$MSA --consistency off" --out $OUT/r/balifam10000-dev-off.json 2>$OUT/r/balifam10000-dev-off.log | tail -3
cd /tmp
for s in balifam1000 balifam10000-dev; do
  rm -rf /tmp/oo; t0=$(date +%s%3N); python3 -m msa align $R/bench-data/$s/in/* -O /tmp/oo -v 2>$OUT/r/$s-O.log; t1=$(date +%s%3N)
  echo "$s one -O run: $(( t1 - t0 )) ms"; sha256sum /tmp/oo/* | sed "s|/tmp/oo/||" > $OUT/r/$s-O.sha256
done
