#!/usr/bin/env bash
# Issue 9's semi-synthetic family, side by side: every sequence of a real BaliFam family plus
# 9 variants (~8% substitutions, 0-2 short indels; datasets/semisynthetic.py), scored
# against the family's BAliBASE reference (the originals are in it, the variants not).
#
#   benchmarks/semisynthetic.sh BALIFAM_DIR ID [TOOLS]
#
# e.g. benchmarks/semisynthetic.sh ../shared/datasets/balifam/balifam10000-dev PF00078.10000
# TOOLS default msa-gpu,famsa-medoid; RESULTS (default bench-out) gets the JSON.
set -eu
cd "$(dirname "${BASH_SOURCE[0]}")/.."
src=$1 id=$2 tools=${3:-msa-gpu,famsa-medoid}
results=${RESULTS:-bench-out}
grown=${id%.*}.$(( $(grep -c '^>' "$src/in/$id") * 10 ))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/in" "$work/ref" "$work/info" "$results"
python3 datasets/semisynthetic.py "$src/in/$id" -o "$work/in/$grown" --seed 1
cp "$src/ref/$id" "$work/ref/$grown"
echo "$grown" > "$work/info/ids.txt"
python3 benchmarks/balifam.py --sets "$work" --threads "$(nproc)" --tools "$tools" \
    --timeout "${TIMEOUT:-300}" --out "$results/semi-$grown.json"
