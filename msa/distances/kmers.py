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

The tables are built by a backend (``Backend.kmer_tables``; the CPU's
:func:`msa.backends.cpu.kmers.build_kmer_tables`), which imports the layout
from here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KMER_LEN = 6
N_KMERS = 6**KMER_LEN
#: Sequences per section (a warp): entry e of the 32 members is contiguous.
SECTION = 32
#: Code of a padding entry; above every real 6-mer code so merges stop on it.
PAD_CODE = 0xFFFF
#: Run counts saturate here (uint16).
MAX_COUNT = 0xFFFF
#: PartTree caps distances here (MAFFT's MAX6DIST).
MAX_KMER_DIST = 10.0
#: Distance between a sequence with no 6-mer and anything (mafft-distance's value).
EMPTY_DISTANCE = 1.0


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
