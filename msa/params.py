"""Every tunable of an alignment run, with its default, in one place.

The CLI, the Python API and the README read their defaults from here, so they
cannot drift apart.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, fields, replace
from typing import Literal, get_args

#: Default mst_tree_max per backend: FAMSA's exact single-linkage LCS tree up to
#: this many sequences. On one H100 Prim's MST takes ~0.3 s at 10^4 sequences and
#: ~5.5 s at 10^5 (docs/guide-tree.md). On 2 CPU cores it takes 3-11 s for a real family
#: of 10^4 (whole alignments of balifam10000-dev in 1.09x FAMSA's time on the same cores)
#: and ~100 s for 32,768 sequences of ~300 residues, where FAMSA's whole alignment takes
#: 109 s; PartTree, which takes over past the limit, loses 3 SP and 6 TC points at 10^4.
MST_TREE_MAX = {"cuda": 200_000, "cpu": 32_768}

#: Scores are integers: matrix entries and gap costs times this factor
#: (FAMSA's ``cost_cast_factor``), so CPU and GPU do the same arithmetic.
FIXED_POINT = 1000

# The choices of each option, defined once: the type, and its values as a tuple for
# the CLI's choices and AlignParams' validation (in the order the CLI lists them).
GuideTreeMethod = Literal["auto", "parttree", "upgma", "single"]
TreeDistance = Literal["lcs", "kmer", "sw"]
#: PartTree's splits take the LCS or the 6-mer distance only.
PartTreeDistance = Literal["lcs", "kmer"]
Linkage = Literal["single", "upgma"]
Device = Literal["auto", "cpu", "cuda"]
#: Sequence weights of the progressive merges: ClustalW's from the guide tree, or none (FAMSA's).
Weights = Literal["tree", "none"]
PickTree = Literal["mafft", "single", "link"]
#: Which sequences each side of a guided merge gives the consistency library (msa.consistency):
#: its most isolated members, or a random draw.
ConsistencyDraw = Literal["isolated", "random"]
PartTreeSplit = Literal["sample", "picks"]
#: ``auto`` detects protein or nucleotides from the residues (msa.alphabet.detect_seq_type).
SeqType = Literal["auto", "protein", "dna", "rna"]
#: The output formats (msa.io.formats writes them); here, with the other choices, so that the
#: CLI's options are made without importing msa.io (NumPy).
OutputFormat = Literal["fasta", "clustal", "stockholm", "phylip", "phylip-relaxed", "a2m", "a3m"]

GUIDE_TREE_METHODS: tuple[GuideTreeMethod, ...] = get_args(GuideTreeMethod)
TREE_DISTANCES: tuple[TreeDistance, ...] = get_args(TreeDistance)
PARTTREE_DISTANCES: tuple[PartTreeDistance, ...] = get_args(PartTreeDistance)
LINKAGES: tuple[Linkage, ...] = get_args(Linkage)
DEVICES: tuple[Device, ...] = get_args(Device)
WEIGHTS: tuple[Weights, ...] = get_args(Weights)
PICK_TREES: tuple[PickTree, ...] = get_args(PickTree)
CONSISTENCY_DRAWS: tuple[ConsistencyDraw, ...] = get_args(ConsistencyDraw)
PARTTREE_SPLITS: tuple[PartTreeSplit, ...] = get_args(PartTreeSplit)
FORMATS: tuple[OutputFormat, ...] = get_args(OutputFormat)
SEQ_TYPES: tuple[SeqType, ...] = get_args(SeqType)
NUCLEOTIDE_TYPES = ("dna", "rna")
#: ``--refine``'s words; any other value is a number of rounds.
REFINE_MODES = ("auto", "off")
#: ``--refine auto`` refines families of at most REFINE_AUTO_MAX distinct sequences with
#: REFINE_AUTO_ROUNDS rounds: on balifam100 (99-242) 20 rounds of 8 candidates gained 0.6 SP /
#: 1.3 TC points for ~6x the alignment's CPU time (100 rounds of 16: 0.7 / 1.6 for ~38x); on
#: balifam1000 families (745-1141) 0.1 / 0.2 for ~5x (docs/accuracy.md).
REFINE_AUTO_ROUNDS = 20
REFINE_AUTO_MAX = 250
#: ``--weights tree`` gives sequence i the integer weight max(1, rint(WEIGHT_SCALE x w_i / mean
#: w)), w_i its ClustalW weight from the guide tree (msa.tree.weights), so profiles stay integer
#: counts and both backends add the same numbers. A coarse scale also floors a sequence deep in
#: a dense cluster at a quarter of the mean weight (docs/accuracy.md: scales 4-32 measured).
WEIGHT_SCALE = 4
#: Families of more distinct sequences than this are aligned unweighted: a weighted profile's
#: counts are ~WEIGHT_SCALE times its sequences, and the DP's int64 scores grow with the product
#: of two profiles' counts; up to here they stay below those of an unweighted 2.6 x 10^5.
WEIGHTS_MAX_SEQUENCES = 1 << 16
#: ``--consistency N`` (msa.consistency): the merges whose two sides both hold at least this
#: many sequences get N x N sampled pairwise alignments; a cell gains na x nb x CONSISTENCY_WEIGHT
#: x the matrix's mean identity score x the share of those pairs that align it, each pair counted
#: by its alignment's identity (T-Coffee's primary library weight; on balifam1000 minimum sides
#: 8, 16, 32 and weights 0.25-2 were measured: docs/accuracy.md).
CONSISTENCY_MIN_SIDE = 16
CONSISTENCY_WEIGHT = 1.0
#: At most this many merges take bonuses by that rule, those whose smaller side is the largest
#: (and at most as many by the next): a family of 10^4 has ~150-210 merges with both sides of 16
#: (balifam10000-dev), one of 10^6 tens of thousands, whose N x N pairs' library would not fit
#: in memory (~0.3 GB here at N = 8, ~300 residues).
CONSISTENCY_MAX_MERGES = 1024
#: Single linkage grows a large cluster by taking in one or a few sequences at a time, merges
#: that rule never guides. So a family's n / CONSISTENCY_ABSORB_PER merges (n: its distinct
#: sequences) whose larger side is the largest (at least CONSISTENCY_MIN_SIDE) take bonuses
#: too: up to N drawn from each side, every sequence of a smaller side (docs/accuracy.md: over three seeds +0.2 SP / +1.7 TC on balifam1000, +0.6 / +2.7 on
#: balifam10000-dev).
CONSISTENCY_ABSORB_PER = 10
#: Families of more distinct sequences than this are aligned without bonuses: the library and
#: the maps its walks read grow with the family (docs/accuracy.md).
CONSISTENCY_MAX_SEQUENCES = 1 << 16
#: ``--consistency``'s words; any other value is a number of sequences drawn from each side.
CONSISTENCY_MODES = ("auto", "off")
#: ``--consistency auto`` draws CONSISTENCY_AUTO_SAMPLES a side in the families ``--refine auto``
#: leaves alone (more than REFINE_AUTO_MAX distinct sequences): there it gains most of msa's lead
#: over FAMSA 2 (balifam1000, balifam10000-dev), where refinement gains 0.1; on balifam100, which
#: refinement covers, it lost 0.4-0.5 SP (docs/accuracy.md).
CONSISTENCY_AUTO_SAMPLES = 8


@dataclass(frozen=True)
class Scheme:
    """The scoring defaults of one kind of sequence: matrix name and gap costs."""

    matrix: str
    gap_open: float
    gap_extend: float
    terminal_gap: float


#: Protein: FAMSA 2's PFASUM43 and gap costs (FAMSA's src/core/params.h, ``CParams``' defaults).
PROTEIN_SCHEME = Scheme("PFASUM43", 14.85, 1.25, 0.66)
#: Seconds ``--scheduler ADDRESS`` waits for the connection and the scheduler's first answer.
CONNECT_TIMEOUT = 10.0

#: Nucleotide match and mismatch scores of the ``NUC`` scheme (times FIXED_POINT in
#: msa.alphabet.load_matrix): A, C, G and T/U; U and T are one base. N and the
#: IUPAC ambiguity codes (and any other letter) score 0 against everything.
NUC_MATCH = 2.0
NUC_MISMATCH = -1.0
#: Nucleotide defaults: the NUC scheme and its gap costs, chosen on simulated
#: DNA families against their true alignments (docs/nucleotides.md).
NUCLEOTIDE_SCHEME = Scheme("NUC", 3.0, 1.0, 0.6)
#: Names of nucleotide scoring schemes (msa.alphabet.load_matrix builds them, not scoring-matrices).
NUCLEOTIDE_MATRICES = ("NUC",)


def check_matrix_kind(name: str, seq_type: str) -> None:
    """A one-line ValueError for a protein matrix with nucleotides or the reverse."""
    nucleotide_matrix = name.upper() in NUCLEOTIDE_MATRICES
    if seq_type in NUCLEOTIDE_TYPES and not nucleotide_matrix:
        raise ValueError(
            f"--matrix {name} is a protein matrix; {seq_type} sequences are scored with "
            f"{', '.join(NUCLEOTIDE_MATRICES)} (leave --matrix out, or give --seq-type protein)"
        )
    if seq_type not in NUCLEOTIDE_TYPES and nucleotide_matrix:
        raise ValueError(f"--matrix {name} is a nucleotide scheme; protein sequences take a protein matrix")


@dataclass(frozen=True)
class AlignParams:
    """Options of one alignment run; frozen so a run cannot change them midway."""

    #: Protein, nucleotides (dna and rna score alike) or detected from the residues.
    seq_type: SeqType = "auto"
    #: Substitution matrix and gap costs; None takes the seq type's scheme
    #: (PROTEIN_SCHEME or NUCLEOTIDE_SCHEME), filled in by ``resolved``.
    matrix: str | None = None
    gap_open: float | None = None
    gap_extend: float | None = None
    terminal_gap: float | None = None
    #: FAMSA rescales gap costs by 1 + log2(N/45)/7 for N >= 45 sequences.
    rescale_gaps: bool = True
    guide_tree: GuideTreeMethod = "auto"
    #: A Newick file to take the guide tree from instead of building one.
    tree_file: str | None = None
    partsize: int = 50
    #: Distance of PartTree's split decisions (reference sort, picks, assignment,
    #: the tree over picks): FAMSA's LCS distance, or MAFFT's original 6-mer distance.
    parttree_distance: PartTreeDistance = "lcs"
    #: PartTree drops a pick closer than this times the node's largest distance
    #: to an earlier pick (MAFFT: 0.7; 0 keeps every pick).
    thin_factor: float = 0.7
    #: Tree over a PartTree node's clusters: MAFFT's mixed linkage over the picks,
    #: single linkage over the picks, or single linkage over cluster-to-cluster
    #: links (nearest member of one cluster to the other's pick; with the 6-mer
    #: distance it falls back to single linkage over the picks).
    pick_tree: PickTree = "link"
    #: How PartTree splits a node: cutting the single-linkage tree of a random
    #: sample of ``split_sample`` members, each member going with its nearest
    #: sample member (msa.tree.sample_split; LCS distance only, 10k simulated
    #: family SP 0.906 -> 0.933, TC 0.657 -> 0.860), or MAFFT's nearest of
    #: ``partsize`` thinned picks (the 6-mer distance always uses the picks).
    parttree_split: PartTreeSplit = "sample"
    split_sample: int = 500
    #: The sampled split cuts its sample tree into clusters of at most this many
    #: members (capped by the exact-tree limit), each then gets an exact subtree.
    split_cluster_max: int = 1024
    #: Groups up to this size get an exact tree from a full distance matrix.
    exact_tree_max: int = 4096
    #: Single-linkage LCS trees (the defaults) stay exact up to this many
    #: sequences past exact_tree_max: Prim's MST computes distance rows on the
    #: fly, O(n) memory but still n^2/2 LCS pairs. None: the backend's
    #: MST_TREE_MAX (the GPU affords far more than the CPU).
    mst_tree_max: int | None = None
    #: Distance of the exact trees: FAMSA's indel075_div_lcs (more accurate on
    #: BaliFam, see docs/guide-tree.md), MAFFT's 6-mer distance, or ``sw``:
    #: 1 - S(a,b) / min(S(a,a), S(b,b)) with S the Smith-Waterman (local, affine)
    #: score under ``matrix`` and the unrescaled gap costs (msa.backends.cpu.sw;
    #: MAFFT's DPPartTree distance with a local score). PartTree's splits take
    #: only lcs or kmer (``parttree_distance``).
    distance: TreeDistance = "lcs"
    #: Linkage of exact trees and of PartTree's exact subtrees; FAMSA's default is
    #: single linkage, which beats UPGMA by about 2 SP points on BaliFam.
    linkage: Linkage = "single"
    keep_duplicates: bool = False
    #: Sequence weights in the progressive merges: ``tree`` (ClustalW's weights from the guide
    #: tree's branch lengths, up to WEIGHTS_MAX_SEQUENCES distinct sequences) or ``none`` (every
    #: sequence counts once, as in FAMSA).
    weights: Weights = "tree"
    #: Iterative refinement after the progressive stage (msa.refine): ``off``, a number of
    #: rounds, or ``auto`` (REFINE_AUTO_ROUNDS rounds up to REFINE_AUTO_MAX distinct sequences).
    refine: str = "auto"
    #: Consistency at the top merges (msa.consistency): ``off``, a number of sequences drawn
    #: from each side of every merge of two large clusters, or ``auto`` (CONSISTENCY_AUTO_SAMPLES
    #: past REFINE_AUTO_MAX distinct sequences).
    consistency: str = "auto"
    #: The sequences drawn from each side: the most isolated members (msa.consistency.isolation_rank)
    #: or ``random`` (the draw before; docs/hard-families.md measures both).
    consistency_draw: ConsistencyDraw = "isolated"
    seed: int = 0
    threads: int = 0
    device: Device = "auto"
    quiet: bool = False
    #: gzip's level for ``.gz`` outputs (1 fastest, 9 smallest).
    gzip_level: int = 6

    def __post_init__(self) -> None:
        if any(g is not None and g < 0 for g in (self.gap_open, self.gap_extend, self.terminal_gap)):
            raise ValueError("gap costs must be non-negative")
        if self.seq_type not in SEQ_TYPES:
            raise ValueError(f"unknown sequence type {self.seq_type!r}; choose {', '.join(SEQ_TYPES)}")
        if self.partsize < 2:
            raise ValueError(f"partsize must be at least 2, got {self.partsize}")
        if self.exact_tree_max < 2:
            raise ValueError(f"exact_tree_max must be at least 2, got {self.exact_tree_max}")
        if self.mst_tree_max is not None and self.mst_tree_max < 2:
            raise ValueError(f"mst_tree_max must be at least 2, got {self.mst_tree_max}")
        if self.threads < 0:
            raise ValueError(f"threads must be >= 0, got {self.threads}")
        if self.guide_tree not in GUIDE_TREE_METHODS:
            raise ValueError(f"unknown guide tree method {self.guide_tree!r}")
        if not 0.0 <= self.thin_factor < 1.0:
            raise ValueError(f"thin_factor must be in [0, 1), got {self.thin_factor}")
        if self.pick_tree not in PICK_TREES:
            raise ValueError(f"unknown pick tree {self.pick_tree!r}")
        if self.parttree_split not in PARTTREE_SPLITS:
            raise ValueError(f"unknown PartTree split {self.parttree_split!r}")
        if self.split_sample < 2:
            raise ValueError(f"split_sample must be at least 2, got {self.split_sample}")
        if self.split_cluster_max < 2:
            raise ValueError(f"split_cluster_max must be at least 2, got {self.split_cluster_max}")
        if self.parttree_distance not in PARTTREE_DISTANCES:
            raise ValueError(f"unknown PartTree distance {self.parttree_distance!r}")
        if self.linkage not in LINKAGES:
            raise ValueError(f"unknown linkage {self.linkage!r}")
        if self.distance not in TREE_DISTANCES:
            raise ValueError(f"unknown distance {self.distance!r}")
        if self.device not in DEVICES:
            raise ValueError(f"unknown device {self.device!r}")
        if self.consistency_draw not in CONSISTENCY_DRAWS:
            raise ValueError(f"unknown consistency draw {self.consistency_draw!r}; choose {', '.join(CONSISTENCY_DRAWS)}")
        if self.weights not in WEIGHTS:
            raise ValueError(f"unknown weights {self.weights!r}; choose {', '.join(WEIGHTS)}")
        if self.gzip_level not in range(1, 10):
            raise ValueError(f"gzip level must be 1 to 9, got {self.gzip_level}")
        if self.consistency not in CONSISTENCY_MODES and not (
                self.consistency.isascii() and self.consistency.isdigit() and int(self.consistency) > 0):
            raise ValueError(f"consistency must be a number of sequences (at least 1), "
                             f"{' or '.join(CONSISTENCY_MODES)}; got {self.consistency!r}")
        if self.refine not in REFINE_MODES and not (self.refine.isdigit() and self.refine.isascii()):
            raise ValueError(f"refine must be a number of rounds, {' or '.join(REFINE_MODES)}; got {self.refine!r}")

    def refine_rounds(self, n_distinct: int) -> int:
        """Rounds of refinement for a family of ``n_distinct`` distinct sequences."""
        if self.refine == "off":
            return 0
        if self.refine == "auto":
            return REFINE_AUTO_ROUNDS if n_distinct <= REFINE_AUTO_MAX else 0
        return int(self.refine)

    def consistency_samples(self, n_distinct: int) -> int:
        """Sequences drawn from each side of a large merge (msa.consistency) in a family of
        ``n_distinct`` distinct sequences; 0: no bonuses."""
        if self.consistency == "off" or not 2 <= n_distinct <= CONSISTENCY_MAX_SEQUENCES:
            return 0
        if self.consistency == "auto":
            return CONSISTENCY_AUTO_SAMPLES if n_distinct > REFINE_AUTO_MAX else 0
        return int(self.consistency)

    def needs_whole(self, n_distinct: int) -> bool:
        """Whether refinement or consistency bonuses, which a split family's pieces do not take
        (msa.run.split), need the family's whole alignment."""
        return self.refine_rounds(n_distinct) > 0 or self.consistency_samples(n_distinct) > 0

    def with_(self, **changes: object) -> "AlignParams":
        return replace(self, **changes)

    @property
    def nucleotide(self) -> bool:
        return self.seq_type in NUCLEOTIDE_TYPES

    def resolved(self, seq_type: str | None = None) -> "AlignParams":
        """These params for a known sequence type: ``seq_type`` (the detected one)
        when this one is ``auto``, and the type's scheme where matrix or gap costs
        are None. A protein matrix for nucleotides (or the reverse) is a ValueError.
        """
        kind = self.seq_type if self.seq_type != "auto" else (seq_type or "protein")
        scheme = NUCLEOTIDE_SCHEME if kind in NUCLEOTIDE_TYPES else PROTEIN_SCHEME
        out = replace(
            self,
            seq_type=kind,
            **{f: getattr(scheme, f) for f in ("matrix", "gap_open", "gap_extend", "terminal_gap")
               if getattr(self, f) is None},
        )
        check_matrix_kind(out.matrix, kind)
        return out

    def __repr__(self) -> str:
        changed = [
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)
            if getattr(self, f.name) != f.default
        ]
        return f"AlignParams({', '.join(changed)})"


