"""Smith-Waterman (local, Gotoh affine) score distances: the CPU oracle of kernels/sw_distance.cu.

``d(a, b) = 1 - S(a, b) / min(S(a, a), S(b, b))`` (MAFFT's DPPartTree distance,
with a local instead of a global score), 1.0 where the smaller self score is
not positive, clamped to [0, 1]. Scores are int64 in the run's fixed-point
units: matrix entries x1000, a gap of length k costs ``open + (k - 1) * extend``
(both <= 0, as :class:`msa.params.GapCosts` stores them). Every cell is floored
at 0; only the best cell's score is kept, so memory is O(length) per pair.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from msa.distances.condensed import condensed_row, condensed_rows
from msa.jit import njit

#: Residue codes the substitution matrix covers (msa.alphabet.ALPHABET).
N_CODES = 24


@njit(cache=True, nogil=True)
def _profile(prof: np.ndarray, matrix: np.ndarray, codes: np.ndarray, lo: int, la: int) -> None:
    """``prof[c, p] = matrix[c, a[p]]`` for the query a = codes[lo:lo+la]: one contiguous row per residue of b."""
    for c in range(N_CODES):
        for p in range(la):
            prof[c, p] = matrix[c, np.int64(codes[lo + p])]


@njit(cache=True, nogil=True)
def sw_score(
    prof: np.ndarray, la: int, codes: np.ndarray, lo: int, hi: int,
    h: np.ndarray, f: np.ndarray, gap_open: int, gap_extend: int,
) -> int:
    """Best local score of the profiled query (length la) and codes[lo:hi].

    Row j of the DP is residue j of b; ``h[p]``/``f[p]`` hold the previous row's
    H and vertical-gap F. Gap states start at ``gap_open`` instead of minus
    infinity: ``H + open >= open >= open + extend`` always wins their max, so
    the scores are the same and nothing can overflow.
    """
    best = 0
    h[:la] = 0
    f[:la] = gap_open
    for k in range(lo, hi):
        row = prof[np.int64(codes[k])]
        diag = 0
        left = 0
        e = gap_open
        for p in range(la):
            e = max(e + gap_extend, left + gap_open)
            fp = max(f[p] + gap_extend, h[p] + gap_open)
            x = max(diag + row[p], e, fp, 0)
            diag = h[p]
            h[p] = x
            f[p] = fp
            left = x
            best = max(best, x)
    return best


@njit(cache=True, nogil=True, inline="always")
def sw_distance(s: int, self_a: int, self_b: int) -> float:
    """``1 - S / min(self)``, one division then one subtraction (as the kernel), clamped to [0, 1]."""
    m = min(self_a, self_b)
    if m <= 0:
        return 1.0
    d = 1.0 - float(s) / float(m)
    return max(0.0, min(1.0, d))


@njit(cache=True, nogil=True, parallel=True)
def self_scores(
    codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, matrix: np.ndarray,
    gap_open: int, gap_extend: int, threads: int,
) -> np.ndarray:
    """``S(x, x)`` of every sequence in ids (not simply the diagonal sum: repeats and negative diagonals)."""
    n = len(ids)
    out = np.zeros(n, dtype=np.int64)
    max_len = 1
    for k in range(n):
        max_len = max(max_len, offsets[ids[k] + 1] - offsets[ids[k]])
    workers = max(min(threads, n), 1)
    for w in prange(workers):
        prof = np.empty((N_CODES, max_len), dtype=np.int64)
        h = np.empty(max_len, dtype=np.int64)
        f = np.empty(max_len, dtype=np.int64)
        for k in range(w, n, workers):
            lo, hi = offsets[ids[k]], offsets[ids[k] + 1]
            _profile(prof, matrix, codes, lo, hi - lo)
            out[k] = sw_score(prof, hi - lo, codes, lo, hi, h, f, gap_open, gap_extend)
    return out


@njit(cache=True, nogil=True, parallel=True)
def sw_distance_matrix(
    codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray, matrix: np.ndarray,
    gap_open: int, gap_extend: int, threads: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Condensed SW distance matrices of many groups (layout as msa.backends.cpu.kmers.kmer_distance_matrix).

    Work items are the condensed rows (one query against its later members),
    spread over the threads; each row profiles its query once.
    """
    selfs = self_scores(codes, offsets, ids, matrix, gap_open, gap_extend, threads)
    row_group, row_index, out_off = condensed_rows(group_off)
    out = np.empty(out_off[-1], dtype=np.float64)
    n_rows = len(row_group)
    max_len = 1
    for k in range(len(ids)):
        max_len = max(max_len, offsets[ids[k] + 1] - offsets[ids[k]])
    workers = max(min(threads, n_rows), 1)
    for w in prange(workers):
        prof = np.empty((N_CODES, max_len), dtype=np.int64)
        h = np.empty(max_len, dtype=np.int64)
        f = np.empty(max_len, dtype=np.int64)
        for t in range(w, n_rows, workers):
            i, base, s, o = condensed_row(t, row_group, row_index, group_off, out_off)
            a = ids[base + i]
            la = offsets[a + 1] - offsets[a]
            _profile(prof, matrix, codes, offsets[a], la)
            for j in range(i + 1, s):
                b = ids[base + j]
                score = sw_score(prof, la, codes, offsets[b], offsets[b + 1], h, f, gap_open, gap_extend)
                out[o + j] = sw_distance(score, selfs[base + i], selfs[base + j])
    return out, out_off
