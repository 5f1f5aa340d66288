"""6-mer struct arrays: every sequence as sorted (6-mer code, count) runs, laid out for a warp.

Layout (all flat NumPy arrays; a CUDA kernel consumes exactly these):

* Residues are mapped to groups by the tables' :class:`KmerAlphabet`: MAFFT's
  6 groups for protein, one group per base (A C G T/U) for nucleotides. Group-6
  letters (protein X, ``*``; nucleotide N and the ambiguity codes) are dropped,
  so their neighbours become adjacent. A 6-mer code is ``g0*6^5 + ... + g5``
  (first residue most significant), 0..46655; a reduced string of length r
  gives ``max(r-5, 0)`` codes, repeats kept.
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

from msa.alphabet import GROUP6, NUC_GROUP6
from msa.params import NUCLEOTIDE_TYPES

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


@dataclass(frozen=True, eq=False)
class KmerAlphabet:
    """What turns residue codes into 6-mers, and the length factor of their distance.

    ``groups``: residue code -> group (< 6), or 6 for a letter dropped before
    6-mers are made. ``lenfac``: MAFFT's length-factor constants (A, B, C, D) of
    ``1 / (D * l_short / l_long + B / (l_long + C) + A)`` (MAFFT's PLENFACA-D, D6LENFACA-D in core/disttbfast.c), float64.

    Nucleotide 6-mers are coded in base 6 like protein ones, not in MAFFT's base
    4: with digits 0..3 the code is still one-to-one with the 6-mer, so the
    shared counts (sums of min counts over equal 6-mers) and the distances are
    MAFFT's, and the struct arrays, the dense 6^6 tables and the kernels serve
    both alphabets unchanged. Only the codes' values differ, and nothing reads
    those but the counting itself.
    """

    name: str
    groups: np.ndarray  # uint8 (N_CODES,)
    lenfac: np.ndarray  # float64 (4,): A, B, C, D


#: MAFFT's 6-group protein alphabet and its protein constants.
PROTEIN = KmerAlphabet("protein", GROUP6, np.array([0.01, 10000.0, 10000.0, 0.1]))
#: One group per base (N and ambiguity codes dropped) and MAFFT's DNA 6-mer constants.
NUCLEOTIDE = KmerAlphabet("nucleotide", NUC_GROUP6, np.array([0.01, 2500.0, 2500.0, 0.1]))


def kmer_alphabet(seq_type: str) -> KmerAlphabet:
    """The 6-mer alphabet of a sequence type (``protein``, ``dna``, ``rna``; ``auto`` is
    protein, as the codes of a family not yet typed are).

    Example:
        >>> kmer_alphabet("rna").name, kmer_alphabet("auto").name
        ('nucleotide', 'protein')
    """
    return NUCLEOTIDE if seq_type in NUCLEOTIDE_TYPES else PROTEIN


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
    alphabet: KmerAlphabet  # what the codes were made with; its lenfac is the distances'

    def __len__(self) -> int:
        return len(self.lengths)

    def runs(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Sequence i's (codes, counts), for tests and debugging."""
        index = self.start[i] + SECTION * np.arange(self.n_distinct[i])
        return self.kcodes[index], self.kcounts[index]


def section_layout(n_distinct: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(slot, start, section_off)`` of sequences with these run counts (the layout above),
    for both backends' builds.

    Example:
        >>> slot, start, section_off = section_layout(np.array([3, 1, 2], dtype=np.int32))
        >>> slot.tolist(), start.tolist(), section_off.tolist()
        ([2, 0, 1], [2, 0, 1], [0, 96])
    """
    n = len(n_distinct)
    order = np.argsort(n_distinct, kind="stable")
    slot = np.empty(n, dtype=np.int64)
    slot[order] = np.arange(n)
    n_sections = -(-n // SECTION)
    last_of_section = np.minimum(np.arange(n_sections) * SECTION + SECTION - 1, n - 1)
    width = n_distinct[order[last_of_section]].astype(np.int64)
    section_off = np.zeros(n_sections + 1, dtype=np.int64)
    np.cumsum(SECTION * width, out=section_off[1:])
    start = section_off[slot // SECTION] + slot % SECTION
    return slot, start, section_off
