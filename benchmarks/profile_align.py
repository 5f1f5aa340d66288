"""Benchmark of the GPU profile-profile DP (kernels/profile_align.cu): cell updates per second.

Run on a GPU machine::

    python benchmarks/profile_align.py

Three level-batch shapes, each checked against the CPU oracle once, then timed:

* ``seq``: many sequence-sequence merges (the leaves' level), lengths ~300;
* ``profile``: many profile-profile merges (profiles of 16 related sequences);
* ``root``: two long profile-profile merges (widths in the thousands), the
  levels near the root where one block per merge leaves most SMs idle.

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
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "gpu"))

from msa.backends.cpu import CpuBackend  # noqa: E402
from msa.profile import AlignBatch  # noqa: E402
from test_profile_align_gpu import MATRIX, gaps, profile  # noqa: E402


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
        import cupy as cp

        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        self.fn(*args, **kwargs)
        stop.record()
        self.events.append((start, stop))

    def seconds(self) -> float:
        import cupy as cp

        total = 0.0
        for start, stop in self.events:
            stop.synchronize()
            total += cp.cuda.get_elapsed_time(start, stop) / 1000
        self.events.clear()
        return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import cupy as cp

    from msa.backends.cuda import CudaBackend

    gpu, cpu = CudaBackend(), CpuBackend()
    kernels = ("_column_setup", "_dp_fill", "_traceback", "_build_parent")
    timers = {name: Timed(getattr(gpu, name)) for name in kernels}
    for name, timer in timers.items():
        setattr(gpu, name, timer)
    timed = timers["_dp_fill"]
    rng = np.random.default_rng(1)
    cases = {
        "seq": replicated(rng, 8192, 1, 300, 64),
        "profile": replicated(rng, 1024, 16, 300, 16),
        "root": replicated(rng, 2, 16, 3000, 1),
    }
    rows = []
    for name, batch in cases.items():
        w = np.diff(batch.col_offsets)
        cells = float((w[0::2] * w[1::2]).sum())
        t0 = time.perf_counter()
        want = cpu.profile_align(batch)
        cpu_s = time.perf_counter() - t0
        got = gpu.profile_align(batch)  # warm-up (compile) and check
        same = bool(np.array_equal(got.maps, want.maps) and np.array_equal(got.counts, want.counts))
        timed.seconds()
        for timer in timers.values():
            timer.seconds()
        best_e2e, best_k = np.inf, np.inf
        for _ in range(args.repeats):
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            gpu.profile_align(batch)
            e2e = time.perf_counter() - t0
            spent = {name: timer.seconds() for name, timer in timers.items()}
            if e2e < best_e2e:
                best_e2e, best_k, split = e2e, spent["_dp_fill"], spent
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
