"""Runs with one output (``-o`` or stdout): one family aligned, or its guide tree.

``msa align IN [-o OUT] [--tree-out T]`` is a run of one family through the
steps of :mod:`msa.run.local` (read, prepare, align, write), with what a
short run needs besides: the backend starts on background threads while the
input is read (:class:`msa._runtime.startup.BackendStart`; under ``--device
auto`` the CPU where a cost model predicts it finishes first), the outputs are open before the
alignment (an unwritable target or too little space fails early), and an
error is the run's, raised as it is (the CLI prints it as one line). Every
path is checked first (:func:`msa.run.plan.check_paths`).
"""
from __future__ import annotations

import contextlib
import functools
import os
import time
from dataclasses import dataclass

from msa import interrupts
from msa._runtime.startup import BackendStart
from msa.backends import cupy_installed
from msa.io.formats import output_size
from msa.io.output import check_space
from msa.io.writers import check_names
from msa.params import AlignParams
from msa.progress import current
from msa.run import run_families
from msa.run.local import output, prepare_read, read_input, write_rows
from msa.run.plan import Family, check_paths, cpu_first, tree_file_read


@dataclass(frozen=True)
class AlignedOne:
    """What ``msa align -o`` reports: the family's size, its resolved sequence type, the width,
    the bytes written (None where not counted) and the run's wall time."""

    sequences: int
    seq_type: str
    width: int
    nbytes: int | None
    seconds: float


def optional_output(path: str | None):
    """:func:`output`, or a null context (None) where no path is given."""
    return contextlib.nullcontext() if path is None else output(path)


def align_one(
    input: str, out_path: str | None, params: AlignParams, *, fmt: str = "fasta", tree_out: str | None = None,
    memory_cap: int | None = None,
) -> AlignedOne:
    """Align one FASTA file (``-`` is stdin) to ``out_path`` (None or ``-``: stdout), and write
    its guide tree to ``tree_out`` as Newick first if given; the sequence type's note is left
    to the caller's final line."""
    check_paths(
        [(f"the input {input}", input), *tree_file_read(params)],
        [(f"-o/--output {out_path}", out_path), (f"--tree-out {tree_out}", tree_out)],
    )
    start = time.perf_counter()
    cpu = params.device == "auto" and cpu_first(input, params.threads)  # auto's cost model
    # Without CuPy there is no GPU to weigh the input against: the CPU, and no note about it.
    device = "cpu" if cpu and not cupy_installed() else params.device
    with BackendStart(device, memory_cap, cpu) as backend_start:
        db = read_input(input)
        check_names(db.names, fmt)  # a format that cannot hold the names fails before the alignment
        backend_start.sequences(len(db))
        read = prepare_read(Family(input, out_path or "-", -1), db, params, start, note=False)
        family = read.prepared
        with output(out_path, params.gzip_level) as out, optional_output(tree_out) as newick_out:
            backend = functools.partial(backend_start.backend, quiet=params.quiet)  # waited for as late as can be
            widest = int(family.db.lengths.max(initial=0))
            check_space(out, output_size(family.db.names, family.db.descriptions, widest, fmt), at_least=True)
            from msa.pipeline import align_prepared, tree_prepared  # local: (c) Numba loads on the start thread (docs/start-up.md, step 6)

            guide = None
            if newick_out is not None:
                backend = backend()
                with current().stage("guide tree"):
                    guide = tree_prepared(family, backend)
                newick_out.write(newick_bytes(guide, family.unique.names))
            aligned = align_prepared(family, backend, tree=guide)  # reports its own stages
            nbytes = write_rows(out, aligned, fmt)
            interrupts.finished()  # the outputs are whole: a signal no longer stops their rename
    return AlignedOne(len(db), family.params.seq_type, aligned.width, nbytes, time.perf_counter() - start)


def align_one_on_cluster(
    input: str, out_path: str | None, params: AlignParams, cluster: dict, *, fmt: str = "fasta",
    memory_cap: int | None = None,
) -> AlignedOne:
    """Align one FASTA file to ``out_path`` on a Dask cluster (``-o OUT --gpus N``, ``--workers``,
    ``--scheduler``): a large family split across the workers along its guide tree
    (msa.run.split), the output byte-identical; ``memory_cap`` (``--gpu-memory``) each worker's.
    Raises ValueError with the family's one-line error where it failed."""
    if out_path is None or out_path == "-":
        raise ValueError("a cluster's workers write the output: give -o FILE (or -O DIR), not stdout")
    check_paths([(f"the input {input}", input), *tree_file_read(params)], [(f"-o/--output {out_path}", out_path)])
    if not os.path.isfile(input):
        raise ValueError(f"{input}: a cluster's workers read the input again: give a regular file, not a pipe")
    family = Family(input, out_path, os.path.getsize(input))
    [result] = run_families([family], params, fmt=fmt, cluster=cluster, memory_cap=memory_cap).results
    if result.status == "failed":
        raise ValueError(result.error or input)
    return AlignedOne(result.sequences, result.seq_type, result.width, None, result.seconds)


def tree_one(input: str, out_path: str | None, params: AlignParams, memory_cap: int | None = None) -> None:
    """``msa tree``: the guide tree of one FASTA file as Newick to ``out_path`` (None: stdout)."""
    check_paths([(f"the input {input}", input)], [(f"-o/--output {out_path}", out_path)])
    with BackendStart(params.device, memory_cap) as backend_start:
        db = read_input(input)
        with output(out_path) as out:
            backend = backend_start.backend(quiet=params.quiet)
            from msa.pipeline import tree_db  # local: (c) Numba loads on the start thread (docs/start-up.md, step 6)

            with current().stage("guide tree"):
                guide, names = tree_db(db, params, backend)
            out.write(newick_bytes(guide, names))
            interrupts.finished()


def newick_bytes(guide: object, names: list[str]) -> bytes:
    """A guide tree's Newick text, ending in a newline, as bytes."""
    from msa.tree import write_newick  # local: (c) Numba loads on the start thread (docs/start-up.md, step 6)

    text = write_newick(guide, names)
    return (text if text.endswith("\n") else text + "\n").encode("utf-8", "surrogateescape")
