"""``msa tree`` (the guide tree only) and ``msa score`` (SP and TC against a reference)."""
from __future__ import annotations

import json
from typing import Annotated, Optional

import typer

from msa import run
from msa.cli.app import app
from msa.cli.common import _errors, _plain
from msa.cli.options import (
    DeviceChoice, DeviceOpt, DistanceChoice, DistanceOpt, ExactOpt, GpuMemoryOpt, InputArg, KeepDupOpt,
    LinkageChoice, LinkageOpt, MstOpt, PartsizeOpt, QuietOpt, SeedOpt, SeqTypeChoice, SeqTypeOpt,
    SplitChoice, SplitDistanceOpt, SplitOpt, ThreadsOpt, TreeMethod, VerboseOpt, _D, _memory_cap,
    _naming_in_format, _params, _tree_options,
)
from msa.progress import Progress


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
    with _errors(), Progress(quiet=quiet, verbose=verbose).running():
        params = _params(
            guide_tree=method, seq_type=seq_type,
            **_tree_options(partsize, exact_tree_max, mst_tree_max, distance, linkage, parttree_split, parttree_distance),
            keep_duplicates=keep_duplicates, seed=seed, threads=threads, device=device, quiet=quiet,
        )
        run.tree_one(input, output, params, _memory_cap(gpu_memory))


@app.command()
def score(
    test: Annotated[str, typer.Argument(metavar="TEST", help="The alignment to score (aligned FASTA, A2M/A3M, or --in-format).")],
    ref: Annotated[str, typer.Argument(metavar="REF", help="The reference alignment (aligned FASTA, A2M/A3M, or --ref-format).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print every count as one JSON object.")] = False,
    in_format: Annotated[
        str,
        typer.Option(
            "--in-format",
            help="Format of TEST (and of REF unless --ref-format): auto (aligned FASTA, or A3M when rows "
            "differ in width and have lower-case inserts); fasta, a2m, a3m, clustal, stockholm, phylip, "
            "phylip-relaxed (read by msa itself), or another format Biopython's Bio.Align reads (msf, "
            "nexus, ...). Gzipped files are detected.",
        ),
    ] = "auto",
    ref_format: Annotated[
        Optional[str], typer.Option("--ref-format", help="Format of REF, as --in-format (default: --in-format).")
    ] = None,
) -> None:
    """Score an alignment against a reference: SP (the Q score) and TC."""
    ref_as = in_format if ref_format is None else ref_format
    with _errors(), _naming_in_format({ref: ("--ref-format", ref_as), test: ("--in-format", in_format)}):
        from msa.scoring import score_files  # local: (c) NumPy: not for --help (docs/start-up.md, "Commands that align nothing")

        result = score_files(test, ref, in_format, ref_as)
        if as_json:
            typer.echo(json.dumps(result, sort_keys=True, default=_plain))
        else:
            typer.echo(f"SP (Q)\t{float(result['sp']):.4f}\nTC\t{float(result['tc']):.4f}")
