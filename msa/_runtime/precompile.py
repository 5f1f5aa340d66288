"""Compile every Numba function of msa ahead of time, into a folder shipped in the wheel.

``python -m msa._runtime.precompile FOLDER`` (run by the wheel build, ``hatch_build.py``)
runs small synthetic families through every path of the pipeline on the CPU
backend, and through the host-side paths of the GPU backend (a CPU backend
that builds every single-linkage group by Prim, as ``CudaBackend`` does), with
:data:`msa.jit.BUILD_ENV` set, so that each function is compiled, for every
argument type met, into ``FOLDER`` (the wheel's ``msa/_jitcache``) and into no
other cache. What gets compiled depends on argument types, not on the data, so
small families give the entries that any family uses.

Covered: ``msa align`` (every guide tree, distance, linkage and PartTree option,
protein and nucleotides, duplicates collapsed or kept, a Newick tree given,
FASTA written to a file, gzipped and to a pipe, A3M, every other format), ``msa tree``, ``msa merge``, ``msa add`` (with and without
``--keep-length``), many small families in one run (``-O``). tests/unit/test_jitcache.py checks that runs of the
installed ``msa`` compile nothing.

The workloads are shared among ``--jobs`` processes (default: the usable cores,
at most 4; ``MSA_PRECOMPILE_JOBS`` sets it); each function is compiled by one
of them while the others wait for it (see ``msa.jit``).
"""
from __future__ import annotations

import contextlib
import io
import itertools
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

import msa.consistency
from msa.backends.cpu import CpuBackend, align, first_compiled_call, segments
from msa.distances.condensed import condensed_offsets, condensed_rows
from msa.io import FORMATS, read_fasta, write_alignment
from msa.io.formats import read_alignment
from msa.jit import BUILD_ENV
from msa.merge import add_sequences, merge_alignments
from msa.params import AlignParams
from msa.pipeline import align_db, tree_db
from msa.progress import Progress
from msa.run import align_file, align_files
from msa.seqdb import SeqDB
from msa.tree import write_newick

#: Letters of the synthetic families.
PROTEIN = "ACDEFGHIKLMNPQRSTVWY"
DNA = "ACGT"
#: Sizes that make PartTree, Prim past the matrix and the sampled split all run on a small family.
SMALL = {"exact_tree_max": 24, "mst_tree_max": 24, "partsize": 6, "split_sample": 12, "split_cluster_max": 16}
JOBS_ENV = "MSA_PRECOMPILE_JOBS"


