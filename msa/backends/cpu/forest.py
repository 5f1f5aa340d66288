"""The progressive stage of a forest in one compiled call: the CPU's level loop.

msa.progressive drives the stage a level at a time, a gather, a batch of merges and a
placement per level, each one backend call; on the GPU each is a launch and must be. On the
CPU each level also paid 80-120 us of NumPy and dispatch, and single linkage's deep trees
are hundreds of levels of one small merge: PF01381.1000 (1,024 distinct sequences) has 534
levels and spent 66 ms in the level loop, 23 ms of it in the DP (a 2-core machine).
Here the same loop runs compiled, with the same pieces: leaves' one-hot rows and children's
tables gathered as msa.backends.cpu.segments gathers them, each level's merges by
msa.backends.cpu.align's ``_align_serial`` / ``_align_batch`` (the same DP, so the same
bytes), and the maps composed top-down into every residue's final column.

The call reports the merges done in ``state[DONE]`` after each level and stops at the next
level once ``state[STOP]`` is set: it runs on a thread of its own (:func:`run`) while the
calling thread reports progress, whose checkpoint raises on a signal, and then sets STOP, so a
run stops within a level as it does in the level loop.

Memory: a node's table lives from its merge until its parent's gather (a level's parents are
copied out of the batch's array, so a parent still waiting keeps only its own rows); every
level's maps are kept for the top-down pass and the consistency bonuses (8 bytes a column of
every non-root node), as the level loop keeps them. (One array for all levels' maps, grown by
doubling, made the stage 1.7-6x slower on PF03129.10000: its frees moved glibc's mmap
threshold, and every other run page-faulted ~5 GB.) The bonuses' long walks leave a
jump on each inner node they passed (its width, 8 bytes a column: at most the maps').
"""
from __future__ import annotations

import threading
from collections.abc import Callable

import numba
import numpy as np
from numba import types
from numba.typed import List

from msa.jit import njit
from msa.backends.cpu.align import PRANGE_ONLY, WAVE_CELLS, _align_batch, _align_serial, _align_wave
from msa.backends.cpu.segments import _copy_segment, _one_hot_segment
from msa.profile import N_COUNTS

#: ``state`` of align_forest: merges done so far (written by the call), and stop (set by the caller).
DONE, STOP = 0, 1
#: How often the calling thread looks at a running call (progress, signals), seconds.
POLL_S = 0.1
#: A bonus walk longer than this many steps makes its nodes jump (forest._climb).
JUMP_HOPS = 8


# align_forest calls the thread pool's twins of the batch DP (``_align_batch``, ``_align_wave``) on
# levels with the cells to share, and a function that calls a ``parallel=True`` one must be
# compiled by Numba's parallel pipeline too: compiled without it, its cached entry crashed the
# process that loaded it (Numba 0.68). Hence PRANGE_ONLY (and its warning filter, in align.py).


@njit(cache=True, nogil=True)
def _gather(codes, offsets, weights, tables, n, kids, widths, col_offsets) -> np.ndarray:
    """The children's tables end to end: a leaf's one-hot rows (of its weight), an inner node's table."""
    out = np.zeros((col_offsets[-1], N_COUNTS), dtype=np.int32)
    for i in range(len(kids)):
        c = kids[i]
        if c < n:
            _one_hot_segment(codes, offsets[c], col_offsets[i], widths[c], weights[c], out)
        else:
            _copy_segment(tables[c - n], 0, col_offsets[i], widths[c], out)
    return out


@njit(cache=True, nogil=True)
def new_walks(n_codes: int, n_leaves: int, n_inner: int) -> tuple:
    """The state of :func:`walk_samples` over a forest of ``n_leaves`` sequences
    (``n_codes`` residues) and ``n_inner`` merges: ``(cur, at, up, jumps, path)``. ``cur``
    keeps each sampled residue's column in node ``at[s]`` of its sequence (-1: not walked);
    inner node ``v``'s columns go straight to those of its ancestor ``up[v - n]`` by
    ``jumps[v - n]`` (-1 and empty: to its parent's, by its level's maps); ``path``: the
    nodes of one walk."""
    jumps = List.empty_list(types.int64[::1])
    none = np.zeros(0, dtype=np.int64)
    for _ in range(n_inner):
        jumps.append(none)
    return (np.zeros(n_codes, dtype=np.int64), np.full(n_leaves, -1, dtype=np.int64),
            np.full(n_inner, -1, dtype=np.int64), jumps, np.zeros(n_inner, dtype=np.int64))


