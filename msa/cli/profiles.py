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
from msa.startup import BackendStart


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
    with _errors(), Progress(quiet=quiet, verbose=verbose).running() as progress:
        params = _scoring_params(seq_type, matrix, gap_open, gap_extend, terminal_gap, threads, device, quiet)
        from msa.io.formats import read_alignment

        with BackendStart(params.device, numba_on_gpu=False) as backend_start:
            with progress.stage("reading"):
                a, b = read_alignment(first, in_format), read_alignment(second, in_format)
            from msa.merge import prepare_merge

            merge = prepare_merge(a, b, params)  # the profiles, while the backend starts
            with _output(output) as out:
                backend = backend_start.backend(quiet=quiet)
                merged = merge.align(backend)
                with progress.stage("writing"):
                    write_alignment(out, merged, fmt.value, backend)
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
    with _errors(), Progress(quiet=quiet, verbose=verbose).running() as progress:
        params = _scoring_params(seq_type, matrix, gap_open, gap_extend, terminal_gap, threads, device, quiet)
        from msa.io.formats import read_alignment

        with BackendStart(params.device, numba_on_gpu=False) as backend_start:
            with progress.stage("reading"):
                old = read_alignment(existing, in_format)
                db = read_fasta(new)
            from msa.merge import prepare_addition

            addition = prepare_addition(old, db, params)  # the profile, while the backend starts
            with _output(output) as out:
                backend = backend_start.backend(quiet=quiet)
                result, dropped = addition.align(backend, keep_length)
                with progress.stage("writing"):
                    write_alignment(out, result, fmt.value, backend)
        progress.note(
            f"added {len(db)} sequences to {len(old.names)} rows: {result.width} columns"
            + (f"; {dropped} inserted residues left out (--keep-length)" if dropped else "")
        )


def _scoring_params(seq_type, matrix, gap_open, gap_extend, terminal_gap, threads, device, quiet) -> AlignParams:
    """merge's and add's AlignParams: the scoring options; an unknown matrix fails before any
    work. Nothing here imports the pipeline (Numba): on the CPU that import belongs to the
    backend's start, and on a GPU these commands never need it (msa.merge sets Numba's threads)."""
    params = _params(seq_type=seq_type, matrix=matrix, gap_open=gap_open, gap_extend=gap_extend,
                     terminal_gap=terminal_gap, threads=threads, device=device, quiet=quiet)
    _check_scoring(params)
    return params