def family(seed: int, n: int, length: int, letters: str, duplicates: int = 0) -> list[tuple[str, str]]:
    """``n`` mutated copies (substitutions, short indels) of one random sequence, the first
    ``duplicates`` of them repeated at the end; every 50th is shorter than a 6-mer."""
    rng = random.Random(seed)
    root = [rng.choice(letters) for _ in range(length)]
    seqs = []
    for i in range(n):
        s = [c if rng.random() > 0.25 else rng.choice(letters) for c in root if rng.random() > 0.06]
        at = rng.randrange(len(s) + 1)
        s[at:at] = [rng.choice(letters) for _ in range(rng.randrange(1 + length // 10))]
        seqs.append("".join(s) if i % 50 != 7 else "".join(s[:4]))
    seqs += seqs[:duplicates]
    return [(f"s{i}", s) for i, s in enumerate(seqs)]


@dataclass
class Inputs:
    folder: Path
    protein: str  # FASTA files
    dna: str
    base: Any  # AlignParams
    cpu: Any  # CpuBackend
    gpu_paths: Any  # a CpuBackend on the GPU backend's host-side paths

    def fasta(self, name: str, pairs: list[tuple[str, str]]) -> str:
        path = self.folder / name
        path.write_text("".join(f">{n} d\n{s}\n" for n, s in pairs))
        return str(path)


def inputs(folder: Path) -> Inputs:
    class PrimEveryGroup(CpuBackend):
        """The GPU backend's host-side tree paths: every single-linkage LCS group by Prim."""

        name = "cuda"
        prim_every_group = True

    made = Inputs(folder, "", "", AlignParams(quiet=True, device="cpu"), CpuBackend(), PrimEveryGroup())
    made.protein = made.fasta("protein.fa", family(1, 120, 80, PROTEIN, duplicates=5))
    made.dna = made.fasta("dna.fa", family(2, 60, 150, DNA, duplicates=3))
    return made


def trees(x: Inputs, backend: Any, options: list[dict[str, object]]) -> None:
    """``msa tree`` (and the guide tree of ``msa align``) for each set of options, on protein
    and on nucleotides."""
    protein, dna = read_fasta(x.protein), read_fasta(x.dna)
    for opts in options:
        tree_db(protein, x.base.with_(**opts), backend)
        tree_db(dna, x.base.with_(**opts), backend)


def exact_trees(distance: str) -> list[dict[str, object]]:
    """Exact trees over one distance: from the matrix, past it by Prim, and each linkage by name."""
    out: list[dict[str, object]] = []
    for linkage in ("single", "upgma"):
        base = {"distance": distance, "linkage": linkage}
        out += [base, {**base, "exact_tree_max": 24}, {**base, "guide_tree": linkage}]
    return out


def parttrees(split: str) -> list[dict[str, object]]:
    """PartTree with each exact-subtree distance and linkage; with picks, each split distance and pick tree."""
    out: list[dict[str, object]] = []
    for distance, linkage in itertools.product(("lcs", "kmer", "sw"), ("single", "upgma")):
        base = {**SMALL, "guide_tree": "parttree", "distance": distance, "linkage": linkage}
        if split == "sample":
            out.append(base)
        else:
            out += [{**base, "parttree_split": "picks", "parttree_distance": d, "pick_tree": p}
                    for d, p in itertools.product(("lcs", "kmer"), ("mafft", "single", "link"))]
    return out


def align_cli(x: Inputs) -> None:
    """``msa align`` as the CLI runs it (the bundled example's path first): read, align, write."""
    first_compiled_call()
    for source in (x.protein, x.dna):
        for fmt, name in (("fasta", "out.fa"), ("fasta", "out.fa.gz"), ("a3m", "out.a3m")):
            result = align_file(source, str(x.folder / name), x.base, x.cpu, fmt)
            assert result.status == "done", result.error
        for options in ({}, {"keep_duplicates": True}):
            aligned = align_db(read_fasta(source), x.base.with_(**options), x.cpu)
            for fmt in FORMATS:  # the block writer (pipes, stdout) and every other format's
                with contextlib.suppress(ValueError):  # strict PHYLIP refuses some names
                    write_alignment(io.BytesIO(), aligned, fmt)
    for n in (1, 2, 3):
        align_db(SeqDB.from_pairs(family(3, n, 40, PROTEIN)), x.base, x.cpu)
    # The level loop of the progressive stage (msa.progressive's, which the GPU's host-side
    # levels take; the CPU backend runs the stage in one compiled call), with the calling
    # thread's twins and with the thread pool's builds, which levels larger than these
    # families' take.

    class LevelLoop(CpuBackend):
        align_forest = None

    saved = segments.SERIAL_ROWS, align.SERIAL_CELLS
    try:
        for serial in (saved, (0, 0)):
            segments.SERIAL_ROWS, align.SERIAL_CELLS = serial
            for source in (x.protein, x.dna):
                align_db(read_fasta(source), x.base, LevelLoop())
    finally:
        segments.SERIAL_ROWS, align.SERIAL_CELLS = saved
    # --consistency in both stages, with sides small enough that these families' merges take bonuses.
    min_side = msa.consistency.CONSISTENCY_MIN_SIDE
    try:
        msa.consistency.CONSISTENCY_MIN_SIDE = 4
        two = [(f"{k}{name}", s) for k, seed in (("a", 4), ("b", 5)) for name, s in family(seed, 30, 80, PROTEIN)]
        for backend in (x.cpu, LevelLoop()):
            align_db(SeqDB.from_pairs(two), x.base.with_(consistency="4"), backend)
    finally:
        msa.consistency.CONSISTENCY_MIN_SIDE = min_side


def align_along(x: Inputs) -> None:
    """Alignments along a Newick file's tree and along PartTree's, on both backends' paths."""
    db = read_fasta(x.protein)
    newick = x.folder / "tree.nwk"
    newick.write_text(write_newick(*tree_db(db, x.base, x.cpu)))
    align_db(db, x.base.with_(tree_file=str(newick)), x.cpu)
    for backend in (x.cpu, x.gpu_paths):
        align_db(db, x.base.with_(**SMALL), backend)


def merge_add(x: Inputs) -> None:
    """``msa merge`` of two halves aligned apart; ``msa add`` of one half to the other."""
    for k, pairs in enumerate((family(1, 120, 80, PROTEIN), family(2, 60, 150, DNA))):
        halves = []
        for h, part in enumerate((pairs[: len(pairs) // 2], pairs[len(pairs) // 2 :])):
            source = x.fasta(f"half{k}{h}.fa", part)
            align_file(source, str(x.folder / f"half{k}{h}.aln.fa"), x.base, x.cpu)
            halves.append((read_alignment(str(x.folder / f"half{k}{h}.aln.fa")), read_fasta(source)))
        (a, _), (b, new) = halves
        write_alignment(io.BytesIO(), merge_alignments(a, b, x.base, x.cpu), "fasta")
        for keep_length in (False, True):
            added, _ = add_sequences(a, new, x.base, x.cpu, keep_length=keep_length)
            write_alignment(io.BytesIO(), added, "fasta")


def many_families(x: Inputs) -> None:
    """``msa align IN... -O DIR``: small families aligned together (shared tree calls and
    progressive levels), on both backends' paths."""
    sources = [x.fasta(f"many{k}.fa", family(10 + k, n, 60, PROTEIN)) for k, n in enumerate((1, 2, 30, 45))]
    sources.append(x.fasta("many_dna.fa", family(20, 25, 90, DNA)))
    for k, backend in enumerate((x.cpu, x.gpu_paths)):
        summary = align_files(sources, x.folder / f"many_out{k}", x.base, backend=backend)
        assert not summary.failed, summary.failed


def gpu_host(x: Inputs) -> None:
    """The GPU backend's own calls into the condensed-matrix helpers, and its tree paths."""
    condensed_rows(np.array([0, 3, 7], dtype=np.int64))
    condensed_offsets(np.array([0, 3, 7], dtype=np.int64))
    trees(x, x.gpu_paths, exact_trees("lcs") + parttrees("sample"))


#: In order: with N processes, process i runs workloads i, i + N, ...; the first few each
#: start on different kernels (the bundled example's path, the 6-mer, SW, PartTree's).
WORKLOADS: list[Callable[[Inputs], None]] = [
    align_cli,
    lambda x: trees(x, x.cpu, exact_trees("kmer")),
    lambda x: trees(x, x.cpu, exact_trees("sw")),
    lambda x: trees(x, x.cpu, parttrees("sample")),
    lambda x: trees(x, x.cpu, parttrees("picks")),
    gpu_host,
    lambda x: trees(x, x.cpu, exact_trees("lcs")),
    merge_add,
    align_along,
    many_families,
]


def run_worker(index: int, jobs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, Progress(quiet=True).running():
        x = inputs(Path(tmp))
        for work in WORKLOADS[index::jobs]:
            work(x)


def default_jobs() -> int:
    if os.environ.get(JOBS_ENV):
        return max(1, int(os.environ[JOBS_ENV]))
    try:
        import fcntl  # noqa: F401  (the processes share work through file locks)
    except ImportError:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, 4))


def precompile(folder: Path, jobs: int | None = None) -> int:
    """Compile into ``folder``; the number of entries (function and argument types) written."""
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    jobs = jobs or default_jobs()
    env = {**os.environ, BUILD_ENV: str(folder)}
    procs = [
        subprocess.Popen([sys.executable, "-m", "msa._runtime.precompile", "--worker", f"{i}/{jobs}", str(folder)], env=env)
        for i in range(jobs)
    ]
    failed = [p.args for p in procs if p.wait() != 0]
    for lock in folder.rglob("*.lock"):
        lock.unlink()
    if failed:
        raise RuntimeError(f"precompiling msa's Numba functions failed: {failed}")
    if not any(folder.glob("nrt-*.pkl")):  # msa.jit saves Numba's runtime at a build's first load
        raise RuntimeError(f"precompiling saved no Numba runtime into {folder}")
    return sum(1 for _ in folder.rglob("*.nbc"))


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "--worker":
        index, jobs = map(int, argv[1].split("/"))
        assert os.environ.get("MSA_JITCACHE_BUILD_DIR") == str(Path(argv[2]).resolve())
        run_worker(index, jobs)
        return 0
    if len(argv) != 1:
        print("usage: python -m msa._runtime.precompile FOLDER", file=sys.stderr)
        return 2
    start = time.perf_counter()
    jobs = default_jobs()
    entries = precompile(Path(argv[0]), jobs)
    print(f"msa: compiled {entries} Numba entries into {argv[0]} in {time.perf_counter() - start:.1f} s "
          f"({jobs} processes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
