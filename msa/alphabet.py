"""Residue codes, MAFFT's 6-group reduced alphabet and integer scoring matrices.

Two alphabets share the code space 0..N_CODES-1 (so profiles, the DP and its
kernels are the same for both): the protein one (FAMSA's order) and the
nucleotide one (A C G T/U = 0 1 2 3, every other letter NUC_N = 22). The LCS
distance matches only codes below 20, so the four bases match and N and the
IUPAC ambiguity codes never do. Residues keep their letters as written; codes
serve only for scoring and distances.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from msa.params import FIXED_POINT, NUC_MATCH, NUC_MISMATCH, NUCLEOTIDE_MATRICES, NUCLEOTIDE_TYPES

#: Internal residue codes, FAMSA's order. Any other letter is scored as X.
ALPHABET = "ARNDCQEGHILKMFPSTWYVBZX*"
N_CODES = len(ALPHABET)
CODE_X = ALPHABET.index("X")
#: Marks a byte that is not a residue (digits, punctuation, control bytes).
INVALID = 255

GAP_BYTES = b"-."


def _encode_table() -> np.ndarray:
    table = np.full(256, INVALID, dtype=np.uint8)
    for byte in range(256):
        ch = chr(byte)
        if ch.isascii() and ch.isalpha():
            up = ch.upper()
            table[byte] = ALPHABET.index(up) if up in ALPHABET else CODE_X
    table[ord("*")] = ALPHABET.index("*")
    return table


#: byte -> residue code (lower case folded, unknown letters -> X, non-letters -> INVALID).
ENCODE = _encode_table()

#: The four bases, in nucleotide code order; U is T.
BASES = "ACGT"
#: Nucleotide code of N, the IUPAC ambiguity codes (R Y S W K M B D H V) and any
#: other letter or ``*``: >= 20, so it never matches in the LCS distance, and it
#: scores 0 against everything (NUC scheme).
NUC_N = CODE_X


def _nuc_encode_table() -> np.ndarray:
    table = np.where(ENCODE == INVALID, INVALID, NUC_N).astype(np.uint8)  # same valid bytes as protein
    for code, ch in enumerate(BASES):
        for letter in (ch, ch.lower()):
            table[ord(letter)] = code
    table[ord("U")] = table[ord("u")] = BASES.index("T")
    return table


#: byte -> nucleotide code (A C G T/U -> 0..3, every other valid byte -> NUC_N).
NUC_ENCODE = _nuc_encode_table()

#: Letters counted as nucleotides by the detection (MAFFT's countATGC: a c g t u n).
NUC_LETTERS = b"ACGTUNacgtun"
#: ``auto`` calls a family nucleotides when more than this share of its letters
#: are in NUC_LETTERS (MAFFT's ``atgcfreq > 0.75``).
NUC_FRACTION = 0.75
#: Detection reads whole sequences until it has seen at least this many letters
#: (MAFFT counts while its total is below 10^6).
DETECT_LETTERS = 1_000_000


def _group_table() -> np.ndarray:
    """MAFFT's 6-group alphabet per residue code; 6 means 'dropped before 6-mers'."""
    groups = {
        0: "AGPST",
        1: "ILMV",
        2: "NDQEBZ",
        3: "RHK",
        4: "FWY",
        5: "C",
    }
    table = np.full(N_CODES, 6, dtype=np.uint8)
    for g, letters in groups.items():
        for ch in letters:
            table[ALPHABET.index(ch)] = g
    return table


#: residue code -> 6-group (J is folded into X before this, as FAMSA scores it).
GROUP6 = _group_table()


#: residue code of the nucleotide alphabet -> 6-group: each base its own group, the rest dropped.
NUC_GROUP6 = np.full(N_CODES, 6, dtype=np.uint8)
NUC_GROUP6[: len(BASES)] = np.arange(len(BASES))


def encode(raw: np.ndarray, seq_type: str = "protein") -> np.ndarray:
    """Residue codes of a flat uint8 array of letters, in the alphabet of ``seq_type``."""
    return lookup(NUC_ENCODE if seq_type in NUCLEOTIDE_TYPES else ENCODE, raw)


#: Bytes translated at a time by lookup (a block and its translation stay in the CPU's cache).
LOOKUP_BLOCK = 1 << 20


def lookup(table: np.ndarray, raw: np.ndarray) -> np.ndarray:
    """``table[raw]`` for a 256-entry uint8 table and uint8 bytes, as a new writable array.

    Done by ``bytes.translate``, a C loop over the bytes: NumPy's indexing first widens
    every byte to an 8-byte index, which made it 3-4x slower (0.9 s against 0.3 s for the
    330 MB of a 10^6-sequence FASTA). A block at a time, so no second full-size copy is
    needed to get a writable result.
    """
    if raw.dtype != np.uint8 or table.dtype != np.uint8 or len(table) != 256:
        return table[raw]
    flat = raw.reshape(-1)
    out = np.empty(flat.shape, dtype=np.uint8)
    tab = table.tobytes()
    for lo in range(0, len(flat), LOOKUP_BLOCK):
        block = flat[lo : lo + LOOKUP_BLOCK].tobytes().translate(tab)
        out[lo : lo + len(block)] = np.frombuffer(block, dtype=np.uint8)
    return out.reshape(raw.shape)


