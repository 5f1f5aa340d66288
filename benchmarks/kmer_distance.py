"""Benchmark of the GPU guide-tree stage: 6-mer struct arrays, member x reference distances, PartTree.

Run on a GPU machine (with ``mafft`` on the PATH for the MAFFT column)::

    python benchmarks/kmer_distance.py --members 151443 --refs 2281 --tree 1000000 --compare 200000

Reports (one line each, also as JSON with --json):

* PartTree's member-reference step: ``members`` sequences (mean length 115)
  against ``refs`` references, end to end (host codes in, assignments out) and
  in the kernel alone; pairs/s and 6-mer lookups/s (one lookup = one member
  run against one reference), and the fraction of the shared-memory limit
  (each 32-bit shared load serves 4 references; 32 loads per SM per clock),
  and the member-stream rate (bytes/s read from L2, one byte per lookup);
* a full PartTree guide tree of ``tree`` simulated sequences;
* side by side on the same inputs: the CPU backend (Numba, every core of the
  machine) on that step (on a stated fraction of the members, extrapolated
  linearly, when the whole would take more than ``--cpu-seconds``) and on a
  guide tree of ``compare`` sequences, and ``mafft --parttree --retree 0
  --treeout`` (tree only, as a subprocess on a FASTA file) at ``--mafft-sizes``;
  one table of seconds and ratios;
* peak host (max RSS; MAFFT's own as the largest child's) and device (CuPy pool) memory.

Sequences come from a two-level random family (subfamily ancestors mutated
from one root, members mutated from those), generated with NumPy in seconds;
only the shapes matter for timing.
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cupy as cp
import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from msa.alphabet import encode  # noqa: E402
from msa.backends.cpu import CpuBackend  # noqa: E402
from msa.backends.cuda import CudaBackend  # noqa: E402
from msa.distances.kmers import PROTEIN  # noqa: E402
from msa.params import AlignParams  # noqa: E402
from msa.seqdb import SeqDB  # noqa: E402
from msa.tree.build import build_guide_tree  # noqa: E402
from common import write_manifest  # noqa: E402

AMINO = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)


def family(n: int, mean_len: int, seed: int, n_sub: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Letters and offsets of ``n`` sequences from ``n_sub`` subfamilies of one root.

    Lengths are at least 10: MAFFT refuses sequences shorter than 6 residues.
    """
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


