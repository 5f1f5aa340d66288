"""FAMSA's LCS distance on the GPU (kernels/lcs_distance.cu), beside its CPU oracle msa.backends.cpu.lcs."""
from __future__ import annotations

import cupy as cp
import numpy as np

from msa import kernels
from msa.backends.cuda.memory import DeviceStage, condensed_in_pieces, run_in_pieces, sequences_on_device

#: Threads of an LCS tile: one row sequence against up to this many later members of its group.
LCS_THREADS = 128
#: 64-residue word counts with a register kernel (lcs_tiles_<W> in kernels/lcs_distance.cu).
LCS_WORDS = np.array([1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32])
#: Resident LCS blocks per SM the grids are sized for (128 threads, <= 128 registers each).
LCS_BLOCKS_PER_SM = 16
#: Most shared memory (bytes) for the masks of one lcs_tiles_long block; past it they go to global memory.
LCS_LONG_SHARED = 96 * 1024
#: Most bytes of global V scratch for the rows longer than LCS_WORDS[-1] words.
LCS_LONG_SCRATCH = 1 << 28
#: Device bytes per residue (codes) and per pair (output, tiles) of an LCS piece.
LCS_BYTES_PER_RESIDUE = 1
LCS_BYTES_PER_PAIR = 8 + 16 / LCS_THREADS
#: Device bytes per (member, reference) pair of a nearest-sample piece (distance, tiles).
SAMPLE_BYTES_PER_PAIR = 8 + 24 / LCS_THREADS


