"""Pairwise alignments of a library (the consistency stage's and the refinement's), on the CPU.

Each pair of sequences is aligned as the progressive stage merges two one-sequence profiles
(:func:`msa.backends.cpu.align.dp_codes`, the merge's own recurrence and ties) and read off as
the residue pairs its alignment puts in one column. The CPU aligns straight from the codes:
as a level batch (one-hot tables, column maps and parent profiles around the DP) the
consistency library of balifam1000 took 1.34x as long on 2 cores (docs/progressive.md).
:func:`batch_residues` aligns the pairs as a batch of merges on any backend and reads its
maps instead: the GPU's way, and on the CPU the oracle of :func:`pair_residues`."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np

from msa.backends.cpu.align import D_STEP, H_STEP, dp_codes
from msa.jit import njit
from msa.profile import AlignBatch
from msa.seqops import cost_bounds


#: Pieces of a library per thread: pairs differ in length, so the cells are cut finer than one
#: piece a thread for the threads to finish together.
PIECES_PER_THREAD = 8


def pair_residues(
    codes: np.ndarray, offsets: np.ndarray, pairs: np.ndarray, matrix: np.ndarray, gaps: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every pair ``(a, b)`` of ``pairs``, the residues (indices into ``codes``) of ``a`` and
    of ``b`` that their pairwise alignment puts in one column, and the pair (its row); pairs
    in order, each one's in column order. ``gaps``: one gap vector (msa.profile.gap_vector).

    The pairs are cut into pieces of about equal cells, aligned by :func:`align_pairs` on this
    thread's Numba thread count of Python threads (it holds no GIL). Not a ``prange``: a
    ``parallel=True`` function's loop body loaded from Numba's cache runs the DP's code as
    optimized twice (once alone, again linked into the loop's module), which took 1.7x as long
    as the code compiled once (balifam1000's largest library, 2-core dev machine; docs/progressive.md)."""
    pairs = np.ascontiguousarray(pairs, dtype=np.int64).reshape(-1, 2)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    matrix = np.ascontiguousarray(matrix, dtype=np.int64)
    gaps = np.ascontiguousarray(gaps, dtype=np.int64)
    lengths = np.diff(offsets)
    n = len(pairs)
    room = np.zeros(n + 1, dtype=np.int64)  # each pair's aligned residues: at most its shorter length
    np.cumsum(np.minimum(lengths[pairs[:, 0]], lengths[pairs[:, 1]]), out=room[1:])
    first = np.empty(room[n], dtype=np.int64)
    second = np.empty(room[n], dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)
    threads = min(numba.get_num_threads(), n)
    if threads <= 1:
        align_pairs(codes, offsets, pairs, matrix, gaps, room, 0, n, first, second, count)
    else:
        cells = np.cumsum(lengths[pairs[:, 0]] * lengths[pairs[:, 1]])
        cuts = cost_bounds(cells, max(1, -(-int(cells[-1]) // (threads * PIECES_PER_THREAD))))

        def piece(k: int) -> None:
            align_pairs(codes, offsets, pairs, matrix, gaps, room, cuts[k], cuts[k + 1], first, second, count)

        pool = ThreadPoolExecutor(threads, thread_name_prefix="msa-library")
        try:
            for _ in pool.map(piece, range(len(cuts) - 1)):
                pass
        finally:  # on an interrupt the pieces not begun are dropped, those begun end (~10 ms)
            pool.shutdown(wait=True, cancel_futures=True)
    return closed_up(first, second, count, room)


@njit(cache=True, nogil=True)
def align_pairs(
    codes: np.ndarray, offsets: np.ndarray, pairs: np.ndarray, m: np.ndarray, g: np.ndarray, room: np.ndarray,
    lo: int, hi: int, first: np.ndarray, second: np.ndarray, count: np.ndarray,
) -> None:
    """Pairs ``lo`` to ``hi`` of :func:`pair_residues`: each one's path walked forward (D: a
    residue of each; H: one of the second sequence alone; V: one of the first alone) into its
    room of ``first`` and ``second``, its aligned residues counted in ``count``."""
    for p in range(lo, hi):
        a0, a1 = offsets[pairs[p, 0]], offsets[pairs[p, 0] + 1]
        b0, b1 = offsets[pairs[p, 1]], offsets[pairs[p, 1] + 1]
        path = np.empty(a1 - a0 + b1 - b0, dtype=np.uint8)
        length = dp_codes(codes[a0:a1], codes[b0:b1], m, g, path)[0]
        i, j, k = a0, b0, room[p]
        for s in range(length - 1, -1, -1):  # the path is stored last step first
            state = path[s]
            if state == D_STEP:
                first[k] = i
                second[k] = j
                k += 1
                i += 1
                j += 1
            elif state == H_STEP:
                j += 1
            else:
                i += 1
        count[p] = k - room[p]


@njit(cache=True, nogil=True)
def closed_up(
    first: np.ndarray, second: np.ndarray, count: np.ndarray, room: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs' rooms closed up, with each residue pair's pair."""
    n = len(count)
    total = 0
    for p in range(n):
        total += count[p]
    out_a = np.empty(total, dtype=np.int64)
    out_b = np.empty(total, dtype=np.int64)
    out_p = np.empty(total, dtype=np.int64)
    at = 0
    for p in range(n):
        for k in range(room[p], room[p] + count[p]):
            out_a[at] = first[k]
            out_b[at] = second[k]
            out_p[at] = p
            at += 1
    return out_a, out_b, out_p


def batch_residues(
    backend: Any, codes: Any, offsets: np.ndarray, pairs: np.ndarray, matrix: np.ndarray, gaps: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`pair_residues` by ``backend``'s merge kernels: the pairs as one batch of merges
    of one-sequence profiles (``codes`` on the backend), gathered there from the codes and
    read off the maps on the host (:func:`aligned_residues`)."""
    lengths = np.diff(offsets)
    seqs = pairs.reshape(-1)
    col_off = np.concatenate(([0], np.cumsum(lengths[seqs]))).astype(np.int64)
    tables = backend.gather_profiles([], np.full(len(seqs), -1), offsets[seqs], lengths[seqs], codes)
    result = backend.profile_align(AlignBatch(
        tables, col_off, np.ones(len(seqs), dtype=np.int64), matrix, gaps, parents=False,
    ))
    del tables  # the device's one-hot tables go before the maps come over
    maps = backend.to_host(result.maps).astype(np.int64)
    return aligned_residues(maps, col_off, np.ascontiguousarray(offsets[seqs], dtype=np.int64))


@njit(cache=True, nogil=True)
def aligned_residues(maps: np.ndarray, col_off: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`pair_residues` read off a level batch whose merge ``p`` aligned rows ``2p`` and
    ``2p + 1`` (one sequence each): residue ``i`` of row ``r`` is ``starts[r] + i`` and its
    column ``maps[col_off[r] + i]``. The first row's residues are written into a slot per
    column, the second's read theirs back (NumPy over the whole library made ~10 passes over
    ~10^7 residues a 10^4 family: 0.14 s of the library's 0.47 s on a 16-core H200 host)."""
    n_pairs = (len(col_off) - 1) // 2
    most, width = 0, 0
    for p in range(n_pairs):
        most += min(col_off[2 * p + 1] - col_off[2 * p], col_off[2 * p + 2] - col_off[2 * p + 1])
        width = max(width, col_off[2 * p + 2] - col_off[2 * p])
    slot = np.full(width, -1, dtype=np.int64)
    first = np.empty(most, dtype=np.int64)
    second = np.empty(most, dtype=np.int64)
    pair = np.empty(most, dtype=np.int64)
    n = 0
    for p in range(n_pairs):
        a, b, end = col_off[2 * p], col_off[2 * p + 1], col_off[2 * p + 2]
        for i in range(a, b):
            slot[maps[i]] = starts[2 * p] + i - a
        for j in range(b, end):
            got = slot[maps[j]]
            if got >= 0:
                first[n], second[n], pair[n] = got, starts[2 * p + 1] + j - b, p
                n += 1
        for i in range(a, b):
            slot[maps[i]] = -1
    return first[:n], second[:n], pair[:n]