@njit(cache=True, nogil=True)
def _climb(x: int, a: int, b: int, n: int, parent, widths, level_maps, map_level, map_off, walks) -> None:
    """Where inner node ``x``'s way up to its ancestor ``a`` or ``b`` takes more than JUMP_HOPS
    steps, make it and every node on the way go there in one jump (path compression): each
    composes its next node's jump (or level map) with its own, its width once, and a later walk
    from any of them takes one step. In a chain, where a large cluster takes in sequences one at
    a time and each guided merge draws new samples from it, the walks leaf to child were most of
    the bonuses' cost, every sample a residue per merge it climbed (PF00037.10000: 167 M residue
    steps); a short way is cheaper walked than composed (a node is wider than a sequence)."""
    up, jumps, path = walks[2], walks[3], walks[4]
    m = 0
    node = x
    while node != a and node != b:
        path[m] = node
        m += 1
        node = up[node - n] if up[node - n] >= 0 else parent[node]
    if m <= JUMP_HOPS:
        return
    for i in range(m - 2, -1, -1):  # from the top: path[i + 1] goes to ``node`` in one jump
        v, nxt = path[i], path[i + 1]
        if up[v - n] >= 0:
            own, o = jumps[v - n], 0
        else:
            own, o = level_maps[map_level[v]], map_off[v]
        if up[nxt - n] >= 0:
            then, t = jumps[nxt - n], 0
        else:
            then, t = level_maps[map_level[nxt]], map_off[nxt]
        jump = np.empty(widths[v], dtype=np.int64)
        for c in range(widths[v]):
            jump[c] = then[t + own[o + c]]
        up[v - n] = node
        jumps[v - n] = jump


@njit(cache=True, nogil=True)
def walk_samples(
    k: int, a: int, b: int, library: tuple, offsets: np.ndarray, parent: np.ndarray, widths: np.ndarray,
    level_maps, map_level: np.ndarray, map_off: np.ndarray, walks: tuple,
) -> None:
    """Every sampled sequence of merge ``k`` (children ``a``, ``b``) walked up to its child:
    afterwards ``walks``' ``cur`` (:func:`new_walks`) holds each of its residues' columns there.
    A sampled sequence's columns in its child come from the maps of the merges below, leaf to
    child: node ``v``'s column ``c`` is its parent's ``level_maps[map_level[v]][map_off[v] + c]``.
    Each sampled sequence's columns are kept in the node its last walk reached and inner nodes
    jump where the way is long (:func:`_climb`), so a sequence drawn again higher up walks on
    from there in a few steps. On this thread: a merge's samples are a few thousand residue
    steps, less than waking the thread pool costs (PF00155.10000's walks on 2 cores: 0.26 s on
    one thread, 0.39 s with a prange over the samples)."""
    samp_off, samp_seq = library[4], library[5]
    cur, at, up, jumps = walks[0], walks[1], walks[2], walks[3]
    n = len(offsets) - 1
    for t in range(samp_off[k], samp_off[k + 1]):
        s = samp_seq[t]
        x = s if at[s] < 0 else at[s]
        if x < n and x != a and x != b:
            x = parent[x]
        if x != a and x != b:
            _climb(x, a, b, n, parent, widths, level_maps, map_level, map_off, walks)
    for t in range(samp_off[k], samp_off[k + 1]):
        s = samp_seq[t]
        start, length = offsets[s], offsets[s + 1] - offsets[s]
        if at[s] < 0:
            for i in range(length):
                cur[start + i] = i
            at[s] = s
        node = at[s]
        while node != a and node != b:  # a step: a leaf's or a node's map to its parent, or a jump
            if node >= n and up[node - n] >= 0:
                maps, o, step = jumps[node - n], 0, up[node - n]
            else:
                maps, o, step = level_maps[map_level[node]], map_off[node], parent[node]
            for i in range(length):
                cur[start + i] = maps[o + cur[start + i]]
            node = step
        at[s] = node


