"""A finished alignment, and the invariants every alignment must keep (one checker for all)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msa.alphabet import GAP_BYTES
from msa.seqdb import SeqDB, _ranges


@dataclass
class AlignedRows:
    """A finished alignment in input order, kept as the final column of every residue.

    Record ``i`` is sequence ``index[i]`` of ``distinct`` (sequence ``i`` without an
    index: duplicates are aligned once and share it). The FASTA writer places
    the residues straight into its output blocks (``place``), so an output of
    10^6 rows x 4 x 10^4 columns is never held whole; ``rows`` builds them all,
    for the other formats and the API.
    """

    names: list[str]
    descriptions: list[str]
    distinct: SeqDB
    columns: np.ndarray  # int64, the column of every residue of ``distinct`` (its codes' layout)
    width: int
    index: np.ndarray | None = None

    def _ids(self, lo: int, hi: int) -> np.ndarray:
        return np.arange(lo, hi) if self.index is None else self.index[lo:hi]

    def place(self, flat: np.ndarray, line: int, width: int, lo: int, hi: int, clear: bool = False) -> None:
        """Put the residues of records ``lo..hi`` into the wrapped rows of ``flat`` (b'-' again if ``clear``)."""
        from msa.rows import place_residues  # local: (c) Numba loads on the start thread, not with msa.io (docs/start-up.md, step 6)

        db = self.distinct
        place_residues(flat, line, width, self._ids(lo, hi), db.offsets, self.columns, db.residues, clear)

    def fill(self, out: np.ndarray, rec_off: np.ndarray, heads: np.ndarray, head_off: np.ndarray,
             template: np.ndarray, width: int, lo: int, hi: int, backend=None) -> None:
        """Write records ``lo..hi`` whole into ``out`` (a window of a mapped output file; see
        msa.backends.cpu.records.fill_records; ``rec_off`` and ``head_off`` are theirs), on ``backend`` (default:
        the CPU's Numba loop)."""
        if backend is None:
            from msa.backends.cpu.records import fill_records as fill  # local: (c) Numba loads on the start thread, not with msa.io (docs/start-up.md, step 6)
        else:
            fill = backend.fill_records
        db = self.distinct
        ids = self._ids(lo, hi)
        fill(out, rec_off, heads, head_off, template, width, ids, db.offsets, self.columns, db.residues)

    @property
    def rows(self) -> np.ndarray:
        """All ``(n, width)`` uint8 rows (letters and b'-'), one per record."""
        from msa.rows import gapped_rows  # local: (c) Numba loads on the start thread, not with msa.io (docs/start-up.md, step 6)

        return gapped_rows(self.distinct, self.columns, self.width, self._ids(0, len(self.names)))

    def rows_of(self, lo: int, hi: int) -> np.ndarray:
        """The ``(hi - lo, width)`` uint8 rows of records ``lo..hi`` (a block, for writers)."""
        from msa.rows import gapped_rows  # local: (c) Numba loads on the start thread, not with msa.io (docs/start-up.md, step 6)

        return gapped_rows(self.distinct, self.columns, self.width, self._ids(lo, hi))

    def row(self, i: int) -> str:
        return self.rows_of(i, i + 1)[0].tobytes().decode("ascii")

    def record_columns(self, i: int) -> np.ndarray:
        """The columns of record ``i``'s residues."""
        s = int(self._ids(i, i + 1)[0])
        return self.columns[self.distinct.offsets[s] : self.distinct.offsets[s + 1]]

    @classmethod
    def from_text(cls, names: list[str], descriptions: list[str], text: np.ndarray, offsets: np.ndarray,
                  columns: np.ndarray | None, width: int) -> "AlignedRows":
        """An alignment read from a file: ``text[offsets[i]:offsets[i+1]]`` is row ``i``'s bytes
        (gaps included, at columns ``columns`` of the same layout, or, where ``columns`` is None,
        each at its place in its row: aligned FASTA); gaps are dropped here.

        Only residues get a column: no int64 array as long as the text is made (a cumsum and
        a column for every byte took most of the reading at 10^4 x 2,766).
        """
        at = np.flatnonzero((text != _DASH) & (text != _DOT))  # where the residues are
        new_offsets = np.searchsorted(at, offsets)  # residues before each row's start
        db = SeqDB.from_arrays(names, descriptions, text[at], new_offsets)
        if columns is None:  # a residue's place in its row, in place of its place in the text
            at -= np.repeat(np.asarray(offsets[:-1], dtype=np.int64), np.diff(new_offsets))
            return cls(names, descriptions, db, at, int(width))
        return cls(names, descriptions, db, np.asarray(columns, dtype=np.int64)[at], int(width))

    @staticmethod
    def concat(parts: list["AlignedRows"], columns: list[np.ndarray], width: int) -> "AlignedRows":
        """The records of ``parts`` one after another, each part's residues at ``columns[k]``."""
        names = [n for p in parts for n in p.names]
        descriptions = [d for p in parts for d in p.descriptions]
        dbs = [p.distinct if p.index is None else p.distinct.subset(p.index) for p in parts]
        cols = [c if p.index is None else c[_ranges_of(p)] for p, c in zip(parts, columns)]
        shift = np.cumsum([0] + [int(d.offsets[-1]) for d in dbs[:-1]])
        offsets = np.concatenate([[0]] + [d.offsets[1:] + k for d, k in zip(dbs, shift)])
        db = SeqDB(names, descriptions, np.concatenate([d.residues for d in dbs]), offsets,
                   np.concatenate([d.codes for d in dbs]))
        return AlignedRows(names, descriptions, db, np.concatenate(cols).astype(np.int64, copy=False), int(width))


def _ranges_of(aligned: AlignedRows) -> np.ndarray:
    db = aligned.distinct
    return _ranges(db.offsets[aligned.index], db.lengths[aligned.index])


_DASH, _DOT = GAP_BYTES  # b"-.", as ints


def insert_columns(
    width: int, anchors: np.ndarray, slot: np.ndarray, rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """Widen a ``width``-column alignment with new columns for inserted residues.

    ``anchors`` are the (sorted) columns that inserts are placed against; slot
    ``s`` lies just before anchor ``s`` (slot ``len(anchors)`` at the end), and
    an insert of rank ``r`` in its slot (its ``r``-th residue there, in its row)
    goes to the slot's ``r``-th new column: inserts are left-justified, and
    each slot gets as many new columns as its longest insert. Used by the
    A3M reader (anchors: the match columns) and ``msa add`` (anchors: the
    profile's columns). Returns ``(old, new, new_width)``: the new column of
    every old column, and of every insert.

    Example:
        >>> old, new, w = insert_columns(3, np.array([0, 2]), np.array([1, 1, 2]), np.array([0, 1, 0]))
        >>> old.tolist(), new.tolist(), w
        ([0, 1, 4], [2, 3, 5], 6)
    """
    anchors = np.asarray(anchors, dtype=np.int64)
    slot = np.asarray(slot, dtype=np.int64)
    k = len(anchors)
    extra = np.zeros(k + 1, dtype=np.int64)
    if len(slot):
        np.maximum.at(extra, slot, np.asarray(rank, dtype=np.int64) + 1)
    before = np.zeros(k + 2, dtype=np.int64)
    np.cumsum(extra, out=before[1:])  # before[s]: new columns of slots < s
    o = np.arange(width, dtype=np.int64)
    cnt = np.searchsorted(anchors, o)  # anchors left of o
    is_anchor = np.zeros(width, dtype=bool)
    is_anchor[anchors] = True
    old = o + before[cnt + is_anchor]
    at = np.append(anchors, width)
    new = at[slot] + before[slot] + rank
    return old, new, int(width + before[k + 1])


def check_alignment(
    inputs: list[tuple[str, bytes]], names: list[str], rows: list[bytes] | np.ndarray
) -> None:
    """Assert the invariants every alignment must keep, so that tests fail with a clear reason.

    Rows must all have one width, name the inputs in input order, and give back each
    input sequence byte for byte once gaps (``-`` and ``.``, removed from the inputs
    too, as the reader does) are dropped.

    Raises:
        AssertionError: naming the first row that breaks an invariant.
    """
    in_names = [n for n, _ in inputs]
    assert len(names) == len(in_names), f"{len(names)} names for {len(in_names)} input sequences"
    if names != in_names:
        i = next(i for i, (a, b) in enumerate(zip(names, in_names)) if a != b)
        raise AssertionError(f"row {i} is named {names[i]!r}, input {i} is {in_names[i]!r}")
    if isinstance(rows, np.ndarray):
        assert rows.ndim == 2, f"rows array has {rows.ndim} dimensions, not 2"
        mat = np.ascontiguousarray(rows, dtype=np.uint8)
    else:
        assert len(rows) == len(names), f"{len(rows)} rows for {len(names)} names"
        widths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        odd = np.flatnonzero(widths != widths[0]) if widths.size else widths
        assert not odd.size, (f"row {odd[0]} ({names[odd[0]]!r}) is {widths[odd[0]]} wide, "
                              f"row 0 is {widths[0]}")
        mat = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), -1)
    assert mat.shape[0] == len(names), f"{mat.shape[0]} rows for {len(names)} names"
    gap = np.zeros(256, dtype=bool)
    gap[np.frombuffer(GAP_BYTES, dtype=np.uint8)] = True
    res = ~gap[mat]
    got = mat[res]
    raw = np.frombuffer(b"".join(s for _, s in inputs), dtype=np.uint8)
    want = raw[~gap[raw]]
    in_len = np.bincount(
        np.repeat(np.arange(len(inputs)), [len(s) for _, s in inputs])[~gap[raw]],
        minlength=len(inputs),
    )
    row_len = res.sum(axis=1)
    bad = np.flatnonzero(row_len != in_len)
    if bad.size:
        i = bad[0]
        raise AssertionError(f"row {i} ({names[i]!r}) has {row_len[i]} residues, input has {in_len[i]}")
    diff = np.flatnonzero(got != want)
    if diff.size:
        i = int(np.searchsorted(np.cumsum(in_len), diff[0], side="right"))
        raise AssertionError(f"row {i} ({names[i]!r}) degapped differs from its input "
                             f"at residue {diff[0] - (np.cumsum(in_len)[i] - in_len[i])}")
