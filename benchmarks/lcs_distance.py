"""Benchmark of the LCS (FAMSA indel075_div_lcs) distance matrix: CPU (Numba, every core) against the GPU.

Run on a GPU machine::

    python benchmarks/lcs_distance.py --group 4096 --length 300
    python benchmarks/lcs_distance.py --prim --group 100000 --check-max 20000

With ``--prim`` the measured operation is the exact single-linkage tree's
Prim MST without a matrix (the same n(n-1)/2 pairs), checked against the CPU's
edges where the group is at most ``--check-max`` sequences.

One exact-tree group of ``group`` sequences (mean length ``length``): pairs/s
and cell updates/s (one cell = one residue of the column sequence against one
64-bit word of the row's bit vector) end to end on each backend, the GPU
result checked bit for bit against the CPU's. The GPU is timed after one
warm-up call (kernel compilation).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from msa.alphabet import encode  # noqa: E402
from msa.backends.cpu import CpuBackend  # noqa: E402
from msa.backends.cuda import CudaBackend  # noqa: E402
from common import write_manifest  # noqa: E402

AMINO = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)


def family(n: int, mean_len: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Codes and offsets of ``n`` mutated copies of 20 ancestors, lengths normal around ``mean_len``."""
    rng = np.random.default_rng(seed)
    max_len = 2 * mean_len
    anc = AMINO[rng.integers(0, 20, (20, max_len))]
    lens = np.clip(rng.normal(mean_len, 0.2 * mean_len, n), 10, max_len).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(lens)))
    seq = np.repeat(np.arange(n), lens)
    res = anc[rng.integers(0, 20, n)[seq], np.arange(offsets[-1]) - offsets[seq]]
    flip = rng.random(len(res)) < 0.3
    res[flip] = AMINO[rng.integers(0, 20, int(flip.sum()))]
    return encode(res), offsets


def timed(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", type=int, default=4096)
    ap.add_argument("--length", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--prim", action="store_true", help="time Prim's MST instead of the matrix")
    ap.add_argument("--prim-threads", type=int, help="threads per block of the Prim kernel (default: msa's)")
    ap.add_argument("--groups", type=int, default=1, help="split the family into this many equal groups")
    ap.add_argument("--check-max", type=int, default=20000, help="largest group checked against the CPU")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    codes, offsets = family(args.group, args.length, 1)
    ids = np.arange(args.group, dtype=np.int64)
    group_off = np.linspace(0, args.group, args.groups + 1).astype(np.int64)
    lens = np.diff(offsets)
    words = np.maximum(-(-lens // 64), 1)
    cells = 0.0  # rows a < columns b of each group
    for lo, hi in zip(group_off[:-1], group_off[1:]):
        g_lens = lens[lo:hi]
        cells += float(words[lo:hi].astype(np.float64) @ (np.cumsum(g_lens[::-1])[::-1] - g_lens))
    sizes = np.diff(group_off)
    pairs = float((sizes * (sizes - 1) // 2).sum())
    if args.prim_threads:
        from msa.backends.cuda import lcs as cuda_lcs

        cuda_lcs.PRIM_THREADS = args.prim_threads
    cpu, gpu = CpuBackend(), CudaBackend()
    if args.prim:
        run_cpu = lambda: cpu.lcs_prim_msts(codes, offsets, ids, group_off)  # noqa: E731
        run_gpu = lambda: gpu.lcs_prim_msts(codes, offsets, ids, group_off)  # noqa: E731
        cpu.lcs_prim_msts(codes, offsets, ids[:8], np.array([0, 8]))  # JIT warm-up
        gpu.lcs_prim_msts(codes, offsets, ids[:8], np.array([0, 8]))
    else:
        run_cpu = lambda: cpu.lcs_distance_matrix(codes, offsets, ids, group_off)  # noqa: E731
        run_gpu = lambda: gpu.lcs_distance_matrix(codes, offsets, ids, group_off)  # noqa: E731
        cpu.lcs_distance_matrix(codes, offsets, ids[:8], np.array([0, 8]))  # JIT warm-up
        gpu.lcs_distance_matrix(codes, offsets, ids[:8], np.array([0, 8]))
    t_gpu, got = timed(run_gpu, args.repeat)
    t_cpu, want = timed(run_cpu, 1) if args.group <= args.check_max else (float("nan"), None)
    identical = None if want is None else all(
        np.array_equal(np.asarray(g).view(np.uint64), np.asarray(w).view(np.uint64)) for g, w in zip(got, want)
    )
    report = {"operation": "prim_mst" if args.prim else "matrix",
        "group": args.group, "mean_length": float(lens.mean()), "pairs": pairs, "cells": cells,
        "cpu_threads": numba.get_num_threads(), "cpu_s": t_cpu, "gpu_s": t_gpu,
        "cpu_pairs_per_s": pairs / t_cpu, "gpu_pairs_per_s": pairs / t_gpu,
        "gpu_gcups": cells / t_gpu / 1e9, "speedup": t_cpu / t_gpu,
        "identical": identical,
    }
    print(json.dumps(report, indent=1))
    if args.json:
        write_manifest(args.json.parent)
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
