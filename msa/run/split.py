"""One family split across workers along its own guide tree, byte-identical to aligning it whole.

A family too large for one GPU's time or memory (``msa align big.fa -o out.fa
--gpus 2``; :mod:`msa.run.dask` carries the steps as Dask tasks) is aligned in
four steps, each a function here that any process can run:

1. :func:`plan_split` (one worker): the family read, its duplicates found and its
   guide tree built as the one-process run builds them; the tree cut below its
   top (:func:`msa.tree.guide_tree.cut_tree`) into subtrees of at most a share of
   the sequences, packed into a few :class:`Piece` s (tasks) of about equal residues,
   each with the rows it will write: its sequences' records, their headers and
   where they go in the output.
2. :func:`align_piece` (a worker per piece): the progressive stage over the
   piece's subtrees (shared launches), keeping every residue's column within its
   subtree's root and returning the roots' profiles (a few hundred kB).
3. :func:`merge_top` (one worker): the merges above the cut, from the roots'
   profiles (msa.progressive.align_profiles): every merge of the whole tree has
   then been made, with the same inputs, so the columns are the one-process run's.
   It gives each subtree a map from its root's columns to the final ones, and the width.
4. :func:`write_piece` (the piece's worker): once the width is known, every record's
   place in the FASTA output is known, so each piece writes its own rows into the one
   output file, reserved beforehand at its full size, through a memory map
   (:func:`msa.io.fasta.fill_mapped`): no second pass over the rows, which at 10^6
   sequences were 24 GB.

Only FASTA is written so (every other format interleaves the rows, and gzip is
a stream), and a family that refinement would change, or aligned with ``--consistency``
(whose bonuses the pieces do not take), needs its whole alignment: msa.run.dask aligns
those on one worker.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from msa.alphabet import load_matrix
from msa.backends.cpu.records import fill_records
from msa.io.fasta import LINE_WIDTH, fasta_size, fill_mapped, header_bytes, row_template, wrapped_line
from msa.params import AlignParams, GapCosts, gap_costs
from msa.progressive import align_profiles, progressive_profiles
from msa.seqdb import SeqDB
from msa.seqops import take_ranges
from msa.tree.guide_tree import GuideTree, cut_tree
from msa.tree.weights import family_weights

#: A family whose input file is larger is split across the workers of a run that has several,
#: smaller ones are aligned whole on one worker (``$MSA_SPLIT_FAMILY_BYTES`` overrides it).
#: The split has not yet paid on a family one GPU holds: on 2 H200 the 10^6
#: family PF00078.10000 x 100 (0.2 GB) took 44.7 s split against 29.1 s on one GPU, and the
#: 10^7 family PF00037.10000 x 1000 (0.53 GB) 137.6 s split against 120 s on one H100:
#: the plan's worker reads and builds the whole tree, and the pieces' chains of
#: merges are nearly as deep as the whole tree's (docs/scale-out.md). So only a family past
#: 1 GiB (~3x10^6 sequences of 300 residues), where one GPU's memory may not hold the aligning
#: stage, is split.
SPLIT_FAMILY_BYTES = 1 << 30
#: The environment variable that sets SPLIT_FAMILY_BYTES for a run (benchmarks/split_family.py).
SPLIT_BYTES_ENV = "MSA_SPLIT_FAMILY_BYTES"


def split_family_bytes() -> int:
    """The size past which a family is split: ``$MSA_SPLIT_FAMILY_BYTES``, else SPLIT_FAMILY_BYTES."""
    value = os.environ.get(SPLIT_BYTES_ENV, "")
    return int(value) if value.isdigit() else SPLIT_FAMILY_BYTES
#: Pieces (tasks) per worker: one, a forest of all its subtrees in shared launches. The subtrees
#: are nearly as deep as the whole tree (PF00078.10000 x 10: 745 of its 847 levels below a cut
#: at 1/16 of the sequences), and a level costs launches and a host round trip whatever its
#: size: two pieces on one GPU paid the levels twice (10^6 on 2 H200: 53.7 s against one
#: GPU's 44.5 s).
PIECES_PER_WORKER = 1
#: Subtrees per piece the cut aims at: the pieces are then packed from them to about equal residues.
SUBTREES_PER_PIECE = 4
#: Most merges above the cut: where the top of the tree is a chain, each cut peels a few
#: sequences off; past this many the cut stops (the merges above it run on one worker, as
#: they run one per level on one GPU).
MAX_TOP_MERGES = 1 << 12


@dataclass(frozen=True)
class SplitPlan:
    """What the run keeps of a split family: its size, resolved params and gap costs, the tree
    above the cut (``top``, over subtrees of ``sizes[k]`` sequences, counted by their weights)
    and each piece's subtrees."""

    sequences: int
    residues: int
    params: AlignParams
    gaps: GapCosts
    top: GuideTree
    sizes: np.ndarray
    pieces: tuple[tuple[int, ...], ...]
    head_bytes: int

    def output_size(self, width: int) -> int:
        """Bytes of the FASTA output at ``width`` columns."""
        return fasta_size(self.head_bytes, self.sequences, width, LINE_WIDTH)


