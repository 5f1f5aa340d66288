"""Benchmark of the GPU profile-profile DP (kernels/merge_dp.cu): cell updates per second.

Run on a GPU machine::

    python benchmarks/profile_align.py

Level-batch shapes, each checked against the CPU oracle once, then timed:

* ``seq``: many sequence-sequence merges (the leaves' level), lengths ~300;
* ``profile``: many profile-profile merges (profiles of 16 related sequences);
* ``root``: two long profile-profile merges (widths in the thousands, ``--root-width``), the
  levels near the root: dp_pipe (the chunks of a merge on concurrent blocks), or with
  ``--one-block`` dp_fill (one block per merge, most SMs idle);
* ``dense``: one merge of dense profiles (20-letter alphabet, ~14 residue types per column),
  64 sequences x ~3100 columns against 32 x ~340 (P1, ~10 types per column): the one merge
  of a level near the root of a large family, where dp_pipe's step was the substitution sum
  over P1's residues before cell_scores (~2.2 us a step on an H200 at 100k sequences);
* ``unequal``: one merge of dense profiles 64 x ~10,000 against 32 x ~350, the shape of the
  one-merge levels near the root of a 10^5-sequence family (a caterpillar over a wide profile);
* ``single``: one sequence (~300) against a profile of 16 (~1000 columns), the one
  merge of each of the thousands of levels of a caterpillar (single-linkage) subtree:
  single-merge latency;
* ``tiny``: one merge of two 8-residue sequences: the fixed cost of a level.

``MSA`` on ``PYTHONPATH`` decides which msa is measured (the script appends the
checkout last), so the same script times an older copy of the package too.

GCUPS = DP cells (sum of W1 * W2) / seconds, for ``profile_align`` end to end
(upload, setup, fill, traceback, parent build, download) and for the fill
kernel alone (CUDA events around each launch; every kernel's time is printed too). Direction bits and
the traceback are always on.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))  # after PYTHONPATH: another copy of msa may be measured

from msa.backends.cpu import CpuBackend  # noqa: E402
from msa.profile import AlignBatch  # noqa: E402
from msa.testing import MATRIX, dense_profile, gaps, profile  # noqa: E402


def replicated(rng, n_merges: int, n_seqs: int, length: int, distinct: int) -> AlignBatch:
    """A batch of ``n_merges`` merges drawn from ``distinct`` freshly built profile pairs."""
    pool = [(profile(rng, n_seqs, length), profile(rng, n_seqs, length)) for _ in range(distinct)]
    tables = [t for k in range(n_merges) for t in pool[k % distinct]]
    off = np.concatenate(([0], np.cumsum([len(t) for t in tables])))
    n = np.full(2 * n_merges, n_seqs, dtype=np.int64)
    return AlignBatch(np.concatenate(tables), off, n, MATRIX, gaps(int(n.sum())))


class Timed:
    """Wraps a RawKernel: CUDA events around every launch, summed on demand."""

    def __init__(self, fn) -> None:
        self.fn, self.events = fn, []

    def __call__(self, *args, **kwargs):
        self.wrap(self.fn)(*args, **kwargs)

    def wrap(self, fn):
        """``fn`` with its launches added to this timer."""

        def timed(*args, **kwargs):
            import cupy as cp

            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            fn(*args, **kwargs)
            stop.record()
            self.events.append((start, stop))

        return timed

    def seconds(self) -> float:
        import cupy as cp

        total = 0.0
        for start, stop in self.events:
            stop.synchronize()
            total += cp.cuda.get_elapsed_time(start, stop) / 1000
        self.events.clear()
        return total


def single(rng, length: int, n_seqs: int, width: int) -> AlignBatch:
    """One merge: a sequence against a profile of ``n_seqs`` (a caterpillar level)."""
    seq = profile(rng, 1, length)
    prof = profile(rng, n_seqs, width)
    off = np.array([0, len(seq), len(seq) + len(prof)])
    n = np.array([1, n_seqs], dtype=np.int64)
    return AlignBatch(np.concatenate((seq, prof)), off, n, MATRIX, gaps(int(n.sum())))


def dense(rng) -> AlignBatch:
    """One merge of a wide dense profile and a narrow, sparser one (which plays P1). 32
    sequences, not 16: fewer leave too few residue types per column of P1 to mimic the root."""
    wide = dense_profile(rng, 64, 3000, 0.4)
    narrow = dense_profile(rng, 32, 300, 0.5)
    off = np.array([0, len(wide), len(wide) + len(narrow)])
    n = np.array([64, 32], dtype=np.int64)
    return AlignBatch(np.concatenate((wide, narrow)), off, n, MATRIX, gaps(int(n.sum())))


def unequal(rng) -> AlignBatch:
    """One merge of a wide dense profile with a narrow one (see the module docstring)."""
    wide = dense_profile(rng, 64, 10000, 0.4)
    narrow = dense_profile(rng, 32, 350, 0.5)
    off = np.array([0, len(wide), len(wide) + len(narrow)])
    n = np.array([64, 32], dtype=np.int64)
    return AlignBatch(np.concatenate((wide, narrow)), off, n, MATRIX, gaps(int(n.sum())))


def _wrap_kernels(gpu) -> dict[str, Timed]:
    """Time every profile_align kernel the backend has (the fills, one dict, as one)."""
    timers = {}
    for name in ("_column_setup", "_merge_info", "_cell_scores", "_fills", "_traceback", "_build_parent"):
        fn = getattr(gpu, name, None)
        if fn is None:
            continue
        timer = Timed(fn)
        if isinstance(fn, dict):
            timer = Timed(None)
            setattr(gpu, name, {k: timer.wrap(f) for k, f in fn.items()})
        else:
            setattr(gpu, name, timer)
        timers[name] = timer
    return timers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cases", default="seq,profile,root,dense,unequal,single,tiny", help="comma-separated cases to run")
    ap.add_argument("--root-width", type=int, default=3000, help="sequence length of the root case's profiles")
    ap.add_argument("--one-block", action="store_true", help="dp_fill for few-merge batches (no dp_pipe)")
    ap.add_argument("--pipe-threads", type=int, default=None, help="dp_pipe block size (columns per chunk)")
    ap.add_argument("--wavefront", action="store_true", help="dp_pipe for few-merge batches, not dp_scan")
    ap.add_argument("--scan", default=None, help="dp_scan THREADS,K (columns per chunk: their product)")
    args = ap.parse_args()
    import cupy as cp

    from msa.backends.cuda import CudaBackend
    from msa.backends.cuda import align as cuda_align

    if args.one_block:
        cuda_align.DP_PIPELINE = False
    if args.pipe_threads:
        cuda_align.DP_PIPE_THREADS = args.pipe_threads
    if args.wavefront:
        cuda_align.DP_SCAN = False
    if args.scan:
        cuda_align.SCAN_THREADS, cuda_align.SCAN_K = (int(v) for v in args.scan.split(","))

    gpu, cpu = CudaBackend(), CpuBackend()
    timers = _wrap_kernels(gpu)
    timed = timers["_fills"]
    rng = np.random.default_rng(1)
    cases = {
        "seq": replicated(rng, 8192, 1, 300, 64),
        "profile": replicated(rng, 1024, 16, 300, 16),
        "root": replicated(rng, 2, 16, args.root_width, 1),
        "single": single(rng, 300, 16, 1000),
        "tiny": replicated(rng, 1, 1, 8, 1),
        "dense": dense(rng),  # last but one: the other cases keep their data
        "unequal": unequal(rng),
    }
    rows = []
    for name in args.cases.split(","):
        batch = cases[name]
        w = np.diff(batch.col_offsets)
        cells = float((w[0::2] * w[1::2]).sum())
        t0 = time.perf_counter()
        want = cpu.profile_align(batch)
        cpu_s = time.perf_counter() - t0
        got = gpu.profile_align(batch)  # warm-up (compile) and check
        host = getattr(gpu, "to_host", np.asarray)
        same = bool(np.array_equal(host(got.maps), want.maps) and np.array_equal(host(got.counts), want.counts))
        timed.seconds()
        for timer in timers.values():
            timer.seconds()
        best_e2e, best_k = np.inf, np.inf
        for _ in range(args.repeats):
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            gpu.profile_align(batch)
            cp.cuda.Device().synchronize()
            e2e = time.perf_counter() - t0
            spent = {name: timer.seconds() for name, timer in timers.items()}
            if e2e < best_e2e:
                best_e2e, best_k, split = e2e, spent["_fills"], spent
        row = {
            "case": name, "merges": batch.n_merges, "cells": cells, "equal_to_cpu": same,
            "cpu_s": cpu_s, "gpu_s": best_e2e, "fill_s": best_k,
            "gcups_e2e": cells / best_e2e / 1e9, "gcups_fill": cells / best_k / 1e9,
            "gcups_cpu": cells / cpu_s / 1e9, "kernels_s": split,
        }
        rows.append(row)
        print(f"{name:8s} merges={row['merges']:5d} cells={cells:.3e} equal={same} "
              f"cpu={cpu_s:.3f}s gpu={best_e2e:.4f}s fill={best_k:.4f}s "
              f"GCUPS e2e={row['gcups_e2e']:.2f} fill={row['gcups_fill']:.2f} cpu={row['gcups_cpu']:.3f}",
              flush=True)
        print("         kernel seconds: " + " ".join(f"{k[1:]}={v:.4f}" for k, v in split.items()), flush=True)
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
