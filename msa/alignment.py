"""A finished alignment, and the invariants every alignment must keep (one checker for all)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msa.alphabet import GAP_BYTES
from msa.seqdb import SeqDB


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
        from msa.rows import place_residues

        db = self.distinct
        place_residues(flat, line, width, self._ids(lo, hi), db.offsets, self.columns, db.residues, clear)

    def fill(self, out: np.ndarray, rec_off: np.ndarray, heads: np.ndarray, head_off: np.ndarray,
             template: np.ndarray, width: int, lo: int, hi: int) -> None:
        """Write records ``lo..hi`` whole into ``out`` (a window of a mapped output file; see
        msa.rows.fill_records; ``rec_off`` and ``head_off`` are theirs)."""
        from msa.rows import fill_records

        db = self.distinct
        ids = self._ids(lo, hi)
        fill_records(out, rec_off, heads, head_off, template, width, ids, db.offsets, self.columns, db.residues)

    @property
    def rows(self) -> np.ndarray:
        """All ``(n, width)`` uint8 rows (letters and b'-'), one per record."""
        from msa.rows import gapped_rows

        return gapped_rows(self.distinct, self.columns, self.width, self._ids(0, len(self.names)))

    def row(self, i: int) -> str:
        from msa.rows import gapped_rows

        return gapped_rows(self.distinct, self.columns, self.width, self._ids(i, i + 1))[0].tobytes().decode("ascii")


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
