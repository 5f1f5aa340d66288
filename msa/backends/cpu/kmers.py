"""Numba kernels for the guide-tree stage: 6-mer struct arrays, shared counts, distances.

These are the CPU oracles of the CUDA kernels; the array layouts are described in
:mod:`msa.distances.kmers`. Distances are float64 with one fixed operation order (see
:func:`kmer_distance`), so a kernel compiled with ``--fmad=false`` rounds every
step the same way and picks the same nearest reference.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import prange

from msa.distances.condensed import condensed_row, condensed_rows
from msa.distances.kmers import (
    EMPTY_DISTANCE, KMER_LEN, MAX_COUNT, N_KMERS, PAD_CODE, SECTION, KmerAlphabet, KmerTables, section_layout,
)
from msa.jit import njit


# --------------------------------------------------------------------------- build


def build_kmer_tables(codes: np.ndarray, offsets: np.ndarray, alphabet: KmerAlphabet) -> KmerTables:
    """Struct arrays from residue codes and offsets (CPU; Numba kernels per sequence).

    Example:
        >>> import numpy as np
        >>> from msa.alphabet import encode
        >>> from msa.distances.kmers import NUCLEOTIDE, PROTEIN
        >>> t = build_kmer_tables(encode(np.frombuffer(b"AAAAAAAC", np.uint8)), np.array([0, 8]), PROTEIN)
        >>> t.runs(0), int(t.self_scores[0])
        ((array([0, 5], dtype=uint16), array([2, 1], dtype=uint16)), 3)
        >>> dna = encode(np.frombuffer(b"AAANAAAAC", np.uint8), "dna")  # N dropped: AAAAAAAC
        >>> build_kmer_tables(dna, np.array([0, 9]), NUCLEOTIDE).runs(0)
        (array([0, 1], dtype=uint16), array([2, 1], dtype=uint16))
    """
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    windows_per_seq = window_counts(codes, offsets, alphabet.groups)
    win_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(windows_per_seq, out=win_off[1:])
    windows, n_distinct = sorted_windows(codes, offsets, alphabet.groups, win_off, numba.get_num_threads())

    slot, start, section_off = section_layout(n_distinct)
    kcodes = np.full(section_off[-1], PAD_CODE, dtype=np.uint16)
    kcounts = np.zeros(section_off[-1], dtype=np.uint16)
    interleave_runs(windows, win_off, start, kcodes, kcounts)
    return KmerTables(
        lengths=np.diff(offsets),
        self_scores=windows_per_seq,
        n_distinct=n_distinct,
        slot=slot,
        start=start,
        section_off=section_off,
        kcodes=kcodes,
        kcounts=kcounts,
        alphabet=alphabet,
    )


@njit(cache=True, nogil=True, parallel=True)
def window_counts(codes: np.ndarray, offsets: np.ndarray, group6: np.ndarray) -> np.ndarray:
    """Number of 6-mer windows per sequence after group-6 letters are dropped."""
    n = len(offsets) - 1
    out = np.zeros(n, dtype=np.int64)
    for i in prange(n):
        kept = 0
        for k in range(offsets[i], offsets[i + 1]):
            if group6[codes[k]] < 6:
                kept += 1
        out[i] = max(kept - (KMER_LEN - 1), 0)
    return out


@njit(cache=True, nogil=True, parallel=True)
def sorted_windows(
    codes: np.ndarray, offsets: np.ndarray, group6: np.ndarray, win_off: np.ndarray, threads: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every sequence's 6-mer codes (base 6, first residue most significant), sorted.

    Returns the flat uint16 codes (sequence i at ``win_off[i]:win_off[i+1]``) and
    the number of distinct codes per sequence. Sorting is a two-pass byte radix
    sort (short lists of 16-bit keys), each worker with its own scratch.
    """
    n = len(offsets) - 1
    out = np.empty(win_off[n], dtype=np.uint16)
    n_distinct = np.zeros(n, dtype=np.int32)
    max_win = 1
    for i in range(n):
        max_win = max(max_win, win_off[i + 1] - win_off[i])
    workers = max(min(threads, n), 1)
    for w in prange(workers):
        scratch = np.empty(max_win, dtype=np.uint16)
        hist = np.zeros(256, dtype=np.int64)
        for i in range(w, n, workers):
            start, stop = win_off[i], win_off[i + 1]
            if stop == start:
                continue
            value = 0
            kept = 0
            t = start
            for k in range(offsets[i], offsets[i + 1]):
                g = group6[codes[k]]
                if g >= 6:
                    continue
                value = (value * 6 + g) % N_KMERS
                kept += 1
                if kept >= KMER_LEN:
                    out[t] = value
                    t += 1
            _radix_sort16(out[start:stop], scratch, hist)
            distinct = 1
            for k in range(start + 1, stop):
                if out[k] != out[k - 1]:
                    distinct += 1
            n_distinct[i] = distinct
    return out, n_distinct


