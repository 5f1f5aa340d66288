"""Encoded sequences: one flat uint8 array plus offsets, never an object per residue."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from msa.alphabet import encode
from msa.params import NUCLEOTIDE_TYPES


@dataclass
class SeqDB:
    """A set of ungapped sequences.

    ``residues`` keeps the letters exactly as read (case, unusual letters), for
    output; ``codes`` holds their residue codes for scoring. Sequence ``i`` is
    ``residues[offsets[i]:offsets[i+1]]``.
    """

    names: list[str]
    descriptions: list[str]
    residues: np.ndarray  # uint8 letters
    offsets: np.ndarray  # int64, len(names) + 1
    codes: np.ndarray  # uint8 residue codes, same layout as residues

    @classmethod
    def from_arrays(
        cls, names: list[str], descriptions: list[str], residues: np.ndarray, offsets: np.ndarray
    ) -> "SeqDB":
        residues = np.ascontiguousarray(residues, dtype=np.uint8)
        return cls(names, descriptions, residues, np.asarray(offsets, dtype=np.int64), encode(residues))

    @classmethod
    def from_pairs(cls, pairs: list[tuple[str, str | bytes]]) -> "SeqDB":
        """Build from (name, sequence) pairs; gaps ('-', '.') are removed."""
        names = [p[0] for p in pairs]
        seqs = [p[1].encode() if isinstance(p[1], str) else bytes(p[1]) for p in pairs]
        seqs = [s.replace(b"-", b"").replace(b".", b"") for s in seqs]
        lengths = np.array([len(s) for s in seqs], dtype=np.int64)
        offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        residues = np.frombuffer(b"".join(seqs), dtype=np.uint8).copy()
        return cls.from_arrays(names, list(names), residues, offsets)

    @classmethod
    def joined(cls, dbs: "list[SeqDB]") -> "SeqDB":
        """The sequences of ``dbs`` laid end to end (db ``f``'s first at ``sum(len(dbs[:f]))``);
        one db is returned as it is."""
        if len(dbs) == 1:
            return dbs[0]
        ends = np.cumsum([len(db.residues) for db in dbs])
        offsets = np.concatenate([np.zeros(1, np.int64)] + [db.offsets[1:] + base for db, base in
                                                             zip(dbs, np.concatenate(([0], ends[:-1])))])
        return cls(
            [name for db in dbs for name in db.names], [d for db in dbs for d in db.descriptions],
            np.concatenate([db.residues for db in dbs]), offsets.astype(np.int64),
            np.concatenate([db.codes for db in dbs]),
        )

    def __len__(self) -> int:
        return len(self.names)

    def encoded(self, seq_type: str) -> "SeqDB":
        """The same sequences with ``codes`` in the alphabet of ``seq_type``
        (this SeqDB itself for protein, whose codes are built on reading)."""
        if seq_type not in NUCLEOTIDE_TYPES:
            return self
        return replace(self, codes=encode(self.residues, seq_type))

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def sequence(self, i: int) -> bytes:
        return self.residues[self.offsets[i] : self.offsets[i + 1]].tobytes()

    def subset(self, index: np.ndarray) -> "SeqDB":
        """The sequences at ``index``, in that order, as a new compact SeqDB."""
        from msa.seqops import take_ranges  # local: (c) Numba loads on the start thread, not with msa.io (docs/start-up.md, step 6)

        index = np.asarray(index, dtype=np.int64)
        starts = self.offsets[index]
        lengths = self.offsets[index + 1] - starts
        offsets = np.zeros(len(index) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return SeqDB(
            [self.names[i] for i in index],
            [self.descriptions[i] for i in index],
            take_ranges(self.residues, starts, lengths),
            offsets,
            take_ranges(self.codes, starts, lengths),
        )

    def unique(self) -> tuple[np.ndarray, np.ndarray]:
        """Exact duplicates, compared on the raw letters (case and unusual letters count).

        Returns ``(representatives, inverse)``: the first occurrence of each
        distinct sequence in input order, and for every sequence the index of its
        representative within ``representatives``.
        """
        from msa.seqops import hash_sequences, same_sequences  # local: (c) Numba loads on the start thread, not with msa.io (docs/start-up.md, step 6)

        n = len(self)
        lengths = self.lengths
        # Hash each sequence (compiled, one pass), sort by (length, hash, index), then
        # confirm each run's members against its first byte for byte.
        h = hash_sequences(self.residues, self.offsets)
        key = np.lexsort((np.arange(n), h, lengths))
        reps = np.arange(n)
        k_len, k_h = lengths[key], h[key]
        same_as_prev = np.zeros(n, dtype=bool)
        same_as_prev[1:] = (k_len[1:] == k_len[:-1]) & (k_h[1:] == k_h[:-1])
        run_start = np.maximum.accumulate(np.where(~same_as_prev, np.arange(n), 0))
        dup = np.flatnonzero(same_as_prev)
        cand = key[run_start[dup]]
        equal = same_sequences(self.residues, self.offsets, key[dup], cand)
        reps[key[dup]] = cand
        if not equal.all():  # a true hash collision (not seen in practice): those runs by their bytes
            starts = np.flatnonzero(~same_as_prev)
            ends = np.append(starts[1:], n)
            for r in np.unique(run_start[dup[~equal]]).tolist():
                first: dict[bytes, int] = {}
                for i in key[r : ends[np.searchsorted(starts, r)]].tolist():  # in input order
                    reps[i] = first.setdefault(self.sequence(i), i)
        representatives = np.flatnonzero(reps == np.arange(n))
        position = np.full(n, -1, dtype=np.int64)
        position[representatives] = np.arange(len(representatives))
        return representatives, position[reps]


def offsets_of(lengths: np.ndarray) -> np.ndarray:
    """int64 offsets of segments of ``lengths`` laid end to end (``len(lengths) + 1``, from 0)."""
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated aranges [s, s+l) without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    out = np.ones(total, dtype=np.int64)
    nz = lengths > 0
    s, l = starts[nz], lengths[nz]
    heads = np.zeros(len(l), dtype=np.int64)
    np.cumsum(l[:-1], out=heads[1:])
    out[heads] = s
    out[heads[1:]] -= s[:-1] + l[:-1] - 1
    return np.cumsum(out)