@njit(cache=True, nogil=True)
def _add_merge_bonuses(
    out: np.ndarray, p0: int, count: int, wb: int, base: int, scale: int, lib_a: np.ndarray, lib_b: np.ndarray,
    vote: np.ndarray, cur: np.ndarray,
) -> None:
    """One merge's library pairs of residues ``p0..`` (``count``) each add their vote times
    ``scale`` (na x nb) where they lie in its table at ``out[base:]``: child ``a``'s column
    ``cur[lib_a[p]]`` by child ``b``'s ``cur[lib_b[p]]`` (``wb`` columns). Only the pairs' cells
    are touched: a guided merge of a wide cluster has a table of millions of cells and a few
    thousand pairs. (kernels/segments.cu's add_bonuses on the GPU.)"""
    for p in range(p0, p0 + count):
        out[base + cur[lib_a[p]] * wb + cur[lib_b[p]]] += vote[p] * scale


@njit(cache=True, nogil=True)
def _add_bonuses(
    out: np.ndarray, first: np.ndarray, count: np.ndarray, wb: np.ndarray, base: np.ndarray, scale: np.ndarray,
    lib_a: np.ndarray, lib_b: np.ndarray, vote: np.ndarray, cur: np.ndarray,
) -> None:
    """:func:`_add_merge_bonuses` of each merge ``g`` of a level."""
    for g in range(len(first)):
        _add_merge_bonuses(out, first[g], count[g], wb[g], base[g], scale[g], lib_a, lib_b, vote, cur)


def add_bonuses(
    out: np.ndarray, first: np.ndarray, count: np.ndarray, wb: np.ndarray, base: np.ndarray, scale: np.ndarray,
    lib_a: np.ndarray, lib_b: np.ndarray, vote: np.ndarray, cur: np.ndarray,
) -> None:
    """CpuBackend.add_bonuses (see Backend): :func:`_add_bonuses` of a level's guided merges."""
    _add_bonuses(out, *(np.ascontiguousarray(x, dtype=np.int64) for x in (first, count, wb, base, scale)),
                 lib_a, lib_b, vote, cur)


@njit(cache=True, nogil=True)
def _walk_columns(cur: np.ndarray, start: np.ndarray, count: np.ndarray, base: np.ndarray, maps: np.ndarray) -> None:
    for g in range(len(start)):
        for i in range(start[g], start[g] + count[g]):
            cur[i] = maps[base[g] + cur[i]]


def walk_columns(cur: np.ndarray, start: np.ndarray, count: np.ndarray, base: np.ndarray, maps: np.ndarray) -> None:
    """CpuBackend.walk_columns (see Backend): a level's maps take the columns ``cur[start[g]:
    start[g] + count[g]]`` of its child ``g`` (whose columns begin at ``base[g]`` in ``maps``) to
    their columns in its parent (the kernels/segments.cu walk_columns' oracle)."""
    _walk_columns(cur, *(np.ascontiguousarray(x, dtype=np.int64) for x in (start, count, base)), maps)


@njit(cache=True, nogil=True)
def bonus_table(
    k: int, a: int, b: int, wb: int, na: int, nb: int, library: tuple, offsets: np.ndarray, parent: np.ndarray,
    widths: np.ndarray, level_maps, map_level: np.ndarray, map_off: np.ndarray, walks: tuple, out: np.ndarray,
) -> None:
    """Merge ``k``'s cell bonuses (msa.consistency) added into ``out`` (zeros), child ``a``'s
    columns by child ``b``'s (``wb``): each library pair of residues adds ``na * nb`` x its vote
    where its sequences' walks (:func:`walk_samples`) put them (:func:`_add_merge_bonuses`)."""
    lib_off, lib_a, lib_b, vote = library[0], library[1], library[2], library[3]
    walk_samples(k, a, b, library, offsets, parent, widths, level_maps, map_level, map_off, walks)
    _add_merge_bonuses(out, lib_off[k], lib_off[k + 1] - lib_off[k], wb, 0, na * nb, lib_a, lib_b, vote, walks[0])