@njit(cache=True, nogil=True)
def _radix_sort16(keys: np.ndarray, scratch: np.ndarray, hist: np.ndarray) -> None:
    """Sort uint16 keys in place: low byte into scratch, high byte back."""
    m = len(keys)
    for shift in (0, 8):
        src = keys if shift == 0 else scratch
        dst = scratch if shift == 0 else keys
        hist[:] = 0
        for k in range(m):
            hist[(src[k] >> shift) & 0xFF] += 1
        total = 0
        for b in range(256):
            c = hist[b]
            hist[b] = total
            total += c
        for k in range(m):
            b = (src[k] >> shift) & 0xFF
            dst[hist[b]] = src[k]
            hist[b] += 1


@njit(cache=True, nogil=True, parallel=True)
def interleave_runs(
    windows: np.ndarray, win_off: np.ndarray, start: np.ndarray, kcodes: np.ndarray, kcounts: np.ndarray
) -> None:
    """Run-length encode each sorted window list into its interleaved slots."""
    n = len(win_off) - 1
    for i in prange(n):
        lo, hi = win_off[i], win_off[i + 1]
        pos = start[i]
        k = lo
        while k < hi:
            code = windows[k]
            run = 1
            while k + run < hi and windows[k + run] == code:
                run += 1
            kcodes[pos] = code
            kcounts[pos] = min(run, MAX_COUNT)
            pos += SECTION
            k += run


# --------------------------------------------------------------------------- distances


@njit(cache=True, nogil=True, inline="always")
def kmer_distance(
    common: int, self_a: int, self_b: int, len_a: int, len_b: int, cap: float, lenfac: np.ndarray
) -> float:
    """MAFFT's PartTree 6-mer distance, capped at ``cap``.

    Operation order (each step one IEEE float64 rounding, no fused multiply-add):
    ``r = ls / ll; r = r * D; q = B / (ll + C); den = (r + q) + A; f = 1 / den;``
    ``s = common / m; d = (1 - s) * f; d = min(d, cap)`` with ``ls``/``ll`` the
    shorter/longer residue length, ``m = min(self_a, self_b)`` and ``lenfac`` =
    (A, B, C, D), the alphabet's constants (:class:`~msa.distances.kmers.KmerAlphabet`);
    ``m = 0`` gives EMPTY_DISTANCE.
    """
    m = min(self_a, self_b)
    if m == 0:
        return EMPTY_DISTANCE
    ll = float(max(len_a, len_b))
    ls = float(min(len_a, len_b))
    r = ls / ll
    r = r * lenfac[3]
    q = lenfac[1] / (ll + lenfac[2])
    den = (r + q) + lenfac[0]
    f = 1.0 / den
    s = float(common) / float(m)
    d = (1.0 - s) * f
    return min(d, cap)


@njit(cache=True, nogil=True)
def _fill_table(table, kcodes, kcounts, start, n_distinct, seq, n_refs, r) -> None:
    pos = start[seq]
    for _ in range(n_distinct[seq]):
        table[np.int64(kcodes[pos]) * n_refs + r] = kcounts[pos]
        pos += SECTION


@njit(cache=True, nogil=True)
def _clear_table(table, kcodes, start, n_distinct, seq, n_refs, r) -> None:
    pos = start[seq]
    for _ in range(n_distinct[seq]):
        table[np.int64(kcodes[pos]) * n_refs + r] = 0
        pos += SECTION


@njit(cache=True, nogil=True)
def _member_chunks(member_node: np.ndarray, chunk: int) -> np.ndarray:
    """Start indices of runs of equal node id, each cut to at most ``chunk`` members."""
    m = len(member_node)
    out = np.empty(m + 1, dtype=np.int64)
    n = 0
    last = 0
    for k in range(m):
        if k == 0 or member_node[k] != member_node[k - 1] or k - last >= chunk:
            out[n] = k
            n += 1
            last = k
    out[n] = m
    return out[: n + 1].copy()


