"""``msa align``: one family to -o/stdout, or many to -O (in this process or on a Dask cluster)."""
from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from msa import run
from msa.cli.app import app
from msa.cli.common import _errors, _output_note
from msa.cli.options import (
    DeviceChoice, DeviceOpt, DistanceChoice, DistanceOpt, ExactOpt, Format, GapExtendOpt, GapOpenOpt,
    GpuMemoryOpt, KeepDupOpt, LinkageChoice, LinkageOpt, MatrixOpt, MstOpt, PartsizeOpt, QuietOpt, RefineOpt,
    ConnectTimeoutOpt, ConsistencyDrawOpt, ConsistencyOpt, DrawChoice, GzipLevelOpt, SeedOpt, SeqTypeChoice, SeqTypeOpt, SplitChoice, SplitDistanceOpt, SplitOpt,
    TerminalGapOpt,
    ThreadsOpt, VerboseOpt, WeightsChoice, WeightsOpt, _D, _check_scoring, _memory_cap, _params,
    _tree_choice,
    _tree_options,
)
from msa.params import CONNECT_TIMEOUT, AlignParams
from msa.progress import Progress


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
    gzip_level: GzipLevelOpt = _D.gzip_level,
    skip_existing: Annotated[
        bool,
        typer.Option("--skip-existing", help="With -O: skip inputs whose output exists (resumes a run)."),
    ] = False,
    scheduler: Annotated[
        Optional[str],
        typer.Option(
            "--scheduler",
            help="Align on this Dask cluster (scheduler address, tcp://host:8786); its workers must see the "
            "inputs and outputs at the same paths. A large family is split across them. Needs msa\\[dask].",
        ),
    ] = None,
    connect_timeout: ConnectTimeoutOpt = CONNECT_TIMEOUT,
    workers: Annotated[
        Optional[int],
        typer.Option(
            "--workers", min=1,
            help="Start a local Dask cluster of N workers for the run: spread over the GPUs with "
            "dask-cuda and a GPU (several may share one), else N CPU worker processes. Needs msa\\[dask].",
        ),
    ] = None,
    gpus: Annotated[
        Optional[int],
        typer.Option("--gpus", min=1, help="A local Dask cluster on N GPUs, several workers on each (fewer on few "
                     "cores; --workers sets how many in all); -o: one large family split across them. "
                     "Needs msa\\[dask-gpu]."),
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
    weights: WeightsOpt = WeightsChoice(_D.weights),
    keep_duplicates: KeepDupOpt = _D.keep_duplicates,
    refine: RefineOpt = _D.refine,
    consistency: ConsistencyOpt = _D.consistency,
    consistency_draw: ConsistencyDrawOpt = DrawChoice(_D.consistency_draw),
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
            weights=weights, keep_duplicates=keep_duplicates, refine=refine, seed=seed, threads=threads, device=device,
            quiet=quiet, consistency=consistency, consistency_draw=consistency_draw,
            gzip_level=gzip_level, **_tree_choice(tree),
        )
        if tree_out is not None and params.tree_file is not None:
            raise ValueError("--tree-out with a tree file given to --tree: that file is the tree")
        _check_many_options(inputs, output, output_dir, tree_out, gzip_out, skip_existing)
        cluster = _check_cluster_options(params.device, scheduler, workers, gpus, connect_timeout)
        _check_scoring(params)  # an unknown matrix fails before any work
        memory_cap = _memory_cap(gpu_memory)
        if output_dir is not None:
            _align_many(inputs, output_dir, params, fmt.value, gzip_out, skip_existing, progress, cluster, memory_cap)
            return
        if cluster:
            if tree_out is not None:
                raise ValueError("--tree-out with a cluster: write the tree with msa tree, then align with --tree FILE")
            done = run.align_one_on_cluster(inputs[0], output, params, cluster, fmt=fmt.value, memory_cap=memory_cap)
        else:
            done = run.align_one(inputs[0], output, params, fmt=fmt.value, tree_out=tree_out, memory_cap=memory_cap)
        kind = f"{done.seq_type}, detected" if params.seq_type == "auto" else done.seq_type
        progress.note(
            f"aligned {done.sequences} sequences ({kind}) into {done.width} columns in {done.seconds:.1f} s"
        )
        if progress.verbose:
            progress.note(_output_note(output, done.nbytes))


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
    if output is not None and os.path.isdir(output):
        raise IsADirectoryError(21, "is a directory; use -O DIR for one output per input", output)
    if gzip_out or skip_existing:
        raise ValueError("--gzip and --skip-existing go with -O/--output-dir (name the -o file .gz to compress it)")


def _check_cluster_options(
    device: str, scheduler, workers, gpus, connect_timeout: float = CONNECT_TIMEOUT
) -> dict | None:
    """``--scheduler``/``--workers``/``--gpus``: one, Dask installed (msa.run.cluster_options)."""
    return run.cluster_options(
        device, scheduler=scheduler, workers=workers, gpus=gpus, connect_timeout=connect_timeout
    )


def _align_many(
    inputs: list[str], output_dir: str, params: AlignParams, fmt: str, gzip_out: bool, skip_existing: bool,
    progress: Progress, cluster: dict | None = None, memory_cap: int | None = None,
) -> None:
    """``align -O``: the run planned, then run (msa.run); a failed family is one line, then exit 1."""
    families = run.plan_run(inputs, output_dir, fmt=fmt, gzip=gzip_out, reads=run.tree_file_read(params))

    def report(result: run.FamilyResult) -> None:
        if result.status == "failed":
            progress.error(result.error or result.input)
        elif progress.verbose:
            progress.note(
                f"{result.input}: {result.sequences} sequences into {result.width} columns "
                f"in {result.seconds:.1f} s"
            )

    summary = run.run_families(
        families, params, fmt=fmt, skip_existing=skip_existing, cluster=cluster, early_start=True,
        memory_cap=memory_cap, progress=progress, on_result=report,
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
