"""The options the commands share (choices and defaults from msa.params), and turning them into AlignParams."""
from __future__ import annotations

import contextlib
import enum
import math
import os
from typing import Annotated, Iterator, Optional

import typer

from msa.backends import GB
from msa.params import (
    AlignParams, CONSISTENCY_AUTO_SAMPLES, CONSISTENCY_DRAWS, DEVICES, FORMATS, GUIDE_TREE_METHODS, LINKAGES, MST_TREE_MAX,
    NUCLEOTIDE_SCHEME, WEIGHTS, PARTTREE_SPLITS, PROTEIN_SCHEME, REFINE_AUTO_MAX, REFINE_AUTO_ROUNDS, SEQ_TYPES,
    TREE_DISTANCES,
)


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
WeightsChoice = enum.Enum("WeightsChoice", {d: d for d in WEIGHTS}, type=str)  # type: ignore[misc]
DrawChoice = enum.Enum("DrawChoice", {d: d for d in CONSISTENCY_DRAWS}, type=str)  # type: ignore[misc]


# Options shared by `align` and `tree`, declared once.
InputArg = Annotated[str, typer.Argument(metavar="IN", help="FASTA file (protein or nucleotides), gzipped or not; '-' reads stdin.")]
DeviceOpt = Annotated[
    DeviceChoice, typer.Option("--device", help="auto picks cuda when CuPy finds a GPU, else cpu (msa align of one input: the backend a cost model of its size and sequence lengths predicts finishes first).")
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
WeightsOpt = Annotated[
    WeightsChoice,
    typer.Option(
        "--weights",
        help="Sequence weights in the profile merges: tree (ClustalW's, from the guide tree: a dense "
        "cluster of close relatives weighs less) or none (every sequence once, as in FAMSA).",
    ),
]
KeepDupOpt = Annotated[
    bool, typer.Option("--keep-duplicates", help="Align identical sequences separately instead of once.")
]
SeedOpt = Annotated[
    int,
    typer.Option(
        "--seed",
        help="Seed of every random draw, so a run repeats byte for byte: PartTree's reference picks and "
        "split samples, the refinement's candidate splits (and random library partners where its method "
        "uses them), and the sequences --consistency draws from "
        "each side of a merge (the ties of --consistency-draw isolated).",
    ),
]
RefineOpt = Annotated[
    str,
    typer.Option(
        "--refine", metavar="N|auto|off",
        help="Iterative refinement after the progressive alignment (realign two halves of the rows, keep "
        "what agrees better with pairwise alignments): N rounds, off, or auto "
        + f"({REFINE_AUTO_ROUNDS} rounds up to {REFINE_AUTO_MAX} distinct sequences, where it pays).",
    ),
]
ConsistencyOpt = Annotated[
    str,
    typer.Option(
        "--consistency", metavar="N|auto|off",
        help="Where two large clusters merge, or a large one takes in a few sequences, draw up to N "
        "sequences from each side, align their pairs and favour the columns they agree on "
        "(T-Coffee's consistency at the top of the tree; slower, "
        "more accurate on real families). off: FAMSA's merges; auto: "
        + f"{CONSISTENCY_AUTO_SAMPLES} past {REFINE_AUTO_MAX} distinct sequences, where --refine auto stops.",
    ),
]
ConsistencyDrawOpt = Annotated[
    DrawChoice,
    typer.Option(
        "--consistency-draw",
        help="Which sequences each side of a merge gives --consistency: isolated (its members farthest "
        "from their nearest neighbours first: a random draw takes mostly near copies from dense "
        "clusters) or random.",
    ),
]
GpuMemoryOpt = Annotated[
    Optional[float],
    typer.Option(
        "--gpu-memory", metavar="GB",
        help="Cap the GPU memory msa's arrays may use, in GB (10^9 bytes): work runs in smaller "
        "pieces to fit (the CUDA context, a few hundred MB, comes on top); an input that cannot "
        "fit ends with the cap it needs. Not part of the result. Ignored (with a note) on the CPU.",
    ),
]
GzipLevelOpt = Annotated[
    int,
    typer.Option("--gzip-level", min=1, max=9, help="gzip's level for .gz outputs: 1 fastest, 9 smallest."),
]
ConnectTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--connect-timeout", min=0.1, metavar="SECONDS",
        help="With --scheduler: how long the scheduler has to accept the connection and answer.",
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


InFormatOpt = Annotated[
    str,
    typer.Option(
        "--in-format",
        help="Format of the existing alignment(s): auto (.a2m/.a3m by name, else aligned FASTA; "
        "A3M when rows differ in width and have lower-case inserts); fasta, a2m, a3m, clustal, "
        "stockholm, phylip, phylip-relaxed (read by msa itself), or another format Biopython's "
        "Bio.Align reads (msf, nexus, ...). Gzipped files are detected.",
    ),
]
OutputOpt = Annotated[
    Optional[str], typer.Option("--output", "-o", help="Output file ('.gz' compresses); stdout if omitted.")
]


@contextlib.contextmanager
def _naming_in_format(in_formats: dict[str, tuple[str, str]]) -> Iterator[None]:
    """An alignment read as FASTA that is not: its error names the option that gives its format.

    ``in_formats``: path -> (the option, its value) for each alignment read."""
    try:
        yield
    except ValueError as exc:
        text = str(exc)
        for path, (option, value) in in_formats.items():
            label = "stdin" if path == "-" else path
            if value in ("auto", "fasta") and text.startswith(f"{label}: not FASTA ("):
                raise type(exc)(f"{text}; give its format with {option} clustal|stockholm|phylip|...") from None
        raise


def _check_scoring(params: AlignParams) -> None:
    """An unknown matrix, or one of the wrong kind for a given --seq-type, fails before any work."""
    if params.matrix is not None:
        from msa.alphabet import load_matrix  # local: (c) NumPy: not for commands that align nothing (docs/start-up.md)

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