@njit(cache=True, nogil=True, parallel=True)
def nearest_reference(
    kcodes: np.ndarray,
    kcounts: np.ndarray,
    start: np.ndarray,
    n_distinct: np.ndarray,
    self_scores: np.ndarray,
    lengths: np.ndarray,
    ref_ids: np.ndarray,
    ref_off: np.ndarray,
    member_ids: np.ndarray,
    member_node: np.ndarray,
    cap: float,
    lenfac: np.ndarray,
    threads: int,
) -> tuple[np.ndarray, np.ndarray]:
    """For each member, the nearest of its node's references and the distance to it.

    References of node k are ``ref_ids[ref_off[k]:ref_off[k+1]]``; members of one
    node must be contiguous. Ties go to the earlier reference (strict ``<``).
    Each worker keeps one dense count table (code-major, refs of a node side by
    side) and clears only the entries it set.
    """
    m = len(member_ids)
    best = np.zeros(m, dtype=np.int32)
    best_d = np.zeros(m, dtype=np.float64)
    if m == 0:
        return best, best_d
    chunks = _member_chunks(member_node, 1024)
    n_chunks = len(chunks) - 1
    max_refs = 1
    for k in range(len(ref_off) - 1):
        max_refs = max(max_refs, ref_off[k + 1] - ref_off[k])
    workers = max(min(threads, n_chunks), 1)
    for w in prange(workers):
        table = np.zeros(N_KMERS * max_refs, dtype=np.uint16)
        common = np.zeros(max_refs, dtype=np.int32)
        for c in range(w, n_chunks, workers):
            lo, hi = chunks[c], chunks[c + 1]
            node = member_node[lo]
            r0 = ref_off[node]
            n_refs = ref_off[node + 1] - r0
            for r in range(n_refs):
                _fill_table(table, kcodes, kcounts, start, n_distinct, ref_ids[r0 + r], n_refs, r)
            for k in range(lo, hi):
                seq = member_ids[k]
                common[:n_refs] = 0
                pos = start[seq]
                for _ in range(n_distinct[seq]):
                    row = np.int64(kcodes[pos]) * n_refs
                    cnt = np.int32(kcounts[pos])
                    for r in range(n_refs):
                        common[r] += min(cnt, np.int32(table[row + r]))
                    pos += SECTION
                arg = 0
                dmin = np.inf
                for r in range(n_refs):
                    ref = ref_ids[r0 + r]
                    d = kmer_distance(
                        common[r], self_scores[ref], self_scores[seq], lengths[ref], lengths[seq], cap, lenfac
                    )
                    if d < dmin:
                        dmin = d
                        arg = r
                best[k] = arg
                best_d[k] = dmin
            for r in range(n_refs):
                _clear_table(table, kcodes, start, n_distinct, ref_ids[r0 + r], n_refs, r)
    return best, best_d


@njit(cache=True, nogil=True, parallel=True)
def kmer_distance_matrix(
    kcodes: np.ndarray,
    kcounts: np.ndarray,
    start: np.ndarray,
    n_distinct: np.ndarray,
    self_scores: np.ndarray,
    lengths: np.ndarray,
    ids: np.ndarray,
    group_off: np.ndarray,
    cap: float,
    lenfac: np.ndarray,
    threads: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Condensed 6-mer distance matrices of many groups in one call.

    Group g is ``ids[group_off[g]:group_off[g+1]]``; its matrix (scipy's condensed
    order, pairs i<j row by row) is ``out[out_off[g]:out_off[g+1]]``.
    """
    row_group, row_index, out_off = condensed_rows(group_off)
    out = np.empty(out_off[-1], dtype=np.float64)
    n_rows = len(row_group)
    workers = max(min(threads, n_rows), 1)
    for w in prange(workers):
        table = np.zeros(N_KMERS, dtype=np.uint16)
        for t in range(w, n_rows, workers):
            i, base, s, o = condensed_row(t, row_group, row_index, group_off, out_off)
            a = ids[base + i]
            _fill_table(table, kcodes, kcounts, start, n_distinct, a, 1, 0)
            for j in range(i + 1, s):
                b = ids[base + j]
                common = 0
                pos = start[b]
                for _ in range(n_distinct[b]):
                    common += min(kcounts[pos], table[np.int64(kcodes[pos])])
                    pos += SECTION
                out[o + j] = kmer_distance(
                    common, self_scores[a], self_scores[b], lengths[a], lengths[b], cap, lenfac
                )
            _clear_table(table, kcodes, start, n_distinct, a, 1, 0)
    return out, out_off
