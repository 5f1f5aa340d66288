"""Benchmark of the GPU guide-tree stage: 6-mer struct arrays, member x reference distances, PartTree.

Run on a GPU machine::

    python benchmarks/kmer_distance.py --members 151443 --refs 2281 --tree 1000000

Reports (one line each, also as JSON with --json):

* the CUDA-Parttree thesis anchor: ``members`` sequences (mean length 115)
  against ``refs`` references, end to end (host codes in, assignments out) and
  in the kernel alone; pairs/s and 6-mer lookups/s (one lookup = one member
  run against one reference), and the fraction of the shared-memory limit
  (each 32-bit shared load serves 4 references; 32 loads per SM per clock),
  and the member-stream rate (bytes/s read from L2, one byte per lookup);
* a full PartTree guide tree of ``tree`` simulated sequences;
* peak host (max RSS) and device (CuPy pool) memory.

Sequences come from a two-level random family (subfamily ancestors mutated
from one root, members mutated from those), generated with NumPy in seconds;
only the shapes matter for timing.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from msa.alphabet import encode  # noqa: E402
from msa.backends.cuda import CudaBackend  # noqa: E402
from msa.params import AlignParams  # noqa: E402
from msa.seqdb import SeqDB  # noqa: E402
from msa.tree.build import build_guide_tree  # noqa: E402

AMINO = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)


def family(n: int, mean_len: int, seed: int, n_sub: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Letters and offsets of ``n`` sequences from ``n_sub`` subfamilies of one root."""
    rng = np.random.default_rng(seed)
    max_len = 2 * mean_len
    root = AMINO[rng.integers(0, 20, max_len)]
    sub = np.tile(root, (n_sub, 1))
    flip = rng.random(sub.shape) < 0.35
    sub[flip] = AMINO[rng.integers(0, 20, int(flip.sum()))]
    lens = np.clip(rng.normal(mean_len, 0.25 * mean_len, n), 10, max_len).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(lens)))
    seq = np.repeat(np.arange(n), lens)
    pos = np.arange(offsets[-1]) - offsets[seq]
    res = sub[rng.integers(0, n_sub, n)[seq], pos]
    flip = rng.random(len(res)) < 0.15
    res[flip] = AMINO[rng.integers(0, 20, int(flip.sum()))]
    return res, offsets


class PeakPool:
    """CuPy's default pool with a high-water mark of the bytes in use."""

    def __init__(self) -> None:
        self.pool = cp.get_default_memory_pool()
        self.peak = 0
        cp.cuda.set_allocator(self.malloc)

    def malloc(self, size: int):
        mem = self.pool.malloc(size)
        self.peak = max(self.peak, self.pool.used_bytes())
        return mem


class StageTimer:
    """Wall time spent inside some backend methods (patched on the instance)."""

    def __init__(self, backend, names: tuple[str, ...]) -> None:
        self.seconds = dict.fromkeys(names, 0.0)
        for name in names:
            setattr(backend, name, self._wrap(name, getattr(backend, name)))

    def _wrap(self, name: str, method):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            out = method(*args, **kwargs)
            cp.cuda.Device().synchronize()
            self.seconds[name] += time.perf_counter() - t0
            return out

        return timed


class KernelTimer:
    """Wraps a RawKernel: CUDA events around every launch, summed."""

    def __init__(self, kernel) -> None:
        self.kernel, self.events = kernel, []

    def __call__(self, *args, **kwargs):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        self.kernel(*args, **kwargs)
        stop.record()
        self.events.append((start, stop))

    def seconds(self) -> float:
        total = 0.0
        for start, stop in self.events:
            stop.synchronize()
            total += cp.cuda.get_elapsed_time(start, stop) / 1000
        self.events.clear()
        return total


def shared_lookup_limit() -> float:
    """6-mer lookups/s if every SM did 32 shared 32-bit loads per clock (4 references each)."""
    attrs = cp.cuda.Device().attributes
    return 4 * 32 * attrs["MultiProcessorCount"] * attrs["ClockRate"] * 1e3


