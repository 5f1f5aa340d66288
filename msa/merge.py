"""Existing alignments as profiles: ``msa merge`` (two alignments) and ``msa add`` (new sequences into one).

An existing alignment becomes one profile table (:func:`msa.profile.block_counts`,
from its residues' columns; its all-gap columns left out), and the merges run
on the backend exactly as the progressive stage runs them: ``merge`` is one
``profile_align`` of the two profiles; ``add`` is the backend's ``profile_slots``,
independent merges of the existing profile with each new sequence, which tells
where each new residue falls among the profile's columns. Each side's columns
keep their order and every row its residues, so the existing rows change only by
the gap columns put between their columns.

Gap costs are rescaled for the number of sequences of the result, as
``msa align`` would for the same rows.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import numpy as np

from msa.alignment import AlignedRows, _ranges_of, insert_columns
from msa.alphabet import detect_seq_type, load_matrix
from msa.params import NUCLEOTIDE_TYPES, AlignParams, gap_costs
from msa.profile import AlignBatch, block_counts, gap_vector
from msa.progress import current
from msa.seqdb import SeqDB

def _settle(params: AlignParams, dbs: list[SeqDB], labels: list[str]) -> AlignParams:
    """``params`` resolved for the inputs' sequence type: with ``auto``, each input is
    detected (msa.alphabet.detect_seq_type) and protein with nucleotides is a
    one-line error; the note on stderr says what was found."""
    if params.seq_type != "auto":
        return params.resolved()
    kinds = [detect_seq_type(db.residues, db.offsets) for db in dbs]
    nucleotide = [k in NUCLEOTIDE_TYPES for k in kinds]
    if any(nucleotide) and not all(nucleotide):
        found = ", ".join(f"{label} {kind}" for label, kind in zip(labels, kinds))
        raise ValueError(f"protein and nucleotides do not align together ({found}; detected)")
    current().note(f"sequence type: {kinds[0]} (detected; --seq-type sets it)")
    return params.resolved(kinds[0])


def _profile(
    flat: tuple[SeqDB, np.ndarray], width: int, seq_type: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, SeqDB]:
    """(counts, kept columns, rank of every residue's column among them, the rows' SeqDB) of an
    alignment ``width`` columns wide, given as its :func:`_flat` rows and columns."""
    db, columns = flat
    db = db.encoded(seq_type)
    used = np.zeros(width, dtype=bool)  # columns that hold a residue: O(residues), no sort
    used[columns] = True
    kept = np.flatnonzero(used)
    rank = (np.cumsum(used) - 1)[columns]
    return block_counts(db.codes, db.offsets, rank, len(kept)), kept, rank, db


def merge_alignments(a: AlignedRows, b: AlignedRows, params: AlignParams, backend) -> AlignedRows:
    """Align alignment ``b`` to alignment ``a`` (profile to profile); A's rows, then B's.

    Columns that are gaps in every row of a side are dropped; the others keep
    their order, and every row its residues.
    """
    return prepare_merge(a, b, params).align(backend)


@dataclass(frozen=True)
class Merge:
    """The host side of a merge: parameters settled for the inputs, each side's profile."""

    a: AlignedRows
    b: AlignedRows
    params: AlignParams
    sides: tuple[tuple[np.ndarray, np.ndarray, np.ndarray, SeqDB], ...]  # _profile of a, of b

    def align(self, backend) -> AlignedRows:
        """The merged alignment (see :func:`merge_alignments`), on ``backend``."""
        _set_threads(self.params.threads, backend)
        (pa, _, rank_a, db_a), (pb, _, rank_b, db_b) = self.sides
        wa, wb = len(pa), len(pb)
        matrix = np.ascontiguousarray(load_matrix(self.params.matrix), dtype=np.int64)
        g = gap_vector(gap_costs(self.params, len(db_a) + len(db_b)))
        batch = AlignBatch(
            np.concatenate((pa, pb)), np.array([0, wa, wa + wb], dtype=np.int64),
            np.array([len(db_a), len(db_b)], dtype=np.int64), matrix, g,
        )
        with current().stage("aligning profiles"):
            result = backend.profile_align(batch)
        maps = backend.to_host(result.maps).astype(np.int64)
        offsets = np.asarray(backend.to_host(result.col_offsets))
        width = int(offsets[1] - offsets[0])
        return AlignedRows.concat(
            [_plain(self.a, db_a), _plain(self.b, db_b)], [maps[:wa][rank_a], maps[wa:][rank_b]], width
        )


def prepare_merge(a: AlignedRows, b: AlignedRows, params: AlignParams) -> Merge:
    """The host side of merging ``b`` into ``a``: the sequence type settled, both profiles."""
    flat_a, flat_b = _flat(a), _flat(b)
    params = _settle(params, [flat_a[0], flat_b[0]], ["A is", "B is"])
    sides = (_profile(flat_a, a.width, params.seq_type), _profile(flat_b, b.width, params.seq_type))
    return Merge(a, b, params, sides)


