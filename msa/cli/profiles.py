"""``msa merge`` and ``msa add``: alignments that already exist, aligned to each other or to new sequences."""
from __future__ import annotations

from typing import Annotated

import typer

from msa.cli.app import app
from msa.cli.common import _errors, _output
from msa.cli.options import (
    DeviceChoice, DeviceOpt, Format, GapExtendOpt, GapOpenOpt, InFormatOpt, MatrixOpt, OutputOpt,
    QuietOpt, SeqTypeChoice, SeqTypeOpt, TerminalGapOpt, ThreadsOpt, VerboseOpt, _D, _check_scoring,
    _params,
)
from msa.io import read_fasta, write_alignment
from msa.params import AlignParams
from msa.progress import Progress
from msa._runtime.forked import ForkedCall
from msa._runtime.startup import BackendStart, input_bytes


@app.command()
def merge(
    first: Annotated[str, typer.Argument(metavar="A", help="An alignment (aligned FASTA, A2M/A3M, or --in-format).")],
    second: Annotated[str, typer.Argument(metavar="B", help="The alignment to align to A.")],
    output: OutputOpt = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format("fasta"),
    in_format: InFormatOpt = "auto",
    device: DeviceOpt = DeviceChoice(_D.device),
    threads: ThreadsOpt = _D.threads,
    seq_type: SeqTypeOpt = SeqTypeChoice(_D.seq_type),
    matrix: MatrixOpt = _D.matrix,
    gap_open: GapOpenOpt = _D.gap_open,
    gap_extend: GapExtendOpt = _D.gap_extend,
    terminal_gap: TerminalGapOpt = _D.terminal_gap,
    quiet: QuietOpt = _D.quiet,
    verbose: VerboseOpt = False,
) -> None:
    """Align two alignments to each other (profile-profile): A's rows then B's, each side's columns in order."""
    with _errors():
        params = _scoring_params(seq_type, matrix, gap_open, gap_extend, terminal_gap, threads, device, quiet)
        with ForkedCall(_read_merge, first, second, in_format, params, reserve=_reserve(first, second)) as reading, \
                Progress(quiet=quiet, verbose=verbose).running() as progress, \
                BackendStart(params.device, numba_on_gpu=False) as backend_start:
            with progress.stage("reading"):
                merge = reading.result()  # read and profiled while the backend starts
            with _output(output) as out:
                backend = backend_start.backend(quiet=quiet)
                merged = merge.align(backend)
                with progress.stage("writing"):
                    write_alignment(out, merged, fmt.value, backend)
        a, b = merge.a, merge.b
        progress.note(f"merged {len(a.names)} + {len(b.names)} rows of {a.width} and {b.width} columns "
                      f"into {merged.width} columns")


@app.command()
def add(
    existing: Annotated[str, typer.Argument(metavar="EXISTING", help="The alignment to add to (aligned FASTA, A2M/A3M, or --in-format).")],
    new: Annotated[str, typer.Argument(metavar="NEW", help="FASTA of the sequences to add (gaps removed); '-' reads stdin.")],
    output: OutputOpt = None,
    keep_length: Annotated[
        bool,
        typer.Option("--keep-length", help="Keep the existing columns as they are: residues of new sequences "
                     "that would need a new column are left out (MAFFT's --keeplength)."),
    ] = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format("fasta"),
    in_format: InFormatOpt = "auto",
    device: DeviceOpt = DeviceChoice(_D.device),
    threads: ThreadsOpt = _D.threads,
    seq_type: SeqTypeOpt = SeqTypeChoice(_D.seq_type),
    matrix: MatrixOpt = _D.matrix,
    gap_open: GapOpenOpt = _D.gap_open,
    gap_extend: GapExtendOpt = _D.gap_extend,
    terminal_gap: TerminalGapOpt = _D.terminal_gap,
    quiet: QuietOpt = _D.quiet,
    verbose: VerboseOpt = False,
) -> None:
    """Add new sequences to an existing alignment: each aligned to its profile, existing rows kept."""
    with _errors():
        params = _scoring_params(seq_type, matrix, gap_open, gap_extend, terminal_gap, threads, device, quiet)
        with ForkedCall(_read_addition, existing, new, in_format, params, reserve=_reserve(existing, new)) as reading, \
                Progress(quiet=quiet, verbose=verbose).running() as progress, \
                BackendStart(params.device, numba_on_gpu=False) as backend_start:
            with progress.stage("reading"):
                addition = reading.result()  # read and profiled while the backend starts
            with _output(output) as out:
                backend = backend_start.backend(quiet=quiet)
                result, dropped = addition.align(backend, keep_length)
                with progress.stage("writing"):
                    write_alignment(out, result, fmt.value, backend)
        progress.note(
            f"added {len(addition.new)} sequences to {len(addition.existing.names)} rows: {result.width} columns"
            + (f"; {dropped} inserted residues left out (--keep-length)" if dropped else "")
        )


def _read_merge(first: str, second: str, in_format: str, params: AlignParams):
    """``merge``'s inputs read and profiled (msa.merge.Merge); made in a forked child."""
    from msa.io.formats import read_alignment
    from msa.merge import prepare_merge

    return prepare_merge(read_alignment(first, in_format), read_alignment(second, in_format), params)


def _read_addition(existing: str, new: str, in_format: str, params: AlignParams):
    """``add``'s inputs read, the alignment profiled (msa.merge.Addition); made in a forked child."""
    from msa.io.formats import read_alignment
    from msa.merge import prepare_addition

    return prepare_addition(read_alignment(existing, in_format), read_fasta(new), params)


def _reserve(*paths: str) -> int:
    """Shared memory for what the reading of ``paths`` returns (msa._runtime.forked.ForkedCall): a
    residue's byte, code and column (8 bytes) a byte of input at most, and the profile."""
    return 16 * sum(input_bytes(p) for p in paths) + (64 << 20)


def _scoring_params(seq_type, matrix, gap_open, gap_extend, terminal_gap, threads, device, quiet) -> AlignParams:
    """merge's and add's AlignParams: the scoring options; an unknown matrix fails before any
    work. Nothing here imports the pipeline (Numba): on the CPU that import belongs to the
    backend's start, and on a GPU these commands never need it (msa.merge sets Numba's threads)."""
    params = _params(seq_type=seq_type, matrix=matrix, gap_open=gap_open, gap_extend=gap_extend,
                     terminal_gap=terminal_gap, threads=threads, device=device, quiet=quiet)
    _check_scoring(params)
    return params