def distance_stage(backend: CudaBackend, n: int, n_refs: int, timer: KernelTimer) -> dict:
    """The thesis anchor: every sequence against ``n_refs`` references of one node."""
    res, off = family(n, 115, seed=1)
    codes = encode(res)
    rng = np.random.default_rng(2)
    refs = np.sort(rng.choice(n, n_refs, replace=False))
    members = np.arange(n, dtype=np.int64)
    node = np.zeros(n, dtype=np.int64)
    out = {}
    for rep in range(3):  # first repeat compiles and warms the pool
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        tables = backend.kmer_tables(codes, off)
        cp.cuda.Device().synchronize()
        t1 = time.perf_counter()
        best, _ = backend.nearest_reference(tables, refs, np.array([0, n_refs]), members, node)
        t2 = time.perf_counter()
        kernel = timer.seconds()
        lookups = float(tables.n_distinct.sum()) * n_refs
        out = {
            "members": n, "refs": n_refs, "mean_length": float(np.diff(off).mean()),
            "tables_s": t1 - t0, "nearest_s": t2 - t1, "end_to_end_s": t2 - t0, "kernel_s": kernel,
            "pairs_per_s": n * n_refs / kernel, "lookups_per_s": lookups / kernel,
            "fraction_of_shared_limit": lookups / kernel / shared_lookup_limit(),
            "member_stream_bytes_per_s": lookups / kernel,  # one 4-byte member word per 4 lookups
            "groups_used": int(len(np.unique(best))),
        }
    return out


def guide_tree(backend: CudaBackend, n: int, timer: KernelTimer) -> dict:
    """A full PartTree guide tree (defaults: partsize 50, exact_tree_max 4096)."""
    warm_res, warm_off = family(20000, 115, seed=3)
    params = AlignParams(guide_tree="parttree")
    build_guide_tree(SeqDB.from_arrays(["w"] * 20000, ["w"] * 20000, warm_res, warm_off), params, backend)
    res, off = family(n, 115, seed=4)
    names = [f"s{i}" for i in range(n)]
    db = SeqDB.from_arrays(names, names, res, off)
    timer.seconds()
    stages = StageTimer(backend, ("kmer_tables", "nearest_reference", "kmer_distance_matrix"))
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    tree = build_guide_tree(db, params, backend)
    t1 = time.perf_counter()
    out = {"sequences": n, "tree_s": t1 - t0, "nearest_kernel_s": timer.seconds(), "leaves": int(tree.n_leaves)}
    out.update({f"{k}_s": v for k, v in stages.seconds.items()})
    out["host_rest_s"] = out["tree_s"] - sum(stages.seconds.values())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=151443)
    ap.add_argument("--refs", type=int, default=2281)
    ap.add_argument("--tree", type=int, default=1_000_000, help="sequences of the guide-tree run (0: skip)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    peak = PeakPool()
    backend = CudaBackend()
    timer = KernelTimer(backend._nearest)
    backend._nearest = timer
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    results = {"device": dev, "distance": distance_stage(backend, args.members, args.refs, timer)}
    print(json.dumps(results["distance"]), flush=True)
    if args.tree:
        results["tree"] = guide_tree(backend, args.tree, timer)
        print(json.dumps(results["tree"]), flush=True)
    results["peak_device_bytes"] = peak.peak
    results["peak_host_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    d = results["distance"]
    print(f"{dev}: {d['members']} x {d['refs']}: end to end {d['end_to_end_s']:.3f} s "
          f"(tables {d['tables_s']:.3f} s, kernel {d['kernel_s']:.4f} s); "
          f"{d['pairs_per_s']:.3g} pairs/s, {d['lookups_per_s']:.3g} lookups/s "
          f"= {100 * d['fraction_of_shared_limit']:.1f}% of the shared-memory limit")
    if args.tree:
        print(f"guide tree of {args.tree} sequences: {results['tree']['tree_s']:.2f} s")
    print(f"peak device {results['peak_device_bytes'] / 2**30:.2f} GiB, "
          f"peak host {results['peak_host_bytes'] / 2**30:.2f} GiB")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
