#!/usr/bin/env bash
# `msa add` of new sequences to an existing alignment, side by side with aligning
# everything from scratch and with `mafft --add`. The existing alignment is msa's alignment of
# a BaliFam family; the new sequences are one mutated copy of each of its sequences
# (datasets/semisynthetic.py --variants 1 --variants-only). Each result is scored against the
# family's BAliBASE reference (its rows are all in the existing part).
#   benchmarks/add_sequences.sh BALIFAM_DIR ID [THREADS]
# MAFFT (`mafft` on PATH, or MAFFT=path) is skipped when absent; TIMEOUT (default 300) stops it.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
src=$1 id=$2 threads=${3:-$(nproc)}
mafft=${MAFFT:-mafft}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 datasets/semisynthetic.py "$src/in/$id" -o "$work/new.fa" --variants 1 --variants-only --seed 7
python3 -m msa align "$src/in/$id" -o "$work/existing.fa" -q -t "$threads"
cat "$src/in/$id" "$work/new.fa" > "$work/all.fa"
run() {  # label, output, command...
  local label=$1 out=$2; shift 2
  local t0=$(date +%s.%N)
  if timeout "${TIMEOUT:-300}" "$@" > "$work/stdout" 2> "$work/stderr"; then
    local t1=$(date +%s.%N)
    [ "$out" = - ] && out="$work/stdout"
    python3 - "$label" "$t0" "$t1" "$out" "$src/ref/$id" <<'PY'
import sys
from msa.scoring import score_files
label, t0, t1, out, ref = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
s = score_files(out, ref)
print(f"{label:<24} {t1 - t0:8.1f} s   SP {s['sp']:.3f}  TC {s['tc']:.3f}")
PY
  else
    echo "$label failed or timed out: $(tail -1 "$work/stderr")"
  fi
}
echo "$(grep -c '^>' "$src/in/$id") existing rows, $(grep -c '^>' "$work/new.fa") new sequences, $threads threads"
run "msa add" "$work/add.fa" python3 -m msa add "$work/existing.fa" "$work/new.fa" -o "$work/add.fa" -q -t "$threads"
run "msa add --keep-length" "$work/addk.fa" python3 -m msa add "$work/existing.fa" "$work/new.fa" -o "$work/addk.fa" --keep-length -q -t "$threads"
run "msa align (scratch)" "$work/scratch.fa" python3 -m msa align "$work/all.fa" -o "$work/scratch.fa" -q -t "$threads"
if command -v "$mafft" > /dev/null; then
  run "mafft --add" - "$mafft" --add "$work/new.fa" --thread "$threads" --quiet --anysymbol "$work/existing.fa"
fi
