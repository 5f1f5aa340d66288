"""The ``msa`` command: align, add, merge, tree, score.

Every default comes from ``AlignParams`` (one source of truth). Expected
failures (bad input, missing files, no GPU) end in one ``msa: error: ...``
line on stderr and exit status 1, never a traceback; stdout carries only the
alignment, tree or scores.
"""
from __future__ import annotations

import atexit
import contextlib
import enum
import functools
import gc
import json
import math
import os
import sys
import time
from typing import Annotated, Iterator, Optional

import typer

from msa import interrupts
from msa.alphabet import load_matrix
from msa.backends import GB, BackendUnavailable, DeviceMemoryError
from msa.io import FORMATS, InputError, open_output, read_fasta, write_alignment
from msa.io.formats import output_size
from msa.io.output import check_space
from msa.params import (
    DEVICES, GUIDE_TREE_METHODS, LINKAGES, MST_TREE_MAX, NUCLEOTIDE_SCHEME, PARTTREE_SPLITS, PROTEIN_SCHEME, SEQ_TYPES,
    TREE_DISTANCES, AlignParams,
)
from msa.progress import Progress
from msa.startup import BackendStart

_D = AlignParams()
_NEWICK_SUFFIXES = (".nwk", ".newick", ".tree", ".tre", ".dnd")

Format = enum.Enum("Format", {f: f for f in FORMATS}, type=str)  # type: ignore[misc]
# typer shows an Enum's members as the choices; they come from params' tuples.
DeviceChoice = enum.Enum("DeviceChoice", {d: d for d in DEVICES}, type=str)  # type: ignore[misc]
TreeMethod = enum.Enum("TreeMethod", {m: m for m in GUIDE_TREE_METHODS}, type=str)  # type: ignore[misc]
#: --parttree-distance offers sw too; AlignParams rejects it with a one-line error.
DistanceChoice = enum.Enum("DistanceChoice", {d: d for d in TREE_DISTANCES}, type=str)  # type: ignore[misc]
SplitChoice = enum.Enum("SplitChoice", {d: d for d in PARTTREE_SPLITS}, type=str)  # type: ignore[misc]
LinkageChoice = enum.Enum("LinkageChoice", {d: d for d in LINKAGES}, type=str)  # type: ignore[misc]
SeqTypeChoice = enum.Enum("SeqTypeChoice", {d: d for d in SEQ_TYPES}, type=str)  # type: ignore[misc]

app = typer.Typer(
    name="msa",
    help="Multiple sequence alignment of large protein families (PartTree guide trees, "
    "batched profile alignment on the GPU or CPU).",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)

