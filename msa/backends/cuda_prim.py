"""Prim's single-linkage MST over LCS distances on the GPU (kernels/lcs_prim.cu).

The device twin of :func:`msa.backends.cpu_lcs_tree.lcs_prim_mst`: the same edges in
the same order, bit for bit, in O(n) device memory. Each distance row is computed
once, when its vertex joins the tree, so an n-sequence group costs n^2/2 LCS pairs
and n - 1 grid-wide steps, run by one persistent launch per phase. A phase ends when
half of its vertices have joined; the survivors are then compacted and repacked, so
threads never sit on finished vertices for more than half a phase.
"""
from __future__ import annotations

import cupy as cp
import numpy as np

from msa import kernels
from msa.backends.cpu_kmers import pow075_table

#: Threads per block of prim_steps (a multiple of 32).
PRIM_THREADS = 256
#: Mask rows in shared memory (kernels/lcs_prim.cu PRIM_ROWS): every value of code & 31.
PRIM_ROWS = 32
#: Largest mask table (PRIM_ROWS x words x 8 bytes) kept in shared memory; longer
#: sequences (~50k residues) leave the group to the CPU.
PRIM_SHARED_MAX = 200 * 1024
#: Groups of at most this many remaining vertices run to the end without compaction.
PRIM_COMPACT_MIN = 4096
#: Words of V held in registers (kernels/lcs_core.cuh LCS_CHAIN_MAX); longer need a scratch.
PRIM_REGISTER_WORDS = 8


def fits(offsets: np.ndarray, ids: np.ndarray) -> bool:
    """Whether the longest sequence's masks fit in shared memory."""
    lens = offsets[ids + 1] - offsets[ids]
    return _shared_bytes(int(lens.max(initial=1))) <= PRIM_SHARED_MAX


def lcs_prim_mst(
    codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, device: int, n_sm: int,
    compact_min: int = PRIM_COMPACT_MIN,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prim's MST edges (a, b, weight; local indices, Prim order) of group ``ids``, as the CPU's."""
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    s = len(ids)
    if s < 2:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0)
    lens = offsets[ids + 1] - offsets[ids]
    max_len = max(int(lens.max()), 1)
    words_max = -(-max_len // 64)
    shared = _shared_bytes(max_len)
    seq_off = np.zeros(s + 1, dtype=np.int64)
    np.cumsum(lens, out=seq_off[1:])
    order = np.argsort(lens, kind="stable")
    positions = order[order != 0].astype(np.int32)  # vertex 0 starts the tree
    with cp.cuda.Device(device):
        module = kernels.load("lcs_prim", (), device)
        steps, pack = module.get_function("prim_steps"), module.get_function("prim_pack")
        steps.max_dynamic_shared_size_bytes = shared
        resident = _resident_blocks(steps, shared) * n_sm
        d_codes = cp.asarray(codes[np.repeat(offsets[ids], lens) + _within(lens)])
        d_seq_off = cp.asarray(seq_off)
        d_pow = cp.asarray(pow075_table(2 * max_len + 1))
        pos_local = cp.asarray(positions)
        pos_len = cp.asarray(lens[positions].astype(np.int32))
        best = cp.full(s - 1, np.inf)
        via = cp.zeros(s - 1, dtype=cp.int32)
        in_tree = cp.zeros(s - 1, dtype=cp.uint8)
        state = cp.zeros(1, dtype=cp.int32)
        bar = cp.zeros(2, dtype=cp.uint32)
        edge_a = cp.empty(s - 1, dtype=cp.int32)
        edge_b = cp.empty(s - 1, dtype=cp.int32)
        edge_w = cp.empty(s - 1, dtype=cp.float64)
        step = 0
        while step < s - 1:
            n_pos = len(pos_local)
            pk, sec_off = _packed(pack, d_codes, d_seq_off, pos_local, pos_len, n_sm)
            end = s - 1 if n_pos <= compact_min else step + n_pos // 2
            blocks = max(1, min(resident, -(-n_pos // PRIM_THREADS)))
            part = cp.empty(2 * blocks, dtype=cp.int64)  # kernel's Key: 16 bytes a block
            scratch_words = words_max * blocks * PRIM_THREADS if words_max > PRIM_REGISTER_WORDS else 1
            scratch = cp.empty(scratch_words, dtype=cp.uint64)
            steps(
                (blocks,), (PRIM_THREADS,),
                (pk, sec_off, pos_local, pos_len, np.int32(n_pos), d_codes, d_seq_off, d_pow, best, via, in_tree,
                 state, np.int32(step), np.int32(end), edge_a, edge_b, edge_w, part, bar, scratch),
                shared_mem=shared,
            )
            step = end
            if step < s - 1:
                keep = cp.flatnonzero(in_tree == 0)
                pos_local, pos_len, best, via = pos_local[keep], pos_len[keep], best[keep], via[keep]
                in_tree = cp.zeros(len(keep), dtype=cp.uint8)
        return edge_a.get().astype(np.int64), edge_b.get().astype(np.int64), edge_w.get()


def _shared_bytes(max_len: int) -> int:
    return PRIM_ROWS * max(-(-max_len // 64), 1) * 8


def _within(lens: np.ndarray) -> np.ndarray:
    """0..len-1 for each length, end to end."""
    starts = np.cumsum(lens) - lens
    return np.arange(int(lens.sum()), dtype=np.int64) - np.repeat(starts, lens)


def _resident_blocks(kernel, shared: int) -> int:
    """Blocks of ``kernel`` one SM holds at once: the persistent launch's barrier needs all resident."""
    func = getattr(kernel, "kernel", kernel)
    n = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(func.ptr, PRIM_THREADS, shared)
    if n < 1:
        raise RuntimeError("prim_steps cannot run a block on this GPU")
    return int(n)


def _packed(pack, d_codes, d_seq_off, pos_local: cp.ndarray, pos_len: cp.ndarray, n_sm: int):
    """Residues of the positions, 16 a uint4, in warp-interleaved sections (see kernels/lcs_prim.cu)."""
    n_pos = len(pos_local)
    padded = cp.zeros(-(-n_pos // 32) * 32, dtype=cp.int64)
    padded[:n_pos] = pos_len
    sec_words = 128 * ((padded.reshape(-1, 32).max(axis=1) + 15) // 16)
    sec_off = cp.zeros(len(sec_words) + 1, dtype=cp.int64)
    cp.cumsum(sec_words, out=sec_off[1:])
    n_words = int(sec_off[-1])
    pk = cp.empty(max(n_words, 1), dtype=cp.uint32)
    blocks = max(1, min(-(-n_words // 256), 32 * n_sm))
    pack((blocks,), (256,), (d_codes, d_seq_off, pos_local, np.int32(n_pos), sec_off, np.int64(n_words), pk))
    return pk, sec_off