def detect_seq_type(residues: np.ndarray, offsets: np.ndarray) -> str:
    """``protein``, ``dna`` or ``rna``, from the letters as MAFFT detects them.

    Whole sequences are read, in input order, until at least DETECT_LETTERS
    letters are seen (all of them for smaller inputs). Nucleotides when more
    than NUC_FRACTION (0.75) of those letters are A, C, G, T, U or N (either
    case; ``*`` is not a letter); then ``rna`` if U outnumbers T, else ``dna``.
    No letters at all: protein.
    """
    offsets = np.asarray(offsets)
    cut = int(np.searchsorted(offsets, DETECT_LETTERS, side="left"))
    end = int(offsets[min(cut, len(offsets) - 1)])
    counts = np.bincount(np.asarray(residues[:end], dtype=np.uint8), minlength=256)
    letters = int(counts[_LETTER].sum())
    nuc = int(counts[np.frombuffer(NUC_LETTERS, np.uint8)].sum())
    if letters == 0 or nuc <= NUC_FRACTION * letters:
        return "protein"
    u = int(counts[ord("U")] + counts[ord("u")])
    t = int(counts[ord("T")] + counts[ord("t")])
    return "rna" if u > t else "dna"


_LETTER = np.array([chr(b).isascii() and chr(b).isalpha() for b in range(256)])


def _nucleotide_matrix() -> np.ndarray:
    """The NUC scheme: NUC_MATCH on the diagonal of the four bases, NUC_MISMATCH
    between them, 0 for every pair with N or an ambiguity code (codes >= 4)."""
    full = np.zeros((N_CODES, N_CODES), dtype=np.float64)
    k = len(BASES)
    full[:k, :k] = NUC_MISMATCH
    np.fill_diagonal(full[:k, :k], NUC_MATCH)
    return (np.sign(full) * np.floor(np.abs(full) * FIXED_POINT + 0.5)).astype(np.int64)


@functools.cache
def load_matrix(name: str) -> np.ndarray:
    """A 24x24 int64 score table in ALPHABET order, entries x1000 rounded half away from zero.

    Loaded once per name (cached): the CLI's early check, the SW tree distance
    and the progressive stage share one table. ``NUC`` is the nucleotide scheme
    (codes of the nucleotide alphabet; :func:`_nucleotide_matrix`). Protein matrices come from the
    ``scoring-matrices`` package. Rows it lacks are filled the usual way: B and Z
    as the mean of their two residues, X as the mean over the 20 standard
    residues, ``*`` as the table's minimum (and its maximum on the diagonal).
    """
    if name.upper() in NUCLEOTIDE_MATRICES:
        return _nucleotide_matrix()
    from scoring_matrices import ScoringMatrix

    try:
        sm = ScoringMatrix.from_name(name.upper())
    except (ValueError, KeyError) as exc:
        names = ", ".join(sorted(ScoringMatrix.BUILTIN_MATRICES))
        raise ValueError(f"unknown matrix {name!r}; known: {names}") from exc
    src_alpha = sm.alphabet
    src = np.asarray(sm, dtype=np.float64)
    idx = {ch: i for i, ch in enumerate(src_alpha)}
    std = ALPHABET[:20]
    missing = [c for c in std if c not in idx]
    if missing:
        raise ValueError(f"matrix {name!r} is not a protein matrix (lacks {''.join(missing)})")

    full = np.full((N_CODES, N_CODES), np.nan)
    for a, ca in enumerate(ALPHABET):
        for b, cb in enumerate(ALPHABET):
            if ca in idx and cb in idx:
                full[a, b] = src[idx[ca], idx[cb]]
    std_block = full[:20, :20]

    def fill_mean(code: int, members: list[int]) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN
            row = np.nanmean(full[members, :], axis=0)
        nan_row = np.isnan(full[code, :])
        full[code, nan_row] = row[nan_row]
        nan_col = np.isnan(full[:, code])
        full[nan_col, code] = full[code, nan_col]

    a = ALPHABET.index
    if np.isnan(full[a("B"), : 20]).any():
        fill_mean(a("B"), [a("N"), a("D")])
    if np.isnan(full[a("Z"), : 20]).any():
        fill_mean(a("Z"), [a("Q"), a("E")])
    if np.isnan(full[a("X"), : 20]).any():
        fill_mean(a("X"), list(range(20)))
    star = a("*")
    lo, hi = float(np.nanmin(std_block)), float(np.nanmax(std_block))
    full[star, np.isnan(full[star])] = lo
    full[np.isnan(full[:, star]), star] = lo
    if np.isnan(full[star, star]) or full[star, star] == lo:
        full[star, star] = hi
    full = np.where(np.isnan(full), np.nanmin(full), full)
    full = (full + full.T) / 2  # some published tables differ in the last printed digit
    scaled = np.sign(full) * np.floor(np.abs(full) * FIXED_POINT + 0.5)
    return scaled.astype(np.int64)
