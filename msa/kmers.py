"""6-mer struct arrays: every sequence as sorted (6-mer code, count) runs, laid out for a warp.

Layout (all flat NumPy arrays; a CUDA kernel consumes exactly these):

* Residues are mapped to MAFFT's 6 groups (``msa.alphabet.GROUP6``); group-6
  letters (X, ``*``) are dropped, so their neighbours become adjacent. A 6-mer
  code is ``g0*6^5 + ... + g5`` (first residue most significant), 0..46655; a
  reduced string of length r gives ``max(r-5, 0)`` codes, repeats kept.
* Sequence i's codes are sorted and run-length encoded into ``n_distinct[i]``
  entries ``(kcodes, kcounts)``, uint16 each (counts saturate at 65535).
* Sequences are ranked by ``n_distinct`` (ascending, ties by index): ``slot[i]``
  is i's rank. Ranks ``32s .. 32s+31`` form section s. A section is padded to
  its longest member, ``width[s]`` entries, and stored interleaved: entry e of
  the member in lane ``slot % 32`` lies at ``section_off[s] + 32*e + lane``,
  so the 32 threads of a warp read 32 consecutive entries. Padding entries have
  code PAD_CODE (above every real code) and count 0.
* ``start[i] = section_off[slot[i] // 32] + slot[i] % 32`` is i's first entry;
  its entries follow with stride 32.
* ``self_scores[i]`` = number of 6-mer windows (= common(i, i)); ``lengths[i]``
  = all residues, X included (MAFFT's length for the length factor).
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from msa.alphabet import GROUP6
from msa.backends import cpu_kmers as _k

KMER_LEN = _k.KMER_LEN
N_KMERS = _k.N_KMERS
SECTION = _k.SECTION
PAD_CODE = _k.PAD_CODE
#: PartTree caps distances here (MAFFT's MAX6DIST).
MAX_KMER_DIST = 10.0
EMPTY_DISTANCE = _k.EMPTY_DISTANCE


@dataclass
class KmerTables:
    """Struct arrays of a set of sequences (see the module docstring for the layout)."""

    lengths: np.ndarray  # int64 (n,)
    self_scores: np.ndarray  # int64 (n,)
    n_distinct: np.ndarray  # int32 (n,)
    slot: np.ndarray  # int64 (n,)
    start: np.ndarray  # int64 (n,)
    section_off: np.ndarray  # int64 (n_sections + 1,)
    kcodes: np.ndarray  # uint16 (section_off[-1],)
    kcounts: np.ndarray  # uint16 (section_off[-1],)

    def __len__(self) -> int:
        return len(self.lengths)

    def runs(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Sequence i's (codes, counts), for tests and debugging."""
        index = self.start[i] + SECTION * np.arange(self.n_distinct[i])
        return self.kcodes[index], self.kcounts[index]


def build_kmer_tables(codes: np.ndarray, offsets: np.ndarray) -> KmerTables:
    """Struct arrays from residue codes and offsets (CPU; Numba kernels per sequence).

    Example:
        >>> import numpy as np
        >>> from msa.alphabet import encode
        >>> t = build_kmer_tables(encode(np.frombuffer(b"AAAAAAAC", np.uint8)), np.array([0, 8]))
        >>> t.runs(0), int(t.self_scores[0])
        ((array([0, 5], dtype=uint16), array([2, 1], dtype=uint16)), 3)
    """
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    windows_per_seq = _k.window_counts(codes, offsets, GROUP6)
    win_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(windows_per_seq, out=win_off[1:])
    windows, n_distinct = _k.sorted_windows(codes, offsets, GROUP6, win_off, numba.get_num_threads())

    order = np.argsort(n_distinct, kind="stable")
    slot = np.empty(n, dtype=np.int64)
    slot[order] = np.arange(n)
    n_sections = -(-n // SECTION)
    last_of_section = np.minimum(np.arange(n_sections) * SECTION + SECTION - 1, n - 1)
    width = n_distinct[order[last_of_section]].astype(np.int64)
    section_off = np.zeros(n_sections + 1, dtype=np.int64)
    np.cumsum(SECTION * width, out=section_off[1:])
    start = section_off[slot // SECTION] + slot % SECTION

    kcodes = np.full(section_off[-1], PAD_CODE, dtype=np.uint16)
    kcounts = np.zeros(section_off[-1], dtype=np.uint16)
    _k.interleave_runs(windows, win_off, start, kcodes, kcounts)
    return KmerTables(
        lengths=np.diff(offsets),
        self_scores=windows_per_seq,
        n_distinct=n_distinct,
        slot=slot,
        start=start,
        section_off=section_off,
        kcodes=kcodes,
        kcounts=kcounts,
    )
