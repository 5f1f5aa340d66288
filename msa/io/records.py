"""Sequences handed over in Python (Biopython SeqRecords or (name, sequence) pairs) as a SeqDB.

The same rules as for FASTA files apply (see :mod:`msa.io.fasta`): gaps and
blanks are removed, letters and ``*`` kept exactly, anything else and empty
sequences are errors naming the record.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from msa.io.fasta import BAD, BYTE_CLASS, RESIDUE, InputError, describe_byte
from msa.seqdb import SeqDB

_UNKNOWN_DESCRIPTION = "<unknown description>"  # Biopython's placeholder


def db_from_records(records: Iterable[Any]) -> SeqDB:
    """A SeqDB from SeqRecords or (name, sequence) pairs, in the order given.

    A SeqRecord's header is built as Biopython's FASTA writer builds it (the id,
    then the description unless it already starts with the id).

    Raises:
        InputError: no records, a name with a line break, a bad character, or an
            empty sequence.
        TypeError: an item is neither a SeqRecord nor a pair.
    """
    names: list[str] = []
    headers: list[str] = []
    seqs: list[bytes] = []
    for item in records:
        name, header, seq = _unpack(item)
        if not name or any(c in name for c in "\r\n"):
            raise InputError(f"record {len(names) + 1}: bad name {name!r}")
        names.append(name)
        headers.append(header)
        seqs.append(seq)
    if not names:
        raise InputError("no sequences")

    lengths = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
    starts = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    buf = np.frombuffer(b"".join(seqs), dtype=np.uint8)
    cls = BYTE_CLASS[buf]
    bad = np.flatnonzero(cls == BAD)
    if len(bad):
        pos = int(bad[0])
        rec = int(np.searchsorted(starts, pos, side="right")) - 1
        raise InputError(
            f"record {names[rec]!r} has {describe_byte(int(buf[pos]))} at position "
            f"{pos - int(starts[rec]) + 1}, which is not a residue letter"
        )
    keep = cls == RESIDUE
    kept_before = np.zeros(len(buf) + 1, dtype=np.int64)
    np.cumsum(keep, out=kept_before[1:])
    offsets = kept_before[starts]
    empty = np.flatnonzero(np.diff(offsets) == 0)
    if len(empty):
        raise InputError(f"record {names[int(empty[0])]!r} has no residues")
    return SeqDB.from_arrays(names, headers, buf[keep], offsets)


def _unpack(item: Any) -> tuple[str, str, bytes]:
    """(name, full header, sequence bytes) of one SeqRecord or pair."""
    if hasattr(item, "id") and hasattr(item, "seq"):
        name = str(item.id)
        description = getattr(item, "description", "") or ""
        if description == _UNKNOWN_DESCRIPTION or not description:
            header = name
        elif description.split(None, 1)[0] == name:
            header = description
        else:
            header = f"{name} {description}"
        return name, header, _as_bytes(item.seq)
    try:
        name, seq = item
    except (TypeError, ValueError):
        raise TypeError(f"expected a SeqRecord or a (name, sequence) pair, got {item!r:.60}") from None
    return str(name), str(name), _as_bytes(seq)


def _as_bytes(seq: Any) -> bytes:
    if isinstance(seq, (bytes, bytearray, memoryview)):
        return bytes(seq)
    return str(seq).encode("utf-8", "surrogateescape")
