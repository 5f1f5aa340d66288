"""Aligned rows from the final column of every residue.

The progressive stage ends with a column per residue, not with rows: rows are
``n x width`` bytes, 98 % gaps at 10^6 sequences. ``gapped_rows`` builds a
row matrix (the API, the non-FASTA formats); ``place_residues`` writes the
residues of a block of records into a reused, already wrapped output buffer
(the FASTA writer), a compiled loop at ~1 ns a residue. Whole records straight into a
memory-mapped output file are the backends' ``fill_records`` (msa.backends.cpu.records,
msa.backends.cuda.records).
"""
from __future__ import annotations

import numpy as np

from msa.jit import njit
from msa.seqdb import SeqDB, _ranges


def gapped_rows(db: SeqDB, columns: np.ndarray, width: int, ids: np.ndarray | None = None) -> np.ndarray:
    """uint8 rows of sequences ``ids`` (default: all): each residue's letter at its column,
    ``b'-'`` elsewhere."""
    if ids is None:
        ids, pos = np.arange(len(db)), slice(None)
    else:
        pos = _ranges(db.offsets[ids], db.lengths[ids])
    rows = np.full((len(ids), width), ord("-"), dtype=np.uint8)
    rows[np.repeat(np.arange(len(ids)), db.lengths[ids]), columns[pos]] = db.residues[pos]
    return rows


@njit(cache=True, nogil=True)
def place_residues(
    flat: np.ndarray, line: int, width: int, ids: np.ndarray, offsets: np.ndarray,
    columns: np.ndarray, letters: np.ndarray, clear: bool,
) -> None:
    """Row ``k`` of ``flat`` (``line`` bytes, lines of ``width`` plus newlines) gets the residues
    of sequence ``ids[k]`` at their columns, or b'-' there again when ``clear``."""
    for k in range(len(ids)):
        base = k * line
        s = ids[k]
        for p in range(offsets[s], offsets[s + 1]):
            c = columns[p]
            flat[base + c + c // width] = 45 if clear else letters[p]  # 45: b'-'
