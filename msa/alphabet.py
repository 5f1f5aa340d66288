"""Residue codes, MAFFT's 6-group reduced alphabet and integer scoring matrices."""
from __future__ import annotations

import functools
import warnings

import numpy as np

from msa.params import FIXED_POINT

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


def encode(raw: np.ndarray) -> np.ndarray:
    """Residue codes of a flat uint8 array of letters."""
    return ENCODE[raw]


@functools.cache
def load_matrix(name: str) -> np.ndarray:
    """A 24x24 int64 score table in ALPHABET order, entries x1000 rounded half away from zero.

    Loaded once per name (cached): the CLI's early check, the SW tree distance
    and the progressive stage share one table. Matrices come from the
    ``scoring-matrices`` package. Rows it lacks are filled the usual way: B and Z
    as the mean of their two residues, X as the mean over the 20 standard
    residues, ``*`` as the table's minimum (and its maximum on the diagonal).
    """
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
