"""Runs on alignments that exist: ``msa merge`` (two aligned to each other) and ``msa add``.

Both take one path: the inputs are read and profiled in a forked child
(:class:`msa._runtime.forked.ForkedCall`) while the backend starts on
background threads, then aligned on it and written to one output.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msa._runtime.forked import ForkedCall
from msa._runtime.startup import BackendStart
from msa import interrupts
from msa.backends import Backend
from msa.io import read_fasta
from msa.io.formats import read_alignment
from msa.params import AlignParams
from msa.progress import Progress
from msa.run.local import output, write_rows
from msa.run.plan import check_paths, input_bytes


def merge(first: str, second: str, out_path: str | None, params: AlignParams, *, fmt: str = "fasta",
          in_format: str = "auto", progress: Progress) -> tuple[Any, Any]:
    """``msa merge``: the Merge read (``.a``, ``.b``) and the merged alignment, written to ``out_path``."""
    read, (merged, _) = _run(_read_merge, (first, second), in_format, params, out_path, fmt, progress,
                             lambda read, backend: (read.align(backend), None))
    return read, merged


def add(existing: str, new: str, out_path: str | None, params: AlignParams, *, keep_length: bool = False,
        fmt: str = "fasta", in_format: str = "auto", progress: Progress) -> tuple[Any, Any, int]:
    """``msa add``: the Addition read (``.existing``, ``.new``), the alignment written to
    ``out_path``, and the residues left out under ``keep_length``."""
    read, (result, dropped) = _run(_read_addition, (existing, new), in_format, params, out_path, fmt, progress,
                                   lambda read, backend: read.align(backend, keep_length))
    return read, result, dropped


def _run(
    read: Callable[..., Any], inputs: tuple[str, str], in_format: str, params: AlignParams, out_path: str | None,
    fmt: str, progress: Progress, align: Callable[[Any, Backend], tuple[Any, Any]],
) -> tuple[Any, tuple[Any, Any]]:
    """Read ``inputs`` in a forked child (begun before any thread), align what it returns with
    ``align`` once the backend is up, write the rows; what was read, and what ``align`` returned."""
    check_paths([(f"the input {path}", path) for path in inputs], [(f"-o/--output {out_path}", out_path)])
    with ForkedCall(read, *inputs, in_format, params, reserve=_reserve(*inputs)) as reading, \
            progress.running(), BackendStart(params.device, numba_on_gpu=False) as backend_start:
        with progress.stage("reading"):
            prepared = reading.result()  # read and profiled while the backend starts
        with output(out_path) as out:
            backend = backend_start.backend(quiet=params.quiet)
            aligned = align(prepared, backend)
            write_rows(out, aligned[0], fmt, backend)
            interrupts.finished()  # the output is whole: a signal no longer stops its rename
    return prepared, aligned


def _read_merge(first: str, second: str, in_format: str, params: AlignParams):
    """``merge``'s inputs read and profiled (msa.merge.Merge); made in a forked child."""
    from msa.merge import prepare_merge  # local: (d) made in the forked reading child (docs/start-up.md, step 8)

    return prepare_merge(read_alignment(first, in_format), read_alignment(second, in_format), params)


def _read_addition(existing: str, new: str, in_format: str, params: AlignParams):
    """``add``'s inputs read, the alignment profiled (msa.merge.Addition); made in a forked child."""
    from msa.merge import prepare_addition  # local: (d) made in the forked reading child (docs/start-up.md, step 8)

    return prepare_addition(read_alignment(existing, in_format), read_fasta(new), params)


def _reserve(*paths: str) -> int:
    """Shared memory for what the reading of ``paths`` returns (msa._runtime.forked.ForkedCall): a
    residue's byte, code and column (8 bytes) a byte of input at most, and the profile."""
    return 16 * sum(input_bytes(p) for p in paths) + (64 << 20)
