"""``msa merge`` and ``msa add``: alignments that already exist, aligned to each other or to new sequences."""
from __future__ import annotations

from typing import Annotated

import typer

from msa.cli.app import app
from msa.cli.common import _errors
from msa.cli.options import (
    DeviceChoice, DeviceOpt, Format, GapExtendOpt, GapOpenOpt, InFormatOpt, MatrixOpt, OutputOpt,
    QuietOpt, SeqTypeChoice, SeqTypeOpt, TerminalGapOpt, ThreadsOpt, VerboseOpt, _D, _check_scoring,
    _naming_in_format, _params,
)
from msa.params import AlignParams
from msa.progress import Progress


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
    with _errors(), _naming_in_format({first: ("--in-format", in_format), second: ("--in-format", in_format)}):
        params = _scoring_params(seq_type, matrix, gap_open, gap_extend, terminal_gap, threads, device, quiet)
        progress = Progress(quiet=quiet, verbose=verbose)
        from msa.run import profiles  # local: (c) NumPy: not for --help (docs/start-up.md, "Commands that align nothing")
        merge, merged = profiles.merge(first, second, output, params, fmt=fmt.value, in_format=in_format,
                                       progress=progress)
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
    with _errors(), _naming_in_format({existing: ("--in-format", in_format)}):
        params = _scoring_params(seq_type, matrix, gap_open, gap_extend, terminal_gap, threads, device, quiet)
        progress = Progress(quiet=quiet, verbose=verbose)
        from msa.run import profiles  # local: (c) NumPy: not for --help (docs/start-up.md, "Commands that align nothing")
        addition, result, dropped = profiles.add(existing, new, output, params, keep_length=keep_length,
                                                 fmt=fmt.value, in_format=in_format, progress=progress)
        progress.note(
            f"added {len(addition.new)} sequences to {len(addition.existing.names)} rows: {result.width} columns"
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