@njit(cache=True, nogil=True, parallel=PRANGE_ONLY)
def align_forest(
    codes: np.ndarray, offsets: np.ndarray, weights: np.ndarray, children: np.ndarray, order: np.ndarray,
    bounds: np.ndarray, gaps: np.ndarray, matrix: np.ndarray, serial_cells: int, library, state: np.ndarray,
    threads: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Every merge of the forest, level by level, then every residue's final column.

    ``children[k]``: inner node ``n + k``'s two children (leaves ``< n``, sequence ``i`` at
    ``codes[offsets[i]:offsets[i + 1]]``, of weight ``weights[i]``); ``order[bounds[l]:bounds[l +
    1]]``: the inner nodes of level ``l``; ``gaps[k]``: merge ``k``'s gap vector. A level of fewer than
    ``serial_cells`` DP cells (or of one merge) runs on this thread, as align_batch decides, but a
    level of one merge of at least WAVE_CELLS cells spreads its DP over the ``threads`` (the
    calling thread's Numba threads, an argument since a compiled call that asks cannot be cached;
    _align_wave).
    ``library``: the merges' consistency libraries (msa.consistency.TopLibrary.arrays; merges
    without pairs get no bonus).
    Returns the final column of every residue (``codes`` layout) and every node's width;
    stopped (``state[STOP]``), what it returns is not an alignment."""
    n = len(offsets) - 1
    n_inner = len(children)
    widths = np.zeros(n + n_inner, dtype=np.int64)
    for i in range(n):
        widths[i] = offsets[i + 1] - offsets[i]
    n_seqs = np.ones(n + n_inner, dtype=np.int64)  # a profile's sequences, by weight
    n_seqs[:n] = weights
    no_table = np.zeros((0, N_COUNTS), dtype=np.int32)
    tables = [no_table for _ in range(n_inner)]
    n_levels = len(bounds) - 1
    level_maps = [np.zeros(0, dtype=np.int64) for _ in range(n_levels)]
    map_level = np.full(n + n_inner, -1, dtype=np.int64)  # the level whose maps hold a node's columns
    map_off = np.zeros(n + n_inner, dtype=np.int64)
    columns = np.empty(len(codes), dtype=np.int64)
    lib_off = library[0]
    parent = np.full(n + n_inner, -1, dtype=np.int64)
    for k in range(n_inner):
        parent[children[k, 0]] = parent[children[k, 1]] = n + k
    on = lib_off[-1] > 0
    walks = new_walks(len(codes) if on else 0, n if on else 0, n_inner if on else 0)  # walk_samples' state
    no_bonus = np.zeros(0, dtype=np.int64)
    for lv in range(n_levels):
        if state[STOP]:
            return columns, widths
        nodes = order[bounds[lv] : bounds[lv + 1]]
        m = len(nodes)
        kids = np.empty(2 * m, dtype=np.int64)
        col_offsets = np.zeros(2 * m + 1, dtype=np.int64)
        cells = 0
        for j in range(m):
            a, b = children[nodes[j] - n, 0], children[nodes[j] - n, 1]
            kids[2 * j], kids[2 * j + 1] = a, b
            col_offsets[2 * j + 1] = col_offsets[2 * j] + widths[a]
            col_offsets[2 * j + 2] = col_offsets[2 * j + 1] + widths[b]
            cells += widths[a] * widths[b]
        counts = _gather(codes, offsets, weights, tables, n, kids, widths, col_offsets)
        kid_seqs = np.empty(2 * m, dtype=np.int64)
        for i in range(2 * m):
            kid_seqs[i] = n_seqs[kids[i]]
            if kids[i] >= n:
                tables[kids[i] - n] = no_table  # taken: its rows are in ``counts`` now
            map_level[kids[i]] = lv
            map_off[kids[i]] = col_offsets[i]
        g = np.empty((m, 4), dtype=np.int64)
        for j in range(m):
            g[j] = gaps[nodes[j] - n]
        bonus_off = np.zeros(m + 1, dtype=np.int64)
        for j in range(m):
            k = nodes[j] - n
            size = widths[kids[2 * j]] * widths[kids[2 * j + 1]] if lib_off[k + 1] > lib_off[k] else 0
            bonus_off[j + 1] = bonus_off[j] + size
        bonus = no_bonus
        if bonus_off[m] > 0:
            bonus = np.zeros(bonus_off[m], dtype=np.int64)
            for j in range(m):
                if bonus_off[j + 1] > bonus_off[j]:
                    bonus_table(
                        nodes[j] - n, kids[2 * j], kids[2 * j + 1], widths[kids[2 * j + 1]], kid_seqs[2 * j],
                        kid_seqs[2 * j + 1], library, offsets, parent, widths, level_maps, map_level, map_off,
                        walks, bonus[bonus_off[j] : bonus_off[j + 1]])
        if m == 1 and cells >= WAVE_CELLS and threads > 1:
            maps, parents, parent_off = _align_wave(counts, col_offsets, kid_seqs, matrix, g, bonus, bonus_off, threads)
        elif m == 1 or cells < serial_cells:
            maps, parents, parent_off = _align_serial(counts, col_offsets, kid_seqs, matrix, g, bonus, bonus_off)
        else:
            maps, parents, parent_off = _align_batch(counts, col_offsets, kid_seqs, matrix, g, bonus, bonus_off)
        for j in range(m):
            v = nodes[j]
            widths[v] = parent_off[j + 1] - parent_off[j]
            n_seqs[v] = kid_seqs[2 * j] + kid_seqs[2 * j + 1]
            tables[v - n] = parents[parent_off[j] : parent_off[j + 1]].copy()
        level_maps[lv] = maps
        state[DONE] += m
    no_final = np.zeros(0, dtype=np.int64)
    finals = [no_final for _ in range(n_inner)]
    for at in range(len(order) - 1, -1, -1):  # parents before children: a parent's level is higher
        v = order[at]
        final = np.arange(widths[v]) if map_level[v] < 0 else finals[v - n]  # a root's columns are its own
        finals[v - n] = no_final
        for side in range(2):
            c = children[v - n, side]
            maps, o, w = level_maps[map_level[c]], map_off[c], widths[c]
            if c < n:
                s = offsets[c]
                for i in range(w):
                    columns[s + i] = final[maps[o + i]]
            else:
                mine = np.empty(w, dtype=np.int64)
                for i in range(w):
                    mine[i] = final[maps[o + i]]
                finals[c - n] = mine
    return columns, widths


def wave_threads(threads: int) -> int:
    """The threads one large merge's DP may spread over (``dp_path_wave``, whose blocks wait on
    the block on their left): ``threads`` where Numba's pool runs each thread's share of a loop
    in turn (OpenMP, workqueue), else 1 (TBB, which may run a later block before an earlier one
    on a thread that then waits; or a process where no parallel loop has chosen the pool yet)."""
    try:
        layer = numba.threading_layer()
    except ValueError:
        return 1
    return threads if layer in ("omp", "workqueue") else 1


def run(
    codes: np.ndarray, offsets: np.ndarray, weights: np.ndarray, children: np.ndarray, order: np.ndarray,
    bounds: np.ndarray, gaps: np.ndarray, matrix: np.ndarray, serial_cells: int, library: tuple,
    advance: Callable[[int], None],
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`align_forest` on a thread of its own (it holds no GIL) with this thread's Numba
    threads, while this one calls ``advance`` with the merges done every POLL_S. ``advance`` is
    a checkpoint (msa.progress): where it raises (Interrupted, on a signal) the call is stopped
    at its next level and waited for before the error goes on."""
    state = np.zeros(2, dtype=np.int64)
    threads = numba.get_num_threads()  # a setting of the calling thread
    out: list = []

    def work() -> None:
        try:
            numba.set_num_threads(threads)
            out.append(align_forest(codes, offsets, weights, children, order, bounds, gaps, matrix, serial_cells,
                                    library, state, wave_threads(threads)))
        except BaseException as exc:  # raised on the calling thread
            out.append(exc)

    worker = threading.Thread(target=work, name="msa-forest", daemon=True)
    reported = 0
    worker.start()
    try:
        while worker.is_alive():
            worker.join(POLL_S)
            done = int(state[DONE])
            advance(done - reported)  # a checkpoint: raises Interrupted on a signal
            reported = done
    except BaseException:
        state[STOP] = 1  # it stops at its next level before the error goes on
        worker.join()
        raise
    if isinstance(out[0], BaseException):
        raise out[0]
    advance(len(children) - reported)
    return out[0]