@dataclass(frozen=True)
class GapCosts:
    """Integer gap penalties (negative numbers) for one run, after rescaling."""

    open: int
    extend: int
    term_open: int
    term_extend: int


@functools.cache
def gap_costs(params: AlignParams, n_sequences: int) -> GapCosts:
    """FAMSA's fixed-point gap penalties, rescaled with the number of input sequences.

    ``params`` unresolved (gap costs None) take the protein scheme's costs.

    ``n_sequences`` counts duplicates too, as FAMSA does; below 45 (e.g. 1) the
    costs are not rescaled (the SW tree distance uses them so). Built once per
    (params, n): the tree and progressive stages ask for them by value.
    """
    if params.gap_open is None or params.gap_extend is None or params.terminal_gap is None:
        params = params.resolved()
    scale = 1.0
    if params.rescale_gaps and n_sequences >= 45:
        scale = 1.0 + math.log2(n_sequences / 45) / 7

    def fixed(cost: float) -> int:
        base = _round_half_away(-FIXED_POINT * cost)
        return int(base * scale)  # C cast: truncation toward zero

    return GapCosts(
        open=fixed(params.gap_open),
        extend=fixed(params.gap_extend),
        term_open=fixed(params.terminal_gap),
        term_extend=fixed(params.terminal_gap),
    )


def _round_half_away(x: float) -> int:
    return int(math.copysign(math.floor(abs(x) + 0.5), x))