# Options shared by `align` and `tree`, declared once.
InputArg = Annotated[str, typer.Argument(metavar="IN", help="FASTA file (protein or nucleotides), gzipped or not; '-' reads stdin.")]
DeviceOpt = Annotated[
    DeviceChoice, typer.Option("--device", help="auto picks cuda when CuPy finds a GPU, else cpu.")
]
ThreadsOpt = Annotated[int, typer.Option("--threads", "-t", min=0, help="CPU threads; 0 uses every core.")]
PartsizeOpt = Annotated[
    int, typer.Option("--partsize", min=2, help="PartTree references per node (MAFFT's --partsize).")
]
DistanceOpt = Annotated[
    DistanceChoice,
    typer.Option(
        "--distance",
        help="Distance of exact trees: lcs (FAMSA's), kmer (MAFFT's 6-mer) or sw "
        "(1 - Smith-Waterman score / smaller self score).",
    ),
]
SplitOpt = Annotated[
    SplitChoice,
    typer.Option(
        "--parttree-split",
        help="How PartTree splits a node: sample (single linkage over a sample) or picks (MAFFT's).",
    ),
]
SplitDistanceOpt = Annotated[
    DistanceChoice,
    typer.Option("--parttree-distance", help="Distance of PartTree's splits: lcs or kmer (MAFFT's 6-mer); not sw."),
]
LinkageOpt = Annotated[
    LinkageChoice, typer.Option("--linkage", help="Linkage of exact trees and PartTree's exact subtrees.")
]
ExactOpt = Annotated[
    int,
    typer.Option("--exact-tree-max", min=2, help="Groups up to this size get an exact tree from all pair distances."),
]
MstOpt = Annotated[
    Optional[int],
    typer.Option(
        "--mst-tree-max", min=2,
        help="Inputs (and PartTree groups) up to this size get FAMSA's exact single-linkage LCS tree "
        f"without a distance matrix (Prim's MST). Default: {MST_TREE_MAX['cuda']} on the GPU, "
        f"{MST_TREE_MAX['cpu']} on the CPU.",
    ),
]
KeepDupOpt = Annotated[
    bool, typer.Option("--keep-duplicates", help="Align identical sequences separately instead of once.")
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the random PartTree reference picks.")]
GpuMemoryOpt = Annotated[
    Optional[float],
    typer.Option(
        "--gpu-memory", metavar="GB",
        help="Cap the GPU memory msa's arrays may use, in GB (10^9 bytes): work runs in smaller "
        "pieces to fit (the CUDA context, a few hundred MB, comes on top); an input that cannot "
        "fit ends with the cap it needs. Not part of the result. Ignored (with a note) on the CPU.",
    ),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Nothing on stderr but errors.")]
VerboseOpt = Annotated[
    bool, typer.Option("--verbose", "-v", help="Each finished stage's time on stderr, also when it is not a terminal.")
]


SeqTypeOpt = Annotated[
    SeqTypeChoice,
    typer.Option(
        "--seq-type",
        help="protein, dna or rna (U and T score alike), or auto: nucleotides when more than 75% of the "
        "letters (of the first 10^6) are A, C, G, T, U or N (MAFFT's rule), rna if U outnumbers T.",
    ),
]
_P, _N = PROTEIN_SCHEME, NUCLEOTIDE_SCHEME
MatrixOpt = Annotated[
    Optional[str],
    typer.Option(
        "--matrix", "-m",
        help=f"Substitution matrix. Protein: {_P.matrix} by default; BLOSUM62, VTML200, PAM250, ... "
        f"Nucleotides: {_N.matrix} only (match/mismatch, N and IUPAC ambiguity codes score 0).",
    ),
]
GapOpenOpt = Annotated[
    Optional[float],
    typer.Option("--gap-open", min=0.0, help=f"Gap-open cost (default: {_P.gap_open} protein, {_N.gap_open} nucleotides)."),
]
GapExtendOpt = Annotated[
    Optional[float],
    typer.Option(
        "--gap-extend", min=0.0, help=f"Gap-extension cost (default: {_P.gap_extend} protein, {_N.gap_extend} nucleotides)."
    ),
]
TerminalGapOpt = Annotated[
    Optional[float],
    typer.Option(
        "--terminal-gap", min=0.0,
        help=f"Cost of each gap at a sequence end (default: {_P.terminal_gap} protein, {_N.terminal_gap} nucleotides).",
    ),
]


def _check_scoring(params: AlignParams) -> None:
    """An unknown matrix, or one of the wrong kind for a given --seq-type, fails before any work."""
    if params.matrix is not None:
        load_matrix(params.matrix)
    if params.seq_type != "auto":
        params.resolved()


def _params(**options: object) -> AlignParams:
    """AlignParams from command-line values, enum choices unwrapped to their strings."""
    return AlignParams(**{k: v.value if isinstance(v, enum.Enum) else v for k, v in options.items()})


def _tree_options(partsize, exact_tree_max, mst_tree_max, distance, linkage, parttree_split, parttree_distance) -> dict:
    """The guide-tree options `align` and `tree` share, by their AlignParams names."""
    return dict(
        partsize=partsize, exact_tree_max=exact_tree_max, mst_tree_max=mst_tree_max, distance=distance, linkage=linkage,
        parttree_split=parttree_split, parttree_distance=parttree_distance,
    )


def main() -> None:
    """Entry point of ``python -m msa``."""
    app(prog_name="msa")


@app.callback()
def _short_lived_process() -> None:
    """Settings for a process that runs one command (both entry points pass here)."""
    _tune_gc()


@functools.cache
def _tune_gc() -> None:
    """Garbage-collector settings of a short-lived process, applied once.

    Numba's typing registries, loaded with the first cached kernel, leave
    ~10^5 long-lived objects. With the default thresholds the collector scans
    them again and again while they load, and once more at interpreter exit;
    fewer young collections and a freeze before exit save ~0.3 s of a 2 s tiny
    run. The arrays that hold the data are not tracked by the collector, so
    this costs no memory to speak of.
    """
    gc.set_threshold(10_000, 50, 50)
    atexit.register(gc.freeze)


@app.command()
def align(
    inputs: Annotated[
        list[str],
        typer.Argument(
            metavar="IN...",
            help="FASTA file (protein or nucleotides), gzipped or not; '-' reads stdin. Several files, or a directory "
            "(its files in name order), with -O.",
        ),
    ],
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", help="Output file ('.gz' compresses); stdout if omitted.")
    ] = None,
    output_dir: Annotated[
        Optional[str],
        typer.Option(
            "--output-dir", "-O",
            help="Write one alignment per input here (made if missing), named after the input: "
            "PF00078.fa.gz -> PF00078.fa, PF00078.10000 -> PF00078.10000.fa (the --format's extension).",
        ),
    ] = None,
    gzip_out: Annotated[bool, typer.Option("--gzip", help="With -O: gzip each output (its name ends .gz).")] = False,
    skip_existing: Annotated[
        bool,
        typer.Option("--skip-existing", help="With -O: skip inputs whose output exists (resumes a run)."),
    ] = False,
    scheduler: Annotated[
        Optional[str],
        typer.Option(
            "--scheduler",
            help="With -O: align the families on this Dask cluster (scheduler address, tcp://host:8786); "
            "its workers must see the inputs and -O at the same paths. Needs msa[dask].",
        ),
    ] = None,
    workers: Annotated[
        Optional[int],
        typer.Option(
            "--workers", min=1,
            help="With -O: start a local Dask cluster for the run: one worker per GPU (at most N) with "
            "dask-cuda and a GPU, else N CPU worker processes. Needs msa[dask].",
        ),
    ] = None,
    gpus: Annotated[
        Optional[int],
        typer.Option("--gpus", min=1, help="With -O: a local dask-cuda cluster of N GPU workers. Needs msa[dask-gpu]."),
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format("fasta"),
    device: DeviceOpt = DeviceChoice(_D.device),
    threads: ThreadsOpt = _D.threads,
    tree: Annotated[
        str,
        typer.Option(
            "--tree",
            help="Guide tree: auto (an exact tree up to --exact-tree-max, or --mst-tree-max for the "
            "default single linkage over LCS; PartTree above), parttree, upgma, single, or a Newick file.",
        ),
    ] = _D.guide_tree,
    tree_out: Annotated[
        Optional[str], typer.Option("--tree-out", help="Also write the guide tree (Newick) here.")
    ] = None,
    partsize: PartsizeOpt = _D.partsize,
    exact_tree_max: ExactOpt = _D.exact_tree_max,
    mst_tree_max: MstOpt = _D.mst_tree_max,
    distance: DistanceOpt = DistanceChoice(_D.distance),
    linkage: LinkageOpt = LinkageChoice(_D.linkage),
    parttree_split: SplitOpt = SplitChoice(_D.parttree_split),
    parttree_distance: SplitDistanceOpt = DistanceChoice(_D.parttree_distance),
    seq_type: SeqTypeOpt = SeqTypeChoice(_D.seq_type),
    matrix: MatrixOpt = _D.matrix,
    gap_open: GapOpenOpt = _D.gap_open,
    gap_extend: GapExtendOpt = _D.gap_extend,
    terminal_gap: TerminalGapOpt = _D.terminal_gap,
    keep_duplicates: KeepDupOpt = _D.keep_duplicates,
    seed: SeedOpt = _D.seed,
    gpu_memory: GpuMemoryOpt = None,
    quiet: QuietOpt = _D.quiet,
    verbose: VerboseOpt = False,
) -> None:
    """Align a FASTA file (protein, DNA or RNA), or each of many files into a directory (-O)."""
    with _errors(), Progress(quiet=quiet, verbose=verbose).running() as progress:
        params = _params(
            seq_type=seq_type, matrix=matrix, gap_open=gap_open, gap_extend=gap_extend, terminal_gap=terminal_gap,
            **_tree_options(partsize, exact_tree_max, mst_tree_max, distance, linkage, parttree_split, parttree_distance),
            keep_duplicates=keep_duplicates, seed=seed, threads=threads, device=device, quiet=quiet,
            **_tree_choice(tree),
        )
        if tree_out is not None and params.tree_file is not None:
            raise ValueError("--tree-out with a tree file given to --tree: that file is the tree")
        _check_many_options(inputs, output, output_dir, tree_out, gzip_out, skip_existing)
        cluster = _check_cluster_options(output_dir, params.device, scheduler, workers, gpus)
        _check_scoring(params)  # an unknown matrix fails before any work
        memory_cap = _memory_cap(gpu_memory)
        if output_dir is not None:
            _align_many(inputs, output_dir, params, fmt.value, gzip_out, skip_existing, progress, cluster, memory_cap)
            return
        input = inputs[0]
        start = time.perf_counter()
        with BackendStart(params.device, memory_cap) as backend_start:
            with progress.stage("reading"):
                db = read_fasta(input)
            from msa.pipeline import prepare

            db, run = prepare(db, params, note=False)  # the sequence type, once for the tree and the alignment
            with _output(output) as out, _optional_output(tree_out) as newick_out:
                backend = functools.partial(backend_start.backend, quiet=quiet)
                width, nbytes = _align_to(out, newick_out, db, run, backend, fmt.value, progress)
                interrupts.finished()  # the outputs are whole: a signal no longer stops their rename
        kind = f"{run.seq_type}, detected" if params.seq_type == "auto" else run.seq_type
        progress.note(
            f"aligned {len(db)} sequences ({kind}) into {width} columns in {time.perf_counter() - start:.1f} s"
        )
        if progress.verbose:
            progress.note(_output_note(output, nbytes))


def _check_many_options(inputs: list[str], output, output_dir, tree_out, gzip_out: bool, skip_existing: bool) -> None:
    """One-line usage errors of the one-input (-o, stdout) and many-input (-O) forms of ``align``."""
    if output_dir is not None:
        if output is not None:
            raise ValueError("-o/--output and -O/--output-dir do not go together")
        if tree_out is not None:
            raise ValueError("--tree-out takes one input written with -o or to stdout, not -O/--output-dir")
        return
    if len(inputs) > 1:
        raise ValueError(f"{len(inputs)} inputs: write one alignment each with -O/--output-dir DIR (-o takes one)")
    if os.path.isdir(inputs[0]):
        raise IsADirectoryError(21, "Is a directory (to align the files in it, give -O/--output-dir DIR)", inputs[0])
    if gzip_out or skip_existing:
        raise ValueError("--gzip and --skip-existing go with -O/--output-dir (name the -o file .gz to compress it)")


def _check_cluster_options(output_dir, device: str, scheduler, workers, gpus) -> dict | None:
    """``--scheduler``/``--workers``/``--gpus`` (one, with -O, Dask installed) as run_families_dask's keywords."""
    given = {k: v for k, v in (("scheduler", scheduler), ("workers", workers), ("gpus", gpus)) if v is not None}
    if not given:
        return None
    if output_dir is None:
        flags = ", ".join(f"--{k}" for k in given)
        raise ValueError(f"{flags} with -O/--output-dir DIR only (the workers write the families' outputs there)")
    from msa.distributed import check_options

    check_options(device, **given)
    return given


def _align_many(
    inputs: list[str], output_dir: str, params: AlignParams, fmt: str, gzip_out: bool, skip_existing: bool,
    progress: Progress, cluster: dict | None = None, memory_cap: int | None = None,
) -> None:
    """``align -O``: one backend for every family (msa.run), or the families on a Dask cluster
    (msa.distributed); a failed family is one line, then exit 1."""
    from msa.run import FamilyResult, plan_run, run_families

    families = plan_run(inputs, output_dir, fmt=fmt, gzip=gzip_out)  # a bad -O fails before any work

    def report(result: FamilyResult) -> None:
        if result.status == "failed":
            progress.error(result.error or result.input)
        elif progress.verbose:
            progress.note(
                f"{result.input}: {result.sequences} sequences into {result.width} columns "
                f"in {result.seconds:.1f} s"
            )

    if cluster is not None:
        from msa.distributed import run_families_dask

        summary = run_families_dask(
            families, params, fmt=fmt, skip_existing=skip_existing, progress=progress, on_result=report, **cluster
        )
    else:
        with BackendStart(params.device, memory_cap) as backend_start:
            backend = functools.partial(backend_start.backend, quiet=params.quiet)
            summary = run_families(
                families, params, fmt=fmt, skip_existing=skip_existing, backend=backend, progress=progress,
                on_result=report,
            )
    total, failed, skipped = len(summary.results), len(summary.failed), len(summary.skipped)
    parts = [f"{n} {what}" for n, what in ((skipped, "skipped (outputs exist)"), (failed, "failed")) if n]
    progress.note(
        f"aligned {len(summary.done)} of {total} families into {output_dir} in {summary.seconds:.1f} s"
        + "".join(f"; {part}" for part in parts)
    )
    if failed:
        progress.error(f"{failed} of {total} families failed")
        raise typer.Exit(1)


def _align_to(
    out, newick_out, db, params: AlignParams, backend, fmt: str, progress: Progress
) -> tuple[int, int | None]:
    """The work of ``align`` once the input is read and the outputs are open; the width and
    the bytes written (None where not counted).

    ``backend`` is a function that waits for the backend's start, called as late as can be.
    An output that cannot fit even at the longest sequence's width fails before the
    alignment; write_alignment checks the exact size once the width is known."""
    from msa.pipeline import align_db, tree_db

    check_space(out, output_size(db.names, db.descriptions, int(db.lengths.max(initial=0)), fmt), at_least=True)
    guide = None
    if newick_out is not None:
        backend = backend()
        with progress.stage("guide tree"):
            guide, names = tree_db(db, params, backend)
        newick_out.write(_newick_bytes(guide, names))
    aligned = align_db(db, params, backend, tree=guide)  # reports its own stages
    with progress.stage("writing"):
        nbytes = write_alignment(out, aligned, fmt)
    return aligned.width, nbytes


def _output_note(output: str | None, nbytes: int | None) -> str:
    """``-v``'s line on the output's size."""
    where = "stdout" if output is None or output == "-" else output
    text = f"wrote {nbytes:,} bytes to {where}" if nbytes is not None else f"wrote {where}"
    if where != "stdout" and os.path.isfile(where) and (nbytes is None or where.endswith(".gz")):
        text += f" ({os.path.getsize(where):,} bytes on disk)"
    return text


InFormatOpt = Annotated[
    str,
    typer.Option(
        "--in-format",
        help="Format of the existing alignment(s): auto (.a2m/.a3m by name, else aligned FASTA; "
        "A3M when rows differ in width and have lower-case inserts), fasta, a2m, a3m, or any "
        "format Biopython's Bio.Align reads (clustal, stockholm, phylip, ...).",
    ),
]
OutputOpt = Annotated[
    Optional[str], typer.Option("--output", "-o", help="Output file ('.gz' compresses); stdout if omitted.")
]


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
        params = _params(seq_type=seq_type, matrix=matrix, gap_open=gap_open, gap_extend=gap_extend,
                         terminal_gap=terminal_gap, threads=threads, device=device, quiet=quiet)
        _check_scoring(params)
        from msa.io.formats import read_alignment

        with BackendStart(params.device) as backend_start:
            with progress.stage("reading"):
                a, b = read_alignment(first, in_format), read_alignment(second, in_format)
            with _output(output) as out:
                from msa.merge import merge_alignments
                from msa.pipeline import _set_threads

                _set_threads(params.threads)
                merged = merge_alignments(a, b, params, backend_start.backend(quiet=quiet))
                with progress.stage("writing"):
                    write_alignment(out, merged, fmt.value)
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
        params = _params(seq_type=seq_type, matrix=matrix, gap_open=gap_open, gap_extend=gap_extend,
                         terminal_gap=terminal_gap, threads=threads, device=device, quiet=quiet)
        _check_scoring(params)
        from msa.io.formats import read_alignment

        with BackendStart(params.device) as backend_start:
            with progress.stage("reading"):
                old = read_alignment(existing, in_format)
                db = read_fasta(new)
            with _output(output) as out:
                from msa.merge import add_sequences
                from msa.pipeline import _set_threads

                _set_threads(params.threads)
                result, dropped = add_sequences(old, db, params, backend_start.backend(quiet=quiet), keep_length)
                with progress.stage("writing"):
                    write_alignment(out, result, fmt.value)
        progress.note(
            f"added {len(db)} sequences to {len(old.names)} rows: {result.width} columns"
            + (f"; {dropped} inserted residues left out (--keep-length)" if dropped else "")
        )


@app.command()
def tree(
    input: InputArg,
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", help="Newick file ('.gz' compresses); stdout if omitted.")
    ] = None,
    method: Annotated[TreeMethod, typer.Option("--tree", help="Guide-tree method.")] = TreeMethod(_D.guide_tree),
    device: DeviceOpt = DeviceChoice(_D.device),
    threads: ThreadsOpt = _D.threads,
    partsize: PartsizeOpt = _D.partsize,
    exact_tree_max: ExactOpt = _D.exact_tree_max,
    mst_tree_max: MstOpt = _D.mst_tree_max,
    distance: DistanceOpt = DistanceChoice(_D.distance),
    linkage: LinkageOpt = LinkageChoice(_D.linkage),
    parttree_split: SplitOpt = SplitChoice(_D.parttree_split),
    parttree_distance: SplitDistanceOpt = DistanceChoice(_D.parttree_distance),
    seq_type: SeqTypeOpt = SeqTypeChoice(_D.seq_type),
    keep_duplicates: KeepDupOpt = _D.keep_duplicates,
    seed: SeedOpt = _D.seed,
    gpu_memory: GpuMemoryOpt = None,
    quiet: QuietOpt = _D.quiet,
    verbose: VerboseOpt = False,
) -> None:
    """Build only the guide tree and write it as Newick (leaves named after the sequences)."""
    with _errors(), Progress(quiet=quiet, verbose=verbose).running() as progress:
        params = _params(
            guide_tree=method, seq_type=seq_type,
            **_tree_options(partsize, exact_tree_max, mst_tree_max, distance, linkage, parttree_split, parttree_distance),
            keep_duplicates=keep_duplicates, seed=seed, threads=threads, device=device, quiet=quiet,
        )
        with BackendStart(params.device, _memory_cap(gpu_memory)) as backend_start:
            with progress.stage("reading"):
                db = read_fasta(input)
            with _output(output) as out:
                backend = backend_start.backend(quiet=quiet)
                from msa.pipeline import tree_db

                with progress.stage("guide tree"):
                    guide, names = tree_db(db, params, backend)
                out.write(_newick_bytes(guide, names))
                interrupts.finished()


@app.command()
def score(
    test: Annotated[str, typer.Argument(metavar="TEST", help="The alignment to score (aligned FASTA, A2M or A3M).")],
    ref: Annotated[str, typer.Argument(metavar="REF", help="The reference alignment (aligned FASTA, A2M or A3M).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print every count as one JSON object.")] = False,
) -> None:
    """Score an alignment against a reference: SP (the Q score) and TC."""
    with _errors():
        from msa.scoring import score_files

        result = score_files(test, ref)
        if as_json:
            typer.echo(json.dumps(result, sort_keys=True, default=_plain))
        else:
            typer.echo(f"SP (Q)\t{float(result['sp']):.4f}\nTC\t{float(result['tc']):.4f}")


def _memory_cap(gpu_memory: float | None) -> int | None:
    """``--gpu-memory GB`` in bytes (None: no cap)."""
    if gpu_memory is None:
        return None
    if not math.isfinite(gpu_memory) or gpu_memory <= 0:
        raise ValueError(f"--gpu-memory {gpu_memory:g}: give a positive number of GB")
    return max(1, int(gpu_memory * GB))


def _tree_choice(value: str) -> dict[str, str]:
    """``--tree``: a method name, or the path of a Newick file to align along."""
    if value in GUIDE_TREE_METHODS:
        return {"guide_tree": value}
    if os.path.isfile(value):
        return {"tree_file": value}
    if value.lower().endswith(_NEWICK_SUFFIXES):
        raise FileNotFoundError(2, "No such file or directory", value)
    raise ValueError(f"--tree {value!r}: choose {', '.join(GUIDE_TREE_METHODS)} or an existing Newick file")


def _newick_bytes(guide: object, names: list[str]) -> bytes:
    from msa.tree import write_newick

    text = write_newick(guide, names)
    return (text if text.endswith("\n") else text + "\n").encode("utf-8", "surrogateescape")


def _output(path: str | None):
    """An atomic output (msa.io.open_output) whose temporary file no signal can strand."""
    return interrupts.entered_whole(open_output(path))


@contextlib.contextmanager
def _optional_output(path: str | None) -> Iterator[object]:
    if path is None:
        yield None
    else:
        with _output(path) as out:
            yield out


def _plain(value: object) -> object:
    """JSON for NumPy scalars in the score dict."""
    item = getattr(value, "item", None)
    if item is None:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")
    return item()


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    """Expected failures as one line on stderr and a non-zero exit, never a traceback.

    SIGINT and SIGTERM are noted meanwhile and raise msa.interrupts.Interrupted at the run's
    next checkpoint: the outputs on the way out remove their temporary files, and the run
    ends with ``msa: interrupted`` and exit status 130 or 143 (128 + the signal's number).
    """
    with interrupts.handling():
        try:
            yield
        except BrokenPipeError:
            interrupts.stopping()
            # The reader of stdout went away (`msa align x.fa | head`): stop quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(1) from None
        except (InputError, BackendUnavailable, ValueError, OSError, EOFError) as exc:
            interrupts.stopping()  # a signal now would only cut the line short
            typer.echo(f"msa: error: {_message(exc)}", err=True)
            raise typer.Exit(1) from None
        except MemoryError as exc:  # CuPy's OutOfMemoryError outside the pieces that catch it
            interrupts.stopping()
            device = DeviceMemoryError.from_exception(exc)
            typer.echo(f"msa: error: {device if device is not None else f'out of memory ({_message(exc)})'}", err=True)
            raise typer.Exit(1) from None
        except KeyboardInterrupt as exc:
            typer.echo("msa: interrupted", err=True)
            raise typer.Exit(getattr(exc, "exit_status", 130)) from None


def _message(exc: BaseException) -> str:
    """One line, with the file name first for OS errors."""
    from msa.run import one_line

    return one_line(exc)