def add_sequences(
    existing: AlignedRows, new: SeqDB, params: AlignParams, backend, keep_length: bool = False
) -> tuple[AlignedRows, int]:
    """Align each sequence of ``new`` to the profile of ``existing``; existing rows, then new ones.

    Without ``keep_length``, a new sequence's residues that fall between the
    profile's columns (insertions) get new columns there, left-justified, as
    many as the longest insertion needs; the existing rows get gaps in them.
    With ``keep_length`` the width and the existing rows stay as they are and
    insertions are left out of the new rows (MAFFT's ``--keeplength``).
    Returns the alignment and the number of residues left out.
    """
    return prepare_addition(existing, new, params).align(backend, keep_length)


@dataclass(frozen=True)
class Addition:
    """The host side of an addition: parameters settled, the new sequences encoded, the
    existing alignment's profile (``kept``: its columns that hold residues; ``old_cols``: the
    column of each of its residues)."""

    existing: AlignedRows
    new: SeqDB
    params: AlignParams
    profile: np.ndarray
    kept: np.ndarray
    db_e: SeqDB
    old_cols: np.ndarray

    def align(self, backend, keep_length: bool = False) -> tuple[AlignedRows, int]:
        """The alignment and the residues left out (see :func:`add_sequences`), on ``backend``."""
        existing, new, params, profile, kept, db_e, old_cols = (
            self.existing, self.new, self.params, self.profile, self.kept, self.db_e, self.old_cols
        )
        _set_threads(params.threads, backend)
        matrix = np.ascontiguousarray(load_matrix(params.matrix), dtype=np.int64)
        g = gap_vector(gap_costs(params, len(db_e) + len(new)))
        with current().stage("aligning to the profile", total=len(new)) as advance:
            # profile columns left of each new residue, and whether one shares its column
            slot, matched = backend.profile_slots(profile, len(db_e), new.codes, new.offsets, matrix, g, advance)
        ins = np.flatnonzero(~matched)
        if keep_length:
            keep = matched
            new_db = _residue_subset(new, keep)
            new_cols = kept[slot[keep]]
            width = existing.width
            return AlignedRows.concat([_plain(existing, db_e), _plain_db(new_db)], [old_cols, new_cols], width), len(ins)
        res_row = np.searchsorted(new.offsets, ins, side="right") - 1  # each insert's sequence
        run = np.ones(len(ins), dtype=bool)
        run[1:] = (res_row[1:] != res_row[:-1]) | (slot[ins[1:]] != slot[ins[:-1]])
        rank = np.arange(len(ins)) - np.maximum.accumulate(np.where(run, np.arange(len(ins)), 0))
        old, placed, width = insert_columns(existing.width, kept, slot[ins], rank)
        # A matched residue's column through its profile column: one gather from a table of the
        # profile's width (the unmatched, whose slot may be past the last column, are then placed).
        new_cols = old[kept].take(slot, mode="clip")
        new_cols[ins] = placed
        return AlignedRows.concat([_plain(existing, db_e), _plain_db(new)], [old[old_cols], new_cols], width), 0


def prepare_addition(existing: AlignedRows, new: SeqDB, params: AlignParams) -> Addition:
    """The host side of adding ``new`` to ``existing``: the sequence type settled, the new
    sequences encoded, the profile of the existing rows."""
    flat = _flat(existing)
    params = _settle(params, [flat[0], new], ["the alignment is", "the new sequences are"])
    profile, kept, _, db_e = _profile(flat, existing.width, params.seq_type)
    return Addition(existing, new.encoded(params.seq_type), params, profile, kept, db_e, flat[1])


def _flat(aligned: AlignedRows) -> tuple[SeqDB, np.ndarray]:
    """One sequence per record (duplicates that share a sequence made separate) and its residues' columns."""
    if aligned.index is None:
        return aligned.distinct, aligned.columns
    return aligned.distinct.subset(aligned.index), aligned.columns[_ranges_of(aligned)]


def _plain(aligned: AlignedRows, db: SeqDB) -> AlignedRows:
    """``aligned``'s records over ``db`` (one sequence per record), for concat."""
    return AlignedRows(aligned.names, aligned.descriptions, db, np.zeros(0, np.int64), aligned.width)


def _plain_db(db: SeqDB) -> AlignedRows:
    return AlignedRows(db.names, db.descriptions, db, np.zeros(0, np.int64), 0)


def _residue_subset(db: SeqDB, keep: np.ndarray) -> SeqDB:
    """``db`` with only the residues where ``keep`` (records may become empty)."""
    offsets = np.concatenate(([0], np.cumsum(keep)))[db.offsets]
    return SeqDB(db.names, db.descriptions, db.residues[keep], offsets, db.codes[keep])


def _set_threads(threads: int, backend) -> None:
    """Numba's thread count (msa.pipeline's) for the CPU backend's work and the writing. A GPU
    run imports no Numba (the GPU writes its records too, msa.io.fasta): there the count is
    only left for Numba's import to read (NUMBA_NUM_THREADS), in case the writing needs it
    after all (stdout, the other formats)."""
    if backend.name == "cpu" or "numba" in sys.modules:
        from msa.pipeline import _set_threads as set_threads  # local: (c) Numba: add and merge on a GPU never import it (docs/start-up.md, step 8)

        set_threads(threads)
    elif threads > 0:
        os.environ.setdefault("NUMBA_NUM_THREADS", str(threads))
