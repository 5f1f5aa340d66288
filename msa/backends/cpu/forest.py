"""The progressive stage of a forest in one compiled call: the CPU's level loop.

msa.progressive drives the stage a level at a time, a gather, a batch of merges and a
placement per level, each one backend call; on the GPU each is a launch and must be. On the
CPU each level also paid 80-120 us of NumPy and dispatch, and single linkage's deep trees
are hundreds of levels of one small merge: PF01381.1000 (1,024 distinct sequences) has 534
levels and spent 66 ms in the stage, 23 ms of it in the DP (2-core dev machine, session 20).
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
threshold, and every other run page-faulted ~5 GB; session 24.)
"""
from __future__ import annotations

import threading
import warnings
from collections.abc import Callable

import numba
import numpy as np
from numba import types
from numba.core.errors import NumbaPerformanceWarning
from numba.typed import List

from msa._runtime.jit import njit
from msa.backends.cpu.align import _align_batch, _align_serial
from msa.backends.cpu.segments import _copy_segment, _one_hot_segment
from msa.profile import N_COUNTS

#: ``state`` of align_forest: merges done so far (written by the call), and stop (set by the caller).
DONE, STOP = 0, 1
#: How often the calling thread looks at a running call (progress, signals), seconds.
POLL_S = 0.1


#: align_forest calls the thread pool's twin of the batch DP (``_align_batch``) on levels with
#: the cells to share (and bonus_cells' walks), and a function that calls a ``parallel=True``
#: one must be compiled by Numba's parallel pipeline too: compiled without it, its cached entry
#: crashed the process that loaded it (Numba 0.68). With prange only, none of Numba's other
#: rewrites (array creation, array expressions), which would wake the pool for every small
#: array a level makes.
PRANGE_ONLY = {"prange": True, "numpy": False, "comprehension": False, "setitem": False, "reduction": False,
               "stencil": False, "fusion": False, "inplace_binop": False}
# Numba then warns, when it compiles align_forest, that the pipeline found nothing to run in
# parallel: true, and meant so. Only that warning about this file is silenced.
warnings.filterwarnings(
    "ignore", r"(?s).*'parallel=True' was specified but no transformation.*msa.backends.cpu.forest\.py",
    NumbaPerformanceWarning,
)


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


@njit(cache=True, nogil=True, parallel=PRANGE_ONLY)
def bonus_cells(
    k: int, a: int, b: int, wb: int, library: tuple, offsets: np.ndarray, parent: np.ndarray, level_maps,
    map_level: np.ndarray, map_off: np.ndarray, cur: np.ndarray, at: np.ndarray, out: np.ndarray,
) -> None:
    """The cell of merge ``k``'s table (child ``a``'s columns by child ``b``'s, ``wb``) where each
    of its library pairs of residues lies, into ``out`` (one per pair). A sampled sequence's
    columns in its child come from the maps of the merges below, leaf to child: node ``v``'s
    column ``c`` is its parent's ``level_maps[map_level[v]][map_off[v] + c]``. ``cur``
    (residues) keeps each sampled sequence's columns in node ``at[s]`` (-1: not yet walked), so
    a sequence drawn again higher up walks on from there: in a chain, where a large cluster
    takes in sequences one at a time, the walks are most of the bonuses' cost. The level loop
    (msa.consistency.LevelBonuses) calls it through :func:`level_bonuses`. The walks go on the
    thread pool, a sampled sequence a thread (the samples of a merge are distinct sequences)."""
    lib_off, lib_a, lib_b, _, samp_off, samp_seq = library
    for t in numba.prange(samp_off[k], samp_off[k + 1]):
        s = samp_seq[t]
        start, length = offsets[s], offsets[s + 1] - offsets[s]
        node = at[s]
        if node < 0:
            for i in range(length):
                cur[start + i] = i
            node = s
        while node != a and node != b:
            maps, o = level_maps[map_level[node]], map_off[node]
            for i in range(length):
                cur[start + i] = maps[o + cur[start + i]]
            node = parent[node]
        at[s] = node
    for p in range(lib_off[k], lib_off[k + 1]):
        out[p - lib_off[k]] = cur[lib_a[p]] * wb + cur[lib_b[p]]