class LcsStage(DeviceStage):
    """lcs_distance_matrix, lcs_nearest_sample, lcs_nearest_reference and lcs_prim_msts of
    :class:`~msa.backends.cuda.CudaBackend`."""

    # Delegated to the CPU backend: no kernel yet (the Backend Protocol says which stages
    # may be delegated and why). Replace a body here when its kernel lands.
    def lcs_nearest_reference(
        self, codes: np.ndarray, offsets: np.ndarray, ref_ids: np.ndarray, ref_off: np.ndarray,
        member_ids: np.ndarray, member_node: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """On the CPU (msa.backends.cpu.lcs): PartTree's picks split with link matrices."""
        from msa.backends.cpu import CpuBackend  # local: (b) Numba: the GPU path imports it only here (docs/start-up.md, step 8)

        return CpuBackend().lcs_nearest_reference(codes, offsets, ref_ids, ref_off, member_ids, member_node)

    def lcs_prim_msts(
        self, codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Prim's MSTs of many groups on the device (:func:`prim_msts`), equal to the CPU's edge for
        edge; groups holding a sequence too long for the shared-memory masks (~50k residues) run
        on the CPU."""
        ids = np.asarray(ids, dtype=np.int64)
        if prim_fits(offsets, ids):
            return prim_msts(codes, offsets, ids, group_off, self.device, self.n_sm)
        from msa.backends.cpu import CpuBackend  # local: (b) Numba: the GPU path imports it only here (docs/start-up.md, step 8)

        return CpuBackend().lcs_prim_msts(codes, offsets, ids, group_off)

    def lcs_distance_matrix(
        self, codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Condensed FAMSA indel075_div_lcs matrices of many groups (kernels/lcs_distance.cu; equal to the CPU's).

        Groups are cut into pieces that fit the free device memory; a piece
        uploads only its own sequences' codes and brings back its distances.
        """
        lens = np.diff(offsets)[np.asarray(ids, dtype=np.int64)]
        with cp.cuda.Device(self.device):
            d_pow = _pow075(2 * max(int(lens.max(initial=0)), 1) + 1)
            return condensed_in_pieces(
                codes, offsets, ids, group_off, (LCS_BYTES_PER_PAIR, LCS_BYTES_PER_RESIDUE, 64),
                lambda c, o, piece_ids, piece_off: self._lcs_piece(c, o, piece_ids, piece_off, d_pow),
                self.memory_limit,
            )

    def _lcs_piece(
        self, codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray, d_pow: cp.ndarray
    ) -> np.ndarray:
        """One launch per word class for the condensed LCS matrices of these groups (host result)."""
        module = kernels.load("lcs_distance", (), self.device)
        lens, d_codes, d_seq_off = sequences_on_device(codes, offsets, ids)
        plan = _lcs_tiles(group_off, lens)
        src, grp_pos0 = _padded_runs(group_off[:-1], np.diff(group_off))
        pos_len = np.where(src >= 0, lens[np.maximum(src, 0)], 0).astype(np.int32)
        pk, sec_off = _packed(module.get_function("lcs_pack"), d_codes, d_seq_off, src, pos_len, self.n_sm)
        packed = (pk, sec_off, cp.asarray(grp_pos0))
        out = cp.empty(int(plan["out_off"][-1]), dtype=cp.float64)
        d = {k: cp.asarray(plan[k]) for k in ("group_off", "out_off", "row_group", "row_index", "tile_row", "tile_j0")}
        args = (d_codes, d_seq_off, d["group_off"], d["out_off"], d["row_group"], d["row_index"])
        bounds = plan["class_off"]
        for k in range(len(LCS_WORDS) + 1):
            lo, hi = int(bounds[k]), int(bounds[k + 1])
            if lo < hi:
                tiles = (d["tile_row"][lo:hi], d["tile_j0"][lo:hi], np.int64(hi - lo), d_pow, out)
                self._lcs_launch(module, "lcs_tiles", k, (*args, *tiles), hi - lo, int(plan["long_words"]), packed)
        return out.get()

    def lcs_nearest_sample(
        self,
        codes: np.ndarray,
        offsets: np.ndarray,
        ref_ids: np.ndarray,
        ref_off: np.ndarray,
        member_ids: np.ndarray,
        member_node: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each member's nearest reference of its node (earlier wins ties) and distance (kernels/lcs_distance.cu).

        Equal to :func:`msa.backends.cpu.lcs.lcs_nearest_sample` bit for bit.
        Members are cut into pieces whose (member x reference) distances fit the
        free device memory; a piece uploads its members and their nodes' references.
        """
        codes = np.ascontiguousarray(codes, dtype=np.uint8)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        ref_ids = np.ascontiguousarray(ref_ids, dtype=np.int64)
        ref_off = np.ascontiguousarray(ref_off, dtype=np.int64)
        member_ids = np.ascontiguousarray(member_ids, dtype=np.int64)
        member_node = np.ascontiguousarray(member_node, dtype=np.int64)
        m = len(member_ids)
        best = np.zeros(m, dtype=np.int32)
        best_d = np.zeros(m, dtype=np.float64)
        if m == 0:
            return best, best_d
        lens = np.diff(offsets)
        max_len = max(int(lens[ref_ids].max(initial=0)), int(lens[member_ids].max()), 1)
        n_refs = np.diff(ref_off)[member_node]
        with cp.cuda.Device(self.device):
            d_pow = _pow075(2 * max_len + 1)

            def piece(lo: int, hi: int) -> None:
                best[lo:hi], best_d[lo:hi] = self._sample_piece(
                    codes, offsets, ref_ids, ref_off, member_ids[lo:hi], member_node[lo:hi], d_pow
                )

            cost = SAMPLE_BYTES_PER_PAIR * n_refs + LCS_BYTES_PER_RESIDUE * lens[member_ids] + 128
            run_in_pieces(cost, piece, self.memory_limit)
        return best, best_d

    def _sample_piece(self, codes, offsets, ref_ids, ref_off, member_ids, member_node, d_pow):
        """Distance tiles of these members against their nodes' references, then one argmin per member."""
        module = kernels.load("lcs_distance", (), self.device)
        m = len(member_ids)
        order = np.argsort(member_node, kind="stable")
        node_s = member_node[order]
        nodes, node_mem, node_nmem = np.unique(node_s, return_index=True, return_counts=True)
        node_nref = ref_off[nodes + 1] - ref_off[nodes]
        ref_first = np.cumsum(node_nref) - node_nref
        n_ref_seqs = int(node_nref.sum())
        ref_pos = np.arange(n_ref_seqs, dtype=np.int64) + np.repeat(ref_off[nodes] - ref_first, node_nref)
        lens, d_codes, d_seq_off = sequences_on_device(codes, offsets, np.concatenate((member_ids[order], ref_ids[ref_pos])))
        sizes = node_nref * node_nmem
        node_dist = np.cumsum(sizes) - sizes
        # tiles: (node, reference, first member), ordered by the reference's word class
        row_node = np.repeat(np.arange(len(nodes), dtype=np.int64), node_nref)
        row_r = np.arange(n_ref_seqs, dtype=np.int64) - ref_first[row_node]
        row_tiles = -(-node_nmem[row_node] // LCS_THREADS)
        words = np.maximum(-(-lens[m + np.arange(n_ref_seqs)] // 64), 1)
        row_class = np.searchsorted(LCS_WORDS, words)
        n_tiles = int(row_tiles.sum())
        tile_row = np.repeat(np.arange(n_ref_seqs, dtype=np.int64), row_tiles)
        first = np.repeat(np.cumsum(row_tiles) - row_tiles, row_tiles)
        tile_j0 = LCS_THREADS * (np.arange(n_tiles, dtype=np.int64) - first)
        tile_order = np.argsort(row_class[tile_row], kind="stable")
        tile_row, tile_j0 = tile_row[tile_order], tile_j0[tile_order]
        class_off = np.zeros(len(LCS_WORDS) + 2, dtype=np.int64)
        np.cumsum(np.bincount(row_class[tile_row], minlength=len(LCS_WORDS) + 1), out=class_off[1:])
        long_rows = row_class == len(LCS_WORDS)
        long_words = int(words[long_rows].max()) if long_rows.any() else 0
        d_node = [cp.asarray(a) for a in (node_mem, node_nmem, m + ref_first, node_dist)]
        d_tile = [cp.asarray(a) for a in (row_node[tile_row], row_r[tile_row], tile_j0)]
        dist = cp.empty(max(int(sizes.sum()), 1), dtype=cp.float64)
        args = (d_codes, d_seq_off, *d_node)
        for k in range(len(LCS_WORDS) + 1):
            lo, hi = int(class_off[k]), int(class_off[k + 1])
            if lo < hi:
                tiles = (*(a[lo:hi] for a in d_tile), np.int64(hi - lo), d_pow, dist)
                self._lcs_launch(module, "lcs_sample", k, (*args, *tiles), hi - lo, long_words)
        best = cp.empty(m, dtype=cp.int32)
        best_d = cp.empty(m, dtype=cp.float64)
        mem_node = cp.asarray(np.repeat(np.arange(len(nodes), dtype=np.int64), node_nmem))
        module.get_function("lcs_sample_argmin")(
            (min(-(-m // 256), 8 * self.n_sm),), (256,),
            (mem_node, np.int64(m), d_node[0], d_node[1], cp.asarray(node_nref), d_node[3], dist, best, best_d),
        )
        out, out_d = np.empty(m, dtype=np.int32), np.empty(m, dtype=np.float64)
        out[order], out_d[order] = best.get(), best_d.get()
        return out, out_d

    def _lcs_launch(
        self, module, prefix: str, k: int, args: tuple, n_tiles: int, long_words: int, packed: tuple = ()
    ) -> None:
        """Launch ``prefix``'s kernel of word class ``k`` over ``n_tiles`` tiles (the last class: ``prefix_long``,
        masks in shared or global memory, V in a global scratch of at most LCS_LONG_SCRATCH bytes).
        ``packed``: the packed-layout arguments of lcs_tiles_<W> (its rows of at most
        PRIM_REGISTER_WORDS words read them, with mask planes of LCS_ROWS codes)."""
        blocks = min(n_tiles, LCS_BLOCKS_PER_SM * self.n_sm)
        if k < len(LCS_WORDS):
            w = int(LCS_WORDS[k])
            rows = LCS_ROWS if packed and w <= PRIM_REGISTER_WORDS else 20
            module.get_function(f"{prefix}_{w}")((blocks,), (LCS_THREADS,), (*args, *packed), shared_mem=rows * w * 8)
            return
        blocks = max(1, min(blocks, LCS_LONG_SCRATCH // (8 * long_words * LCS_THREADS)))
        scratch = cp.empty(long_words * blocks * LCS_THREADS, dtype=cp.uint64)
        mask_bytes = 20 * long_words * 8
        in_global = mask_bytes > LCS_LONG_SHARED
        masks = cp.empty(blocks * 20 * long_words if in_global else 1, dtype=cp.uint64)
        kernel = module.get_function(f"{prefix}_long")
        shared = 0 if in_global else mask_bytes
        kernel.max_dynamic_shared_size_bytes = max(shared, 1)
        kernel(
            (blocks,), (LCS_THREADS,),
            (*args, np.int64(long_words), np.int32(in_global), masks, scratch), shared_mem=shared,
        )



def _lcs_tiles(group_off: np.ndarray, lens: np.ndarray) -> dict[str, np.ndarray]:
    """Tiles of the condensed LCS matrices, ordered by the word class of their row sequence.

    Row ``r`` (member ``row_index`` of group ``row_group``) against later
    members ``tile_j0 .. tile_j0 + LCS_THREADS``; the tiles of class ``k``
    (``LCS_WORDS[k]`` words, the last class: longer rows, of at most
    ``long_words`` words) are ``class_off[k] .. class_off[k + 1]``.
    """
    from msa.distances.condensed import condensed_rows  # local: (b) Numba: the GPU path imports it only here (docs/start-up.md, step 8)

    sizes = np.diff(group_off)
    row_group, row_index, out_off = condensed_rows(group_off)
    n_rows = len(row_group)
    first_j = (row_index + 1) // 32 * 32  # tiles start on a packed section
    row_tiles = -(-(sizes[row_group] - first_j) // LCS_THREADS)
    words = np.maximum(-(-lens[group_off[row_group] + row_index] // 64), 1)
    row_class = np.searchsorted(LCS_WORDS, words)
    n_tiles = int(row_tiles.sum())
    tile_row = np.repeat(np.arange(n_rows, dtype=np.int64), row_tiles)
    first = np.repeat(np.cumsum(row_tiles) - row_tiles, row_tiles)
    tile_j0 = first_j[tile_row] + LCS_THREADS * (np.arange(n_tiles, dtype=np.int64) - first)
    order = np.argsort(row_class[tile_row], kind="stable")
    class_off = np.zeros(len(LCS_WORDS) + 2, dtype=np.int64)
    np.cumsum(np.bincount(row_class[tile_row], minlength=len(LCS_WORDS) + 1), out=class_off[1:])
    long_rows = row_class == len(LCS_WORDS)
    return {
        "group_off": group_off, "out_off": out_off, "row_group": row_group, "row_index": row_index,
        "tile_row": tile_row[order], "tile_j0": tile_j0[order], "class_off": class_off,
        "long_words": np.int64(words[long_rows].max() if long_rows.any() else 0),
    }

# ---- Prim's single-linkage MSTs (kernels/lcs_prim.cu), the twin of msa.backends.cpu.lcs.lcs_prim_mst:
# the same edges in the same order, bit for bit, in O(n) device memory. Each distance row is
# computed once, when its vertex joins the tree, so an n-sequence group costs n^2/2 LCS pairs and
# n - 1 grid-wide steps. One persistent launch runs a phase of many groups at once, each on its
# own blocks with its own barrier; a group's phase ends when 1 / PRIM_PHASE_DIV of its vertices
# have joined, and the survivors are then compacted and repacked, so that warps do not run on
# with lanes whose vertices have joined (a lane's work is done whether its vertex is live or not).

#: Threads per block of prim_steps (passed to its __launch_bounds__ with -D).
PRIM_THREADS = 256
#: Codes of a mask plane of the packed kernels (kernels/lcs_core.cuh): every value of code & 31.
LCS_ROWS = 32
#: Largest mask table (LCS_ROWS x words x 8 bytes) kept in shared memory; longer
#: sequences (~50k residues) leave the group to the CPU.
PRIM_SHARED_MAX = 200 * 1024
#: Groups of at most this many remaining vertices run to the end without compaction: a step
#: over up to ~4 warps a SM is one pair's chain long whether or not its lanes have joined.
PRIM_COMPACT_MIN = 16384
#: A phase of a larger group ends when 1 / PRIM_PHASE_DIV of its remaining vertices have joined:
#: a phase of n runs n / PRIM_PHASE_DIV steps over all n lanes, n^2 / (2 - 1 / PRIM_PHASE_DIV)
#: lane-pairs in all against the n^2 / 2 pairs (4 / 3 of them at 2, 16 / 15 at 8).
PRIM_PHASE_DIV = 8
#: 8-byte words of a block's minimum (kernels/lcs_prim.cu Key: distance bits, first code, local,
#: pos, via, length).
PRIM_KEY_WORDS = 4
#: Words of V held in registers (kernels/lcs_core.cuh LCS_CHAIN_MAX); longer need a scratch.
PRIM_REGISTER_WORDS = 8


def _pow075(n: int) -> cp.ndarray:
    """The CPU's table of ``k ** 0.75`` (msa.backends.cpu.lcs.pow075_table), on the device."""
    from msa.backends.cpu.lcs import pow075_table  # local: (b) Numba: the GPU path imports it only here (docs/start-up.md, step 8)

    return cp.asarray(pow075_table(n))


def prim_fits(offsets: np.ndarray, ids: np.ndarray) -> bool:
    """Whether the longest sequence's masks fit in shared memory."""
    lens = offsets[ids + 1] - offsets[ids]
    return _shared_bytes(int(lens.max(initial=1))) <= PRIM_SHARED_MAX


def prim_msts(
    codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray, device: int, n_sm: int,
    compact_min: int = PRIM_COMPACT_MIN,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prim's MST edges (a, b, weight; local indices, Prim order) of every group, as the CPU's.

    Group g (``ids[group_off[g]:group_off[g+1]]``, at least one member) has its s - 1
    edges at rows ``group_off[g] - g``.
    """
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    group_off = np.ascontiguousarray(group_off, dtype=np.int64)
    sizes = np.diff(group_off)
    n_groups = len(sizes)
    n_edges = int(group_off[-1]) - n_groups
    if n_edges <= 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0)
    lens = offsets[ids + 1] - offsets[ids]
    max_len = max(int(lens.max()), 1)
    words_max = -(-max_len // 64)
    shared = _shared_bytes(max_len)
    group = np.repeat(np.arange(n_groups), sizes)
    local = np.arange(len(ids), dtype=np.int64) - group_off[group]
    order = np.lexsort((lens, group))  # by group, then length; ties by index
    order = order[local[order] != 0]  # each group's vertex 0 starts its tree
    remaining = sizes - 1
    done = np.zeros(n_groups, dtype=np.int64)
    with cp.cuda.Device(device):
        module = kernels.load("lcs_prim", (("PRIM_THREADS", PRIM_THREADS),), device)
        steps, pack = module.get_function("prim_steps"), module.get_function("lcs_pack")
        steps.max_dynamic_shared_size_bytes = shared
        resident = _resident_blocks(steps, shared) * n_sm
        _, d_codes, d_seq_off = sequences_on_device(codes, offsets, ids)
        seq_start = np.concatenate(([0], np.cumsum(lens)))  # d_seq_off on the host
        d_pow = _pow075(2 * max_len + 1)
        # the remaining vertices, each group's run contiguous and in length order (on the host:
        # a launch's gathers and the compaction after it are NumPy, and the device sees uploads)
        pos = {
            "seq": order, "local": local[order].astype(np.int32), "len": lens[order].astype(np.int32),
            "best": np.full(len(order), np.inf), "via": np.zeros(len(order), dtype=np.int32),
        }
        state = np.zeros(n_groups, dtype=np.int32)
        edge_a = cp.empty(n_edges, dtype=cp.int32)
        edge_b = cp.empty(n_edges, dtype=cp.int32)
        edge_w = cp.empty(n_edges, dtype=cp.float64)
        scratch = cp.empty(words_max * resident * PRIM_THREADS if words_max > PRIM_REGISTER_WORDS else 1, cp.uint64)
        while remaining.any():
            chunk = np.flatnonzero(remaining)[:resident]  # at least one block each
            n_pos = remaining[chunk]
            end = done[chunk] + np.where(n_pos <= compact_min, n_pos, n_pos // PRIM_PHASE_DIV)
            run0 = np.cumsum(remaining) - remaining
            src, pos0 = _padded_runs(run0[chunk], n_pos)
            valid = src >= 0
            at = np.maximum(src, 0)
            l_len = np.where(valid, pos["len"][at], 0).astype(np.int32)
            d_best, d_via = cp.asarray(pos["best"][at]), cp.asarray(pos["via"][at])
            d_in_tree = cp.asarray((~valid).view(np.uint8))  # padding never joins
            pk, sec_off = _packed(pack, d_codes, d_seq_off, np.where(valid, pos["seq"][at], -1), l_len, n_sm)
            alloc = np.minimum(1 + (resident - len(chunk)) * n_pos // n_pos.sum(), -(-n_pos // PRIM_THREADS))
            if len(chunk) == 1:  # whole SMs, which the snake gives equal work, finish a step together
                alloc = np.minimum(-(-alloc // n_sm) * n_sm, resident)
            blk0 = np.concatenate(([0], np.cumsum(alloc))).astype(np.int32)
            blocks = int(blk0[-1])
            d_state = cp.asarray(state[chunk])
            steps(
                (blocks,), (PRIM_THREADS,),
                (pk, sec_off, cp.asarray(pos["local"][at]), cp.asarray(l_len),
                 cp.asarray(np.where(valid, seq_start[pos["seq"][at]], 0)), d_codes, d_seq_off, d_pow,
                 d_best, d_via, d_in_tree,
                 cp.asarray(np.repeat(np.arange(len(chunk), dtype=np.int32), alloc)), cp.asarray(blk0),
                 cp.asarray(pos0), cp.asarray(n_pos.astype(np.int32)), cp.asarray(group_off[chunk]),
                 cp.asarray(done[chunk].astype(np.int32)), cp.asarray(end.astype(np.int32)),
                 cp.asarray(group_off[chunk] - chunk), d_state, edge_a, edge_b, edge_w,
                 cp.empty(PRIM_KEY_WORDS * (blocks + len(chunk)), dtype=cp.int64),
                 cp.zeros(2 * len(chunk), dtype=cp.uint32), scratch),
                shared_mem=shared,
            )
            state[chunk] = d_state.get()
            # back into the runs, then drop the vertices that joined
            back = src[valid]
            pos["best"][back], pos["via"][back] = d_best.get()[valid], d_via.get()[valid]
            keep = np.ones(len(pos["seq"]), dtype=bool)
            keep[back] = d_in_tree.get()[valid] == 0
            pos = {k: v[keep] for k, v in pos.items()}
            remaining[chunk] -= end - done[chunk]
            done[chunk] = end
        return edge_a.get().astype(np.int64), edge_b.get().astype(np.int64), edge_w.get()


def _padded_runs(run0: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of each launch position in the runs (-1: padding) with every run padded to a
    multiple of 32, and each run's first launch position."""
    padded = -(-n // 32) * 32
    pos0 = np.concatenate(([0], np.cumsum(padded)))
    r = np.arange(int(pos0[-1]), dtype=np.int64) - np.repeat(pos0[:-1], padded)
    src = np.repeat(run0, padded) + r
    return np.where(r < np.repeat(n, padded), src, -1), pos0[:-1].astype(np.int64)


def _shared_bytes(max_len: int) -> int:
    return LCS_ROWS * max(-(-max_len // 64), 1) * 8


def _resident_blocks(kernel, shared: int) -> int:
    """Blocks of ``kernel`` one SM holds at once: the persistent launch's barrier needs all resident."""
    func = getattr(kernel, "kernel", kernel)
    n = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(func.ptr, PRIM_THREADS, shared)
    if n < 1:
        raise RuntimeError("prim_steps cannot run a block on this GPU")
    return int(n)


def _packed(pack, d_codes, d_seq_off, pos_seq: np.ndarray, pos_len: np.ndarray, n_sm: int):
    """Residues of the positions (sequence -1: padding; a multiple of 32 of them), 16 a uint4, in
    warp-interleaved sections (see kernels/lcs_prim.cu); the layout is worked out on the host."""
    n_pos = len(pos_seq)
    sec_words = 128 * ((pos_len.reshape(-1, 32).max(axis=1).astype(np.int64) + 15) // 16)
    sec_off = np.zeros(len(sec_words) + 1, dtype=np.int64)
    np.cumsum(sec_words, out=sec_off[1:])
    n_words = int(sec_off[-1])
    pk = cp.empty(max(n_words, 1), dtype=cp.uint32)
    d_sec_off = cp.asarray(sec_off)
    blocks = max(1, min(-(-n_words // 256), 32 * n_sm))
    pack((blocks,), (256,), (d_codes, d_seq_off, cp.asarray(pos_seq), np.int64(n_pos), d_sec_off, np.int64(n_words), pk))
    return pk, d_sec_off