def step_inputs(n: int, n_refs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes, offsets and sorted reference ids of the member-reference step (one node, every sequence a member)."""
    res, off = family(n, 115, seed=1)
    refs = np.sort(np.random.default_rng(2).choice(n, n_refs, replace=False))
    return encode(res), off, refs


def distance_stage(backend: CudaBackend, n: int, n_refs: int, timer: KernelTimer) -> tuple[dict, np.ndarray]:
    """The member-reference step: every sequence against ``n_refs`` references of one node (and its assignments)."""
    codes, off, refs = step_inputs(n, n_refs)
    members = np.arange(n, dtype=np.int64)
    node = np.zeros(n, dtype=np.int64)
    out: dict = {}
    best = np.zeros(0, dtype=np.int32)
    for rep in range(3):  # first repeat compiles and warms the pool
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        tables = backend.kmer_tables(codes, off, PROTEIN)
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
    return out, best


def cpu_distance_stage(n: int, n_refs: int, gpu_best: np.ndarray, budget_s: float) -> dict:
    """The member-reference step on the CPU backend: all members if they fit ``budget_s``, else an even fraction, extrapolated.

    A probe of 1% of the members sizes the run; the assignments of the members
    run are checked equal to the GPU's.
    """
    cpu = CpuBackend()
    codes, off, refs = step_inputs(n, n_refs)
    ref_off = np.array([0, n_refs])
    warm = cpu.kmer_tables(codes[: off[200]], off[:201], PROTEIN)  # compiles the Numba kernels (fresh cache)
    cpu.nearest_reference(warm, np.arange(10), np.array([0, 10]), np.arange(200), np.zeros(200, np.int64))
    t0 = time.perf_counter()
    tables = cpu.kmer_tables(codes, off, PROTEIN)
    tables_s = time.perf_counter() - t0

    def nearest(step: int) -> tuple[float, np.ndarray, np.ndarray]:
        members = np.arange(0, n, step, dtype=np.int64)
        t = time.perf_counter()
        best, _ = cpu.nearest_reference(tables, refs, ref_off, members, np.zeros(len(members), np.int64))
        return time.perf_counter() - t, members, best

    probe_s, probe_members, _ = nearest(100)
    estimate = probe_s * n / len(probe_members)
    step = max(1, int(np.ceil(estimate / budget_s)))
    run_s, members, best = nearest(step)
    nearest_s = run_s * n / len(members)
    return {
        "threads": numba.get_num_threads(), "members_run": int(len(members)), "fraction_run": len(members) / n,
        "tables_s": tables_s, "nearest_measured_s": run_s, "nearest_s": nearest_s,
        "end_to_end_s": tables_s + nearest_s, "pairs_per_s": n * n_refs / nearest_s,
        "equal_to_gpu": bool(np.array_equal(best, gpu_best[members])),
    }


def tree_db(n: int, seed: int = 4) -> SeqDB:
    """``n`` simulated sequences named s0, s1, ..."""
    res, off = family(n, 115, seed=seed)
    names = [f"s{i}" for i in range(n)]
    return SeqDB.from_arrays(names, names, res, off)


def guide_tree(backend: CudaBackend, db: SeqDB, params: AlignParams, timer: KernelTimer) -> tuple[dict, np.ndarray]:
    """A full PartTree guide tree (defaults: partsize 50, exact_tree_max 4096) and its merge order.

    With ``distance="lcs"`` (the default) the exact groups' LCS matrices run on
    the CPU even in the CUDA backend (no LCS kernel yet): lcs_distance_matrix_s.
    """
    n = len(db)
    timer.seconds()
    stages = StageTimer(
        backend, ("kmer_tables", "nearest_reference", "kmer_distance_matrix", "lcs_distance_matrix")
    )
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    tree = build_guide_tree(db, params, backend)
    t1 = time.perf_counter()
    for name in stages.seconds:
        delattr(backend, name)  # the instance patches go; the class methods show through again
    out = {"sequences": n, "tree_s": t1 - t0, "nearest_kernel_s": timer.seconds(), "leaves": int(tree.n_leaves)}
    out.update({f"{k}_s": v for k, v in stages.seconds.items()})
    out["host_rest_s"] = out["tree_s"] - sum(stages.seconds.values())
    return out, tree.children


def cpu_guide_tree(db: SeqDB, params: AlignParams, gpu_children: np.ndarray) -> dict:
    """The same guide tree on the CPU backend (after a small tree compiles the Numba kernels)."""
    cpu = CpuBackend()
    build_guide_tree(tree_db(3000, seed=3), params, cpu)
    t0 = time.perf_counter()
    tree = build_guide_tree(db, params, cpu)
    return {"threads": numba.get_num_threads(), "tree_s": time.perf_counter() - t0,
            "equal_to_gpu": bool(np.array_equal(tree.children, gpu_children))}


def write_fasta(path: Path, residues: np.ndarray, offsets: np.ndarray) -> None:
    """Unaligned FASTA (``>s<i>``, one line a sequence), assembled as one byte array."""
    n = len(offsets) - 1
    heads = [f">s{i}\n".encode() for i in range(n)]
    head_len = np.fromiter(map(len, heads), dtype=np.int64, count=n)
    body = np.insert(np.asarray(residues, dtype=np.uint8), offsets[1:], np.uint8(ord("\n")))
    body_len = np.diff(offsets) + 1
    starts = np.concatenate(([0], np.cumsum(head_len + body_len)[:-1]))
    is_head = np.zeros(len(body) + int(head_len.sum()) + 1, dtype=np.int8)
    is_head[starts] = 1
    is_head[starts + head_len] -= 1
    head_mask = np.cumsum(is_head[:-1], dtype=np.int8).astype(bool)
    out = np.empty(len(head_mask), dtype=np.uint8)
    out[head_mask] = np.frombuffer(b"".join(heads), dtype=np.uint8)
    out[~head_mask] = body
    path.write_bytes(out.tobytes())


def mafft_tree(db: SeqDB, threads: int, timeout_s: float) -> dict:
    """``mafft --parttree --retree 0 --treeout --thread N`` on ``db`` (guide tree only), timed as a subprocess."""
    with tempfile.TemporaryDirectory() as tmp:
        fasta = Path(tmp) / "in.fa"
        write_fasta(fasta, db.residues, db.offsets)
        cmd = ["mafft", "--parttree", "--retree", "0", "--treeout", "--thread", str(threads), str(fasta)]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"threads": threads, "tree_s": None, "error": f"timed out after {timeout_s:.0f} s"}
        seconds = time.perf_counter() - t0
        tree = Path(f"{fasta}.tree")
        if proc.returncode or not tree.is_file():
            return {"threads": threads, "tree_s": None, "error": proc.stderr.decode(errors="replace")[-500:]}
        return {"threads": threads, "tree_s": seconds, "tree_bytes": tree.stat().st_size,
                "peak_child_host_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.1f}x" if a and b else "-"


def seconds(s: float | None, note: str = "") -> str:
    return f"{s:.3f}{note}" if s is not None else "-"


def table(results: dict) -> str:
    """One markdown table: GPU, CPU and MAFFT seconds on the same inputs, and their ratios to the GPU."""
    cpu_threads = results.get("cpu_threads", "?")
    lines = [f"| run | GPU s | CPU s ({cpu_threads} threads) | MAFFT s ({cpu_threads} threads) "
             "| CPU / GPU | MAFFT / GPU |", "| --- | --- | --- | --- | --- | --- |"]
    d, c = results["distance"], results.get("cpu_distance")
    if c:
        note = "" if c["fraction_run"] == 1 else f" (extrapolated from {100 * c['fraction_run']:.1f}% of members)"
        lines.append(f"| member-reference step {d['members']:,} x {d['refs']:,}, tables + nearest | {d['end_to_end_s']:.3f} | "
                     f"{seconds(c['end_to_end_s'], note)} | - | {ratio(c['end_to_end_s'], d['end_to_end_s'])} | - |")
    for row in results["trees"]:
        g, cpu, maf = row["gpu"], row.get("cpu"), row.get("mafft")
        cpu_s, maf_s = cpu and cpu["tree_s"], maf and maf["tree_s"]
        lines.append(f"| guide tree {g['sequences']:,} ({results['distance_of_exact_groups']} exact groups) "
                     f"| {g['tree_s']:.3f} | {seconds(cpu_s)} | {seconds(maf_s)} "
                     f"| {ratio(cpu_s, g['tree_s'])} | {ratio(maf_s, g['tree_s'])} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=151443)
    ap.add_argument("--refs", type=int, default=2281)
    ap.add_argument("--tree", type=int, default=1_000_000, help="sequences of the GPU guide-tree run (0: skip)")
    ap.add_argument("--compare", type=int, default=200_000,
                    help="sequences of the GPU + CPU + MAFFT guide-tree run (0: skip the CPU)")
    ap.add_argument("--cpu-seconds", type=float, default=60.0, help="most CPU time for the member-reference step on the CPU")
    ap.add_argument("--mafft-sizes", default="200000,1000000", help="tree sizes MAFFT runs on ('' : none)")
    ap.add_argument("--mafft-timeout", type=float, default=240.0)
    ap.add_argument("--distance", choices=("lcs", "kmer"), default="lcs", help="distance of the exact groups")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    peak = PeakPool()
    backend = CudaBackend()
    timer = KernelTimer(backend._nearest)
    backend._nearest = timer
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    threads = numba.get_num_threads()
    print(f"device {dev}; CPU backend: numba.get_num_threads() = {threads}", flush=True)
    distance, gpu_best = distance_stage(backend, args.members, args.refs, timer)
    results: dict = {"device": dev, "cpu_threads": threads, "distance": distance, "trees": []}
    print(json.dumps(distance), flush=True)
    if args.compare:
        results["cpu_distance"] = cpu_distance_stage(args.members, args.refs, gpu_best, args.cpu_seconds)
        print(json.dumps(results["cpu_distance"]), flush=True)
    mafft_sizes = {int(x) for x in args.mafft_sizes.split(",") if x}
    if mafft_sizes and shutil.which("mafft") is None:
        print("mafft not on the PATH: no MAFFT column", flush=True)
        mafft_sizes = set()
    params = AlignParams(guide_tree="parttree", distance=args.distance)
    results["distance_of_exact_groups"] = args.distance
    build_guide_tree(tree_db(20000, seed=3), params, backend)  # JIT and pool warm-up
    for n in sorted({args.compare, args.tree} - {0}):
        db = tree_db(n)
        gpu, children = guide_tree(backend, db, params, timer)
        row: dict = {"gpu": gpu}
        if n == args.compare:
            row["cpu"] = cpu_guide_tree(db, params, children)
        if n in mafft_sizes:
            row["mafft"] = mafft_tree(db, threads, args.mafft_timeout)
        results["trees"].append(row)
        print(json.dumps(row), flush=True)
    results["peak_device_bytes"] = peak.peak
    results["peak_host_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    d = results["distance"]
    print(f"{dev}: {d['members']} x {d['refs']}: end to end {d['end_to_end_s']:.3f} s "
          f"(tables {d['tables_s']:.3f} s, kernel {d['kernel_s']:.4f} s); "
          f"{d['pairs_per_s']:.3g} pairs/s, {d['lookups_per_s']:.3g} lookups/s "
          f"= {100 * d['fraction_of_shared_limit']:.1f}% of the shared-memory limit")
    for row in results["trees"]:
        print(f"guide tree of {row['gpu']['sequences']} sequences: GPU {row['gpu']['tree_s']:.2f} s")
    print(f"peak device {results['peak_device_bytes'] / 2**30:.2f} GiB, "
          f"peak host {results['peak_host_bytes'] / 2**30:.2f} GiB (this process, CPU backend runs included)")
    print(table(results))
    if args.json:
        write_manifest(args.json.parent)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