@njit(cache=True, nogil=True, parallel=PRANGE_ONLY)  # it calls bonus_cells (see PRANGE_ONLY)
def bonus_table(
    k: int, a: int, b: int, wb: int, na: int, nb: int, library: tuple, offsets: np.ndarray, parent: np.ndarray,
    level_maps, map_level: np.ndarray, map_off: np.ndarray, cur: np.ndarray, at: np.ndarray, out: np.ndarray,
) -> None:
    """Merge ``k``'s cell bonuses (msa.consistency) added into ``out`` (zeros), child ``a``'s
    columns by child ``b``'s (``wb``): each library pair of residues adds ``na * nb`` x its vote
    where it puts them (:func:`bonus_cells`). Only the pairs' cells are touched: a guided merge
    of a wide cluster has a table of millions of cells and a few thousand pairs."""
    lib_off, vote = library[0], library[3]
    cells = np.empty(lib_off[k + 1] - lib_off[k], dtype=np.int64)
    bonus_cells(k, a, b, wb, library, offsets, parent, level_maps, map_level, map_off, cur, at, cells)
    for p in range(len(cells)):
        out[cells[p]] += na * nb * vote[lib_off[k] + p]


@njit(cache=True, nogil=True, parallel=PRANGE_ONLY)  # it calls bonus_cells (see PRANGE_ONLY)
def level_bonuses(
    ks: np.ndarray, a: np.ndarray, b: np.ndarray, wb: np.ndarray, scale: np.ndarray, base: np.ndarray,
    library: tuple, offsets: np.ndarray, parent: np.ndarray, level_maps, map_level: np.ndarray,
    map_off: np.ndarray, cur: np.ndarray, at: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """A level's bonuses for the level loop (msa.consistency.LevelBonuses): each library pair
    of residues of merge ``ks[j]`` (children ``a[j]``, ``b[j]``) as its cell (at ``base[j]``,
    :func:`bonus_cells`) and its vote times ``scale[j]`` (na x nb); a cell may come more than
    once. One call a level: a level's Python work per guided merge cost more than its walks
    (PF00009.10000 on 2 cores: 0.28 of 0.49 s)."""
    lib_off, vote = library[0], library[3]
    total = 0
    for j in range(len(ks)):
        total += lib_off[ks[j] + 1] - lib_off[ks[j]]
    cells = np.empty(total, dtype=np.int64)
    values = np.empty(total, dtype=np.int64)
    o = 0
    for j in range(len(ks)):
        lo, hi = lib_off[ks[j]], lib_off[ks[j] + 1]
        got = cells[o : o + hi - lo]
        bonus_cells(ks[j], a[j], b[j], wb[j], library, offsets, parent, level_maps, map_level, map_off, cur, at, got)
        for i in range(hi - lo):
            got[i] += base[j]
            values[o + i] = vote[lo + i] * scale[j]
        o += hi - lo
    return cells, values


@njit(cache=True, nogil=True)
def new_level_maps():
    """An empty list of levels' maps for the level loop's bonuses (msa.consistency.LevelBonuses).
    Made and filled by compiled calls, which a run loads ready: numba.typed.List's own methods,
    called from Python, are compiled anew in every process (~0.6 s here, a served run included)."""
    return List.empty_list(types.int64[::1])


@njit(cache=True, nogil=True)
def keep_level_maps(level_maps, maps: np.ndarray) -> None:
    """Append a level's maps to :func:`new_level_maps`'s list."""
    level_maps.append(maps)


@njit(cache=True, nogil=True, parallel=PRANGE_ONLY)
def align_forest(
    codes: np.ndarray, offsets: np.ndarray, weights: np.ndarray, children: np.ndarray, order: np.ndarray,
    bounds: np.ndarray, gaps: np.ndarray, matrix: np.ndarray, serial_cells: int, library, state: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Every merge of the forest, level by level, then every residue's final column.

    ``children[k]``: inner node ``n + k``'s two children (leaves ``< n``, sequence ``i`` at
    ``codes[offsets[i]:offsets[i + 1]]``, of weight ``weights[i]``); ``order[bounds[l]:bounds[l +
    1]]``: the inner nodes of level ``l``; ``gaps[k]``: merge ``k``'s gap vector. A level of fewer than
    ``serial_cells`` DP cells (or of one merge) runs on this thread, as align_batch decides.
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
    cur = np.zeros(len(codes) if lib_off[-1] > 0 else 0, dtype=np.int64)  # sampled residues' columns
    at = np.full(n if lib_off[-1] > 0 else 0, -1, dtype=np.int64)  # the node of each sequence's ``cur``
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
                        kid_seqs[2 * j + 1], library, offsets, parent, level_maps, map_level, map_off, cur, at,
                        bonus[bonus_off[j] : bonus_off[j + 1]])
        if m == 1 or cells < serial_cells:
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
                                    library, state))
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
