"""Our aligned rows as a Biopython ``Bio.Align.Alignment``: sequences plus a coordinates array."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from Bio.Align import Alignment
from Bio.Seq import Seq
from Bio.SeqRecord import SeqRecord

_GAP = ord("-")


def to_alignment(names: Sequence[str], descriptions: Sequence[str], rows: np.ndarray) -> Alignment:
    """The alignment of ``rows`` (uint8 letters and b'-') as a Biopython Alignment.

    Each sequence is a SeqRecord whose ``id`` is the name and whose
    ``description`` is the rest of the header line, so Biopython's writers
    print the header back as it was read. Coordinates are kept only at the
    columns where some row switches between gap and residue, as Biopython does.
    """
    residue = rows != _GAP
    n, width = rows.shape
    change = np.ones(width + 1, dtype=bool)
    if width > 1:
        change[1:-1] = (residue[:, 1:] != residue[:, :-1]).any(axis=0)
    cols = np.flatnonzero(change)
    coordinates = np.zeros((n, len(cols)), dtype=np.int64)
    if width:
        segments = np.add.reduceat(residue, cols[:-1], axis=1, dtype=np.int64)
        np.cumsum(segments, axis=1, out=coordinates[:, 1:])
    records = [
        SeqRecord(
            Seq(rows[i][residue[i]].tobytes()),
            id=name,
            name=name,
            description=_rest_of_header(name, descriptions[i]),
        )
        for i, name in enumerate(names)
    ]
    alignment = Alignment(records, coordinates)
    alignment.column_annotations = {}  # Biopython's Stockholm writer expects the attribute
    return alignment


def _rest_of_header(name: str, header: str) -> str:
    """The header after its first word: what Biopython prints after the id."""
    if header.startswith(name):
        return header[len(name) :].strip()
    return header.strip()