@dataclass
class Piece:
    """A task's subtrees (``subtrees``, indices into the plan's; ``dbs``, ``trees`` and ``weights``
    theirs, the weights the whole family's tree gives their sequences, or None) and
    the records whose rows it writes: ``records`` (ascending input indices), each one's sequence
    in the subtrees' sequences laid end to end (``ids``), their ``>header`` lines (``heads``,
    record ``k``'s at ``head_off[k]``) and the header bytes of all records before each one
    (``head_before``: with the width, a record's place in the output)."""

    subtrees: tuple[int, ...]
    dbs: list[SeqDB]
    trees: list[GuideTree]
    weights: list[np.ndarray | None]
    records: np.ndarray
    ids: np.ndarray
    heads: np.ndarray
    head_off: np.ndarray
    head_before: np.ndarray


@dataclass
class AlignedPiece:
    """A piece's progressive stage: each subtree's root profile (by its index in the plan), and
    every residue's column within its root (the subtrees' residues end to end)."""

    profiles: dict[int, np.ndarray]
    columns: np.ndarray


def plan_split(prepared, tree: GuideTree, pieces: int) -> tuple[SplitPlan, list[Piece]]:
    """Cut ``tree`` (over ``prepared.unique``, a msa.pipeline.PreparedFamily) into subtrees of at
    most 1/(``pieces`` x SUBTREES_PER_PIECE) of the sequences and pack them, largest first,
    into ``pieces`` pieces of about equal residues (fewer where there are fewer subtrees). A family
    that refinement or consistency bonuses would change is not split (its pieces take neither)."""
    unique = prepared.unique
    n = len(unique)
    if prepared.params.needs_whole(n):
        raise ValueError("a family refined or with consistency bonuses is aligned whole, not split")
    cut = cut_tree(tree, max(1, -(-n // (pieces * SUBTREES_PER_PIECE))), MAX_TOP_MERGES)
    weights = family_weights(tree, prepared.params)  # the whole tree's, so every merge is the one-process run's
    sub_weights = [None if weights is None else weights[leaves] for leaves in cut.leaves]
    lengths = unique.lengths  # once: a SeqDB's lengths are computed on each use (O(n) per subtree was
    # quadratic, 21.5 s of planning 10^7 sequences cut into ~4,000 subtrees)
    residues = np.array([int(lengths[leaves].sum()) for leaves in cut.leaves], dtype=np.int64)
    packed: list[list[int]] = [[] for _ in range(min(pieces, len(cut.roots)))]
    load = np.zeros(len(packed), dtype=np.int64)
    for s in np.argsort(-residues, kind="stable").tolist():  # largest first, to the lightest piece
        p = int(np.argmin(load))
        packed[p].append(s)
        load[p] += residues[s]
    db = prepared.db
    heads = header_bytes(db.descriptions)
    head_len = np.fromiter(map(len, heads), dtype=np.int64, count=len(heads))
    head_before = np.zeros(len(heads) + 1, dtype=np.int64)
    np.cumsum(head_len, out=head_before[1:])
    all_heads = np.frombuffer(b"".join(heads), dtype=np.uint8)
    del heads
    # Each distinct sequence's piece, and its index in its piece's sequences laid end to end.
    piece_of = np.empty(n, dtype=np.int64)
    index_in = np.empty(n, dtype=np.int64)
    for p, subtrees in enumerate(packed):
        at = 0
        for s in subtrees:
            leaves = cut.leaves[s]
            piece_of[leaves] = p
            index_in[leaves] = at + np.arange(len(leaves))
            at += len(leaves)
    record_piece = piece_of[prepared.inverse]
    out = []
    for p, subtrees in enumerate(packed):
        records = np.flatnonzero(record_piece == p)
        off = np.zeros(len(records) + 1, dtype=np.int64)
        np.cumsum(head_len[records], out=off[1:])
        out.append(Piece(
            tuple(subtrees), [_sequences(unique, lengths, cut.leaves[s]) for s in subtrees],
            [cut.trees[s] for s in subtrees], [sub_weights[s] for s in subtrees],
            records, index_in[prepared.inverse[records]], _take(all_heads, head_before[records], head_len[records]),
            off, head_before[records],
        ))
    sizes = cut.sizes if weights is None else np.array([int(w.sum()) for w in sub_weights], dtype=np.int64)
    plan = SplitPlan(
        len(db), int(db.offsets[-1]), prepared.params, gap_costs(prepared.params, len(db)), cut.top, sizes,
        tuple(tuple(s) for s in packed), int(head_before[-1]),
    )
    return plan, out


def align_piece(piece: Piece, plan: SplitPlan, backend) -> AlignedPiece:
    """The progressive stage of a piece's subtrees, in shared launches."""
    done = progressive_profiles(piece.dbs, piece.trees, load_matrix(plan.params.matrix), [plan.gaps] * len(piece.dbs),
                                backend, piece.weights)
    return AlignedPiece({s: profile for s, (_, _, profile) in zip(piece.subtrees, done)},
                        np.concatenate([columns for columns, _, _ in done]))


def merge_top(plan: SplitPlan, profiles: Sequence[Mapping[int, np.ndarray]], backend) -> tuple[list[np.ndarray], int]:
    """The merges above the cut, from the subtrees' root ``profiles`` (each piece's, by subtree:
    AlignedPiece.profiles): each subtree's map from its root's columns to the final ones, and
    the width."""
    ordered = [of_piece[s] for s in range(len(plan.sizes)) for of_piece in profiles if s in of_piece]
    return align_profiles(ordered, plan.sizes, plan.top, load_matrix(plan.params.matrix), plan.gaps, backend)


def write_piece(path: str, piece: Piece, aligned: AlignedPiece, maps: list[np.ndarray], width: int) -> None:
    """A piece's rows written in place into the output file at ``path`` (already the output's
    size, its space reserved), the other pieces' bytes left as they are."""
    sequences = SeqDB.joined(piece.dbs) if len(piece.dbs) > 1 else piece.dbs[0]
    starts = sequences.offsets[np.cumsum([0] + [len(db) for db in piece.dbs])]
    final = np.concatenate([
        maps[s][aligned.columns[lo:hi]] for s, lo, hi in zip(piece.subtrees, starts[:-1].tolist(), starts[1:].tolist())
    ])
    template = row_template(width, LINE_WIDTH)
    line = wrapped_line(width, LINE_WIDTH)
    rec_off = piece.head_before + piece.records * line
    rec_end = rec_off + np.diff(piece.head_off) + line

    def fill(out: np.ndarray, at: np.ndarray, lo: int, hi: int) -> None:
        fill_records(out, at, piece.heads, piece.head_off[lo : hi + 1], template, LINE_WIDTH, piece.ids[lo:hi],
                     sequences.offsets, final, sequences.residues)

    fd = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    try:
        if not fill_mapped(fd, rec_off, rec_end, fill):
            raise OSError(f"{path}: the file system cannot map the output (a split family is written in place)")
    finally:
        os.close(fd)


def _sequences(unique: SeqDB, unique_lengths: np.ndarray, leaves: np.ndarray) -> SeqDB:
    """The sequences at ``leaves`` (ascending) without their names (a piece carries none)."""
    starts, lengths = unique.offsets[leaves], unique_lengths[leaves]
    offsets = np.zeros(len(leaves) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    blank = [""] * len(leaves)
    return SeqDB(blank, blank, _take(unique.residues, starts, lengths), offsets, _take(unique.codes, starts, lengths))


def _take(src: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    return take_ranges(src, np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64))
