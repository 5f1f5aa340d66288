#!/usr/bin/env bash
# A semi-synthetic family, side by side: every sequence of a real BaliFam family plus
# 9 variants (~8% substitutions, 0-2 short indels; datasets/semisynthetic.py), scored
# against the family's BAliBASE reference (the originals are in it, the variants not).
#
#   benchmarks/semisynthetic.sh BALIFAM_DIR ID[,ID...] [TOOLS]
#
# e.g. benchmarks/semisynthetic.sh ../shared/datasets/balifam/balifam10000-dev PF00078.10000
#      ORIGINALS=1 benchmarks/semisynthetic.sh ../shared/datasets/balifam/balifam100 \
#          PF00009.100,PF00078.100 msa,famsa,mafft,clustalo,kalign
# TOOLS default msa-gpu,famsa-medoid; RESULTS (default: today's run-set folder, common.results_dir)
# gets the JSON: one table
# and semi-<first>.json for the grown families and, with ORIGINALS=1, one more
# (orig-<first>.json) for the same families as they are, to show what growing them costs.
set -eu
cd "$(dirname "${BASH_SOURCE[0]}")/.."
src=$1 ids=$2 tools=${3:-msa-gpu,famsa-medoid}
results=${RESULTS:-$(python3 benchmarks/common.py)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/grown/in" "$work/grown/ref" "$work/grown/info" "$work/orig/info" "$results"
ln -s "$(realpath "$src/in")" "$work/orig/in"
ln -s "$(realpath "$src/ref")" "$work/orig/ref"
first=
for id in ${ids//,/ }; do
    grown=${id%.*}.$(( $(grep -c '^>' "$src/in/$id") * 10 ))
    first=${first:-$grown}
    python3 datasets/semisynthetic.py "$src/in/$id" -o "$work/grown/in/$grown" --seed 1
    cp "$src/ref/$id" "$work/grown/ref/$grown"
    echo "$grown" >> "$work/grown/info/ids.txt"
    echo "$id" >> "$work/orig/info/ids.txt"
done
run() {
    python3 benchmarks/balifam.py --sets "$1" --threads "$(nproc)" --tools "$tools" \
        --timeout "${TIMEOUT:-300}" --out "$2"
}
run "$work/grown" "$results/semi-$first.json"
if [ "${ORIGINALS:-0}" = 1 ]; then
    run "$work/orig" "$results/orig-$first.json"
fi
