"""Prim's MST on the CPU, in-process and warm, by team size: for short 10^4 families, does a
smaller team (fewer threads to wake each step) build the tree faster than all of a host's?

    python benchmarks/prim_threads.py FAMILY.fa [...]

Prints per family its distinct sequences, mean length and seconds per team size (16 down to 1;
the first 16 includes loading the compiled function), and checks every team's edges are equal.
"""
import sys
import time

import numba
import numpy as np

import msa.pipeline  # noqa: F401  (the pipeline's import order)
from msa.io.fasta import read_fasta
from msa.params import AlignParams
from msa.pipeline import prepare_family
from msa.backends.cpu import lcs

for path in sys.argv[1:]:
    fam = prepare_family(read_fasta(path), AlignParams(device="cpu", quiet=True), note=False)
    u = fam.unique
    codes, offsets = u.codes, np.asarray(u.offsets, dtype=np.int64)
    ids = np.arange(len(u), dtype=np.int64)
    line = [path.rsplit("/", 1)[-1], f"n={len(u)}", f"L={np.diff(offsets).mean():.0f}"]
    want = None
    for rnd in range(2):
        for t in (16, 8, 4, 2, 1):
            numba.set_num_threads(t)
            s = time.perf_counter()
            got = lcs.lcs_prim_mst(codes, offsets, ids, t)
            dt = time.perf_counter() - s
            want = got if want is None else want
            assert all(np.array_equal(a, b) for a, b in zip(got, want))
            if rnd == 1 or t == 16:
                line.append(f"t{t}:{dt:.3f}")
    print(" ".join(line), flush=True)
