"""CUDA backend: CuPy array plumbing around the kernels of ``kernels/*.cu``.

Besides :mod:`msa.kernels`, the only module that imports CuPy. Every operation
returns exactly what :class:`~msa.backends.cpu.CpuBackend` returns (the CPU is
the oracle, tests/gpu checks it). The 6-mer struct arrays are built and kept on
the device; only per-sequence arrays (O(n)) and each call's small results
(assignments, reference x reference distances) come back to the host.
Work that may not fit is cut into pieces sized from the free device memory,
and a piece that still runs out of memory is halved.
"""
from __future__ import annotations

from collections.abc import Callable

import cupy as cp
import numpy as np

from msa import kernels
from msa.alphabet import GROUP6, N_CODES
from msa.backends.cpu import CpuBackend
from msa.kmers import MAX_KMER_DIST, N_KMERS, PAD_CODE, SECTION, KmerTables, build_kmer_tables
from msa.profile import N_COUNTS, AlignBatch, AlignResult

#: Members (threads) per nearest_reference block; one block fills an SM's shared memory.
NEAREST_THREADS = 1024
#: Shared memory of nearest_reference: one 32-bit word (4 references x 8 bits) per 6-mer.
NEAREST_SHARED = 4 * N_KMERS
MATRIX_THREADS = 256
#: Shared memory of kmer_distance_matrix: one exact 16-bit count per 6-mer.
MATRIX_SHARED = 2 * N_KMERS
#: Share of the free device memory one piece of work may plan to use.
MEMORY_FRACTION = 0.5
#: Device bytes per residue while building struct arrays (codes, groups, keys, sort scratch).
BUILD_BYTES_PER_RESIDUE = 48
MAX_COUNT = 0xFFFF
#: Most threads (columns of P2) per dp_fill block; shared memory is DP_SHARED_PER_THREAD bytes a thread.
#: Wide blocks only for batches with fewer merges than SMs (the long merges near the root).
DP_THREADS = 256
DP_MAX_THREADS = 512
DP_SHARED_PER_THREAD = 8 * (24 + 6)
#: int64 fields of a merge record (kernels/profile_align.cu, I_*).
N_INFO = 11
#: Device bytes per input column of a piece (counts, column terms, map).
ALIGN_BYTES_PER_COLUMN = 112 + 5 * 8 + 24 * 8 + 4 + 24 + 24 * 4 + 8


class DeviceKmerTables(KmerTables):
    """:class:`KmerTables` whose struct arrays stay on the GPU.

    Per-sequence arrays are on both sides; ``kcodes``/``kcounts`` are copied to
    the host only when something reads them there (the CPU backend, tests).
    """

    def __init__(self, lengths, self_scores, n_distinct, slot, start, section_off, d_kcodes, d_kcounts) -> None:
        self.lengths, self.self_scores, self.n_distinct = lengths, self_scores, n_distinct
        self.slot, self.start, self.section_off = slot, start, section_off
        self.d_kcodes, self.d_kcounts = d_kcodes, d_kcounts
        self.d_start = cp.asarray(start)
        self.d_n_distinct = cp.asarray(n_distinct)
        self.d_self_scores = cp.asarray(self_scores)
        self.d_lengths = cp.asarray(lengths)
        self._host: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def upload(cls, t: KmerTables) -> DeviceKmerTables:
        """Device copy of host-built tables (the CPU's, in tests)."""
        out = cls(t.lengths, t.self_scores, t.n_distinct, t.slot, t.start, t.section_off,
                  cp.asarray(t.kcodes), cp.asarray(t.kcounts))
        out._host = (t.kcodes, t.kcounts)
        return out

    def _runs_on_host(self) -> tuple[np.ndarray, np.ndarray]:
        if self._host is None:
            self._host = (self.d_kcodes.get(), self.d_kcounts.get())
        return self._host

    @property
    def kcodes(self) -> np.ndarray:  # type: ignore[override]
        return self._runs_on_host()[0]

    @property
    def kcounts(self) -> np.ndarray:  # type: ignore[override]
        return self._runs_on_host()[1]


class CudaBackend:
    """Runs the guide-tree stage and the progressive merges on one GPU; the LCS matrices stay on the CPU."""

    name = "cuda"

    def __init__(self, device: int = 0, memory_limit: int | None = None) -> None:
        """``memory_limit``: most device bytes one piece of guide-tree work may plan to use
        (default: MEMORY_FRACTION of the free memory); tests lower it to force the splitting."""
        self.device = device
        self.memory_limit = memory_limit
        self._cpu = CpuBackend()
        with cp.cuda.Device(device) as dev:
            self.n_sm = int(dev.attributes["MultiProcessorCount"])
        module = kernels.load("kmer_counts", (("NR_THREADS", NEAREST_THREADS),), device)
        self._repack = module.get_function("repack")
        self._nearest = module.get_function("nearest_reference")
        self._nearest.max_dynamic_shared_size_bytes = NEAREST_SHARED
        self._matrix = module.get_function("kmer_distance_matrix")
        self._matrix.max_dynamic_shared_size_bytes = MATRIX_SHARED
        align = kernels.load("profile_align", (), device)
        self._column_setup = align.get_function("column_setup")
        self._dp_fill = align.get_function("dp_fill")
        self._dp_fill.max_dynamic_shared_size_bytes = DP_MAX_THREADS * DP_SHARED_PER_THREAD
        self._traceback = align.get_function("traceback")
        self._build_parent = align.get_function("build_parent")

    # ---- progressive stage
    def profile_align(self, batch: AlignBatch) -> AlignResult:
        """Align every merge of a level batch on the GPU (kernels/profile_align.cu; equal to the CPU's).

        Merges are cut into pieces that fit the free device memory; each piece
        uploads its profiles once and brings back only maps and parent counts.
        """
        off = np.ascontiguousarray(batch.col_offsets, dtype=np.int64)
        n_merges = batch.n_merges
        maps = np.empty(off[-1], dtype=np.int64)
        parents: list[np.ndarray] = []
        lengths: list[np.ndarray] = []
        w = np.diff(off)
        wa, wb = w[0::2], w[1::2]
        cost = (wa + wb) * (ALIGN_BYTES_PER_COLUMN + 1 + 112 + 32) + (wa + 8) * (wb + 8) + 64
        with cp.cuda.Device(self.device):
            d_m = cp.asarray(batch.matrix, dtype=cp.int64)
            d_g = cp.asarray(batch.gaps, dtype=cp.int64)

            def piece(lo: int, hi: int) -> None:
                a, b = off[2 * lo], off[2 * hi]
                piece_maps, piece_parents, piece_lengths = self._align_piece(batch, lo, hi, d_m, d_g)
                maps[a:b] = piece_maps
                parents.append(piece_parents)
                lengths.append(piece_lengths)

            if n_merges:
                _run_in_pieces(cost, piece)
        counts = np.concatenate(parents) if parents else np.zeros((0, N_COUNTS), dtype=np.int32)
        parent_off = np.zeros(n_merges + 1, dtype=np.int64)
        if lengths:
            np.cumsum(np.concatenate(lengths), out=parent_off[1:])
        return AlignResult(maps, counts, parent_off)

    def _align_piece(
        self, batch: AlignBatch, lo: int, hi: int, d_m: cp.ndarray, d_g: cp.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Merges ``lo..hi`` of a batch: (maps of their input columns, parent counts, parent widths)."""
        off = batch.col_offsets
        a, b = int(off[2 * lo]), int(off[2 * hi])
        n, n_cols = hi - lo, b - a
        col_off = np.ascontiguousarray(off[2 * lo : 2 * hi + 1] - a, dtype=np.int64)
        n_seqs = np.ascontiguousarray(batch.n_seqs[2 * lo : 2 * hi], dtype=np.int64)
        counts = cp.asarray(np.ascontiguousarray(batch.counts[a:b], dtype=np.int32))
        d_col_off = cp.asarray(col_off)
        terms = [cp.empty(n_cols, dtype=cp.int64) for _ in range(5)]  # gapc, res, start, cont, retype
        s2 = cp.empty((n_cols, N_CODES), dtype=cp.int64)
        nnz = cp.empty(n_cols, dtype=cp.int32)
        codes = cp.empty((n_cols, N_CODES), dtype=cp.uint8)
        mult = cp.empty((n_cols, N_CODES), dtype=cp.int32)
        self._column_setup(
            ((n_cols + 127) // 128,), (128,),
            (counts, np.int64(n_cols), d_col_off, np.int64(2 * n), cp.asarray(n_seqs), d_m, d_g,
             *terms, s2, nnz, codes, mult),
        )
        widest = DP_THREADS if n >= self.n_sm else DP_MAX_THREADS
        info, t, sizes = _merge_records(counts, d_col_off, col_off, n_seqs, widest)
        d_info = cp.asarray(info)
        rows = [cp.empty(max(sizes["rows"], 1), dtype=cp.int64) for _ in range(3)]
        h0 = cp.empty(max(sizes["cols"], 1), dtype=cp.int64)
        dirs = cp.empty(max(sizes["dirs"] // 8, 1), dtype=cp.uint64)
        final3 = cp.empty(3 * n, dtype=cp.int64)
        self._dp_fill(
            (n,), (t,),
            (d_info, d_g, *terms, s2, nnz, codes, mult, *rows, h0, dirs, final3),
            shared_mem=t * DP_SHARED_PER_THREAD,
        )
        del s2, codes, mult, rows, h0, terms
        paths = cp.empty(max(n_cols, 1), dtype=cp.uint8)
        lengths = cp.empty(n, dtype=cp.int64)
        grid = ((n + 127) // 128,)
        self._traceback(grid, (128,), (d_info, np.int64(n), dirs, final3, paths, lengths))
        del dirs
        parent_off = cp.zeros(n + 1, dtype=cp.int64)
        cp.cumsum(lengths, out=parent_off[1:])
        parents = cp.empty((int(parent_off[-1]), N_COUNTS), dtype=cp.int32)
        maps = cp.empty(n_cols, dtype=cp.int64)
        self._build_parent(
            ((n + 3) // 4,), (128,), (d_info, np.int64(n), counts, paths, lengths, parent_off, maps, parents)
        )
        return maps.get(), parents.get(), lengths.get()

    # ---- guide-tree stage
    def kmer_tables(self, codes: np.ndarray, offsets: np.ndarray) -> DeviceKmerTables:
        """6-mer struct arrays built on the device (layout in msa.kmers; equal to the CPU's)."""
        codes = np.ascontiguousarray(codes, dtype=np.uint8)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        n = len(offsets) - 1
        if n == 0:
            return DeviceKmerTables.upload(build_kmer_tables(codes, offsets))
        parts: list[tuple[cp.ndarray, ...]] = []

        def build(lo: int, hi: int) -> None:
            a, b = offsets[lo], offsets[hi]
            parts.append(_sorted_runs(codes[a:b], offsets[lo : hi + 1] - a, lo))

        with cp.cuda.Device(self.device):
            _run_in_pieces(np.diff(offsets) * BUILD_BYTES_PER_RESIDUE + 64, build, self.memory_limit)
            run_seq, run_code, run_count, windows = (cp.concatenate(p) for p in zip(*parts))
            return _interleave(n, run_seq, run_code, run_count, windows, np.diff(offsets))

    def nearest_reference(
        self,
        tables: KmerTables,
        ref_ids: np.ndarray,
        ref_off: np.ndarray,
        member_ids: np.ndarray,
        member_node: np.ndarray,
        cap: float = MAX_KMER_DIST,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Index (within its node's references) of each member's nearest reference, and the distance."""
        member_ids = np.ascontiguousarray(member_ids, dtype=np.int64)
        member_node = np.ascontiguousarray(member_node, dtype=np.int64)
        m = len(member_ids)
        best = np.zeros(m, dtype=np.int32)
        best_d = np.zeros(m, dtype=np.float64)
        if m == 0:
            return best, best_d
        with cp.cuda.Device(self.device):
            t = self._on_device(tables)
            d_refs = cp.asarray(ref_ids, dtype=cp.int64)
            d_ref_off = cp.asarray(ref_off, dtype=cp.int64)

            def piece(lo: int, hi: int) -> None:
                best[lo:hi], best_d[lo:hi] = self._nearest_piece(
                    t, d_refs, d_ref_off, member_ids[lo:hi], member_node[lo:hi], cap
                )

            _run_in_pieces(4.5 * tables.n_distinct[member_ids] + 160, piece, self.memory_limit)
        return best, best_d

    def kmer_distance_matrix(
        self, tables: KmerTables, ids: np.ndarray, group_off: np.ndarray, cap: float = MAX_KMER_DIST
    ) -> tuple[np.ndarray, np.ndarray]:
        """Condensed 6-mer distance matrices of many groups, and each group's offset in them."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        group_off = np.ascontiguousarray(group_off, dtype=np.int64)
        sizes = np.diff(group_off)
        pairs = sizes * (sizes - 1) // 2
        out_off = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(pairs, out=out_off[1:])
        out = np.empty(out_off[-1], dtype=np.float64)
        if out_off[-1] == 0:
            return out, out_off
        nd_cum = np.concatenate(([0], np.cumsum(tables.n_distinct[ids], dtype=np.int64)))
        with cp.cuda.Device(self.device):
            t = self._on_device(tables)

            def piece(lo: int, hi: int) -> None:
                a, b = group_off[lo], group_off[hi]
                out[out_off[lo] : out_off[hi]] = self._matrix_piece(
                    t, ids[a:b], group_off[lo : hi + 1] - a, cap
                )

            cost = 8 * pairs + 4.5 * (nd_cum[group_off[1:]] - nd_cum[group_off[:-1]]) + 40 * sizes
            _run_in_pieces(cost, piece, self.memory_limit)
        return out, out_off

    def lcs_distance_matrix(
        self, codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Condensed FAMSA indel075_div_lcs matrices (on the CPU until an LCS kernel exists)."""
        return self._cpu.lcs_distance_matrix(codes, offsets, ids, group_off)

    # ---- helpers
    @staticmethod
    def _on_device(tables: KmerTables) -> DeviceKmerTables:
        return tables if isinstance(tables, DeviceKmerTables) else DeviceKmerTables.upload(tables)

    def _packed(self, t: DeviceKmerTables, pos_seq: cp.ndarray) -> tuple[cp.ndarray, cp.ndarray]:
        """Runs of ``pos_seq`` (length a multiple of 32; -1 = empty) in warp sections (see the kernel)."""
        nd = cp.where(pos_seq >= 0, t.d_n_distinct[cp.maximum(pos_seq, 0)], 0)
        width = nd.reshape(-1, SECTION).max(axis=1).astype(cp.int64)
        sec_off = cp.zeros(len(width) + 1, dtype=cp.int64)
        cp.cumsum(SECTION * width, out=sec_off[1:])
        packed = cp.empty(max(int(sec_off[-1]), 1), dtype=cp.uint32)
        n_pos = len(pos_seq)
        self._repack(
            ((n_pos + 255) // 256,), (256,),
            (pos_seq, np.int64(n_pos), sec_off, t.d_start, t.d_n_distinct, t.d_kcodes, t.d_kcounts, packed),
        )
        return packed, sec_off

    def _nearest_piece(self, t, d_refs, d_ref_off, member_ids, member_node, cap):
        """One launch: members sorted by (node, run count), cut into per-node chunks of a block."""
        m = len(member_ids)
        mem = cp.asarray(member_ids)
        node = cp.asarray(member_node)
        order = cp.argsort(node * 65536 + t.d_n_distinct[mem])
        seq_s, node_s = mem[order], node[order]
        node_first = cp.concatenate((cp.zeros(1, cp.int64), cp.flatnonzero(node_s[1:] != node_s[:-1]) + 1))
        node_size = cp.diff(cp.concatenate((node_first, cp.full(1, m, cp.int64))))
        n_chunks = (node_size + NEAREST_THREADS - 1) // NEAREST_THREADS
        chunk_first = cp.cumsum(n_chunks) - n_chunks
        c = int(n_chunks.sum())
        chunk = cp.arange(c, dtype=cp.int64)
        owner = cp.searchsorted(chunk_first, chunk, side="right") - 1
        chunk_lo = node_first[owner] + (chunk - chunk_first[owner]) * NEAREST_THREADS
        chunk_n = cp.minimum(NEAREST_THREADS, node_first[owner] + node_size[owner] - chunk_lo)
        padded = (chunk_n + SECTION - 1) // SECTION * SECTION  # each chunk starts a section
        chunk_pos = cp.cumsum(padded) - padded
        n_pos = int(chunk_pos[-1] + padded[-1])
        rank = cp.arange(m, dtype=cp.int64)
        of = cp.searchsorted(chunk_lo, rank, side="right") - 1
        pos = chunk_pos[of] + rank - chunk_lo[of]
        pos_seq = cp.full(n_pos, -1, dtype=cp.int64)
        pos_seq[pos] = seq_s
        pos_out = cp.full(n_pos, -1, dtype=cp.int64)
        pos_out[pos] = order
        packed, sec_off = self._packed(t, pos_seq)
        best = cp.empty(m, dtype=cp.int32)
        best_d = cp.empty(m, dtype=cp.float64)
        self._nearest(
            (c,), (NEAREST_THREADS,),
            (packed, sec_off, chunk_pos, chunk_n.astype(cp.int32), node_s[chunk_lo], pos_seq, pos_out,
             t.d_kcodes, t.d_kcounts, t.d_start, t.d_n_distinct, t.d_self_scores, t.d_lengths,
             d_refs, d_ref_off, np.float64(cap), best, best_d),
            shared_mem=NEAREST_SHARED,
        )
        return best.get(), best_d.get()

    def _matrix_piece(self, t, ids: np.ndarray, group_off: np.ndarray, cap: float) -> np.ndarray:
        """One launch for the condensed matrices of these groups (host result)."""
        sizes = np.diff(group_off)
        rows = np.maximum(sizes - 1, 0)
        n_rows = int(rows.sum())
        row_group = np.repeat(np.arange(len(sizes), dtype=np.int64), rows)
        row_index = np.arange(n_rows, dtype=np.int64) - np.repeat(np.cumsum(rows) - rows, rows)
        out_off = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes * (sizes - 1) // 2, out=out_off[1:])
        n_pos = -(-len(ids) // SECTION) * SECTION
        pos_seq = cp.full(n_pos, -1, dtype=cp.int64)
        pos_seq[: len(ids)] = cp.asarray(ids)
        packed, sec_off = self._packed(t, pos_seq)
        out = cp.empty(int(out_off[-1]), dtype=cp.float64)
        self._matrix(
            (min(n_rows, 8 * self.n_sm),), (MATRIX_THREADS,),
            (packed, sec_off, pos_seq, cp.asarray(group_off), cp.asarray(row_group), cp.asarray(row_index),
             np.int64(n_rows), cp.asarray(out_off), t.d_kcodes, t.d_kcounts, t.d_start, t.d_n_distinct,
             t.d_self_scores, t.d_lengths, np.float64(cap), out),
            shared_mem=MATRIX_SHARED,
        )
        return out.get()


def _sorted_runs(codes: np.ndarray, offsets: np.ndarray, seq0: int) -> tuple[cp.ndarray, ...]:
    """Sorted 6-mer runs of some sequences: (sequence id, code, count) per run, windows per sequence."""
    n = len(offsets) - 1
    group = cp.asarray(GROUP6)[cp.asarray(codes)]
    kept = cp.flatnonzero(group < 6)
    g = group[kept].astype(cp.int64)
    seq = cp.searchsorted(cp.asarray(offsets[1:]), kept, side="right")
    k = len(g)
    if k < 6:
        empty = cp.zeros(0, dtype=cp.int64)
        return empty, empty, empty, cp.zeros(n, dtype=cp.int64)
    code = g[: k - 5] * 7776 + g[1 : k - 4] * 1296 + g[2 : k - 3] * 216 + g[3 : k - 2] * 36 + g[4 : k - 1] * 6 + g[5:]
    valid = seq[: k - 5] == seq[5:]
    wseq = seq[: k - 5][valid]
    if len(wseq) == 0:
        empty = cp.zeros(0, dtype=cp.int64)
        return empty, empty, empty, cp.zeros(n, dtype=cp.int64)
    key = cp.sort(wseq * 65536 + code[valid])
    head = cp.ones(len(key), dtype=cp.bool_)
    head[1:] = key[1:] != key[:-1]
    first = cp.flatnonzero(head)
    run = cp.diff(cp.concatenate((first, cp.full(1, len(key), cp.int64))))
    run_key = key[first]
    windows = cp.bincount(wseq, minlength=n).astype(cp.int64)
    return (run_key >> 16) + seq0, run_key & 0xFFFF, cp.minimum(run, MAX_COUNT), windows


def _interleave(n, run_seq, run_code, run_count, windows, lengths: np.ndarray) -> DeviceKmerTables:
    """Rank sequences by run count, pad sections and scatter the runs (msa.kmers layout)."""
    if len(run_seq):
        n_distinct = cp.bincount(run_seq, minlength=n).astype(cp.int32)
    else:
        n_distinct = cp.zeros(n, dtype=cp.int32)
    idx = cp.arange(n, dtype=cp.int64)
    order = cp.argsort(n_distinct.astype(cp.int64) * n + idx)  # stable: ties by index
    slot = cp.empty(n, dtype=cp.int64)
    slot[order] = idx
    n_sections = -(-n // SECTION)
    last = cp.minimum(cp.arange(n_sections, dtype=cp.int64) * SECTION + SECTION - 1, n - 1)
    width = n_distinct[order[last]].astype(cp.int64)
    section_off = cp.zeros(n_sections + 1, dtype=cp.int64)
    cp.cumsum(SECTION * width, out=section_off[1:])
    start = section_off[slot // SECTION] + slot % SECTION
    run_first = cp.cumsum(n_distinct, dtype=cp.int64) - n_distinct
    rank = cp.arange(len(run_seq), dtype=cp.int64) - run_first[run_seq]
    pos = start[run_seq] + SECTION * rank
    total = int(section_off[-1])
    kcodes = cp.full(total, PAD_CODE, dtype=cp.uint16)
    kcounts = cp.zeros(total, dtype=cp.uint16)
    kcodes[pos] = run_code.astype(cp.uint16)
    kcounts[pos] = run_count.astype(cp.uint16)
    return DeviceKmerTables(
        lengths, windows.get(), n_distinct.get(), slot.get(), start.get(), section_off.get(), kcodes, kcounts
    )


def _merge_records(
    counts: cp.ndarray, d_col_off: cp.ndarray, col_off: np.ndarray, n_seqs: np.ndarray, max_threads: int
) -> tuple[np.ndarray, int, dict[str, int]]:
    """Per-merge records for the DP kernels, the dp_fill block size, and the scratch sizes.

    Which profile plays P1 is FAMSA's rule (``cpu_align._first_is_p1``), from
    the nonzero cells of every profile counted on the device.
    """
    per_col = (counts != 0).sum(axis=1) + (counts[:, N_CODES:].sum(axis=1) != 0)
    cum = cp.zeros(len(per_col) + 1, dtype=cp.int64)
    cp.cumsum(per_col, out=cum[1:])
    nonzero = (cum[d_col_off[1:]] - cum[d_col_off[:-1]]).get()
    w = np.diff(col_off)
    wa, wb, na, nb = w[0::2], w[1::2], n_seqs[0::2], n_seqs[1::2]
    za, zb = nonzero[0::2], nonzero[1::2]
    first = (na == 1) | ((nb != 1) & (za * wb < zb * wa))
    w1, w2 = np.where(first, wa, wb), np.where(first, wb, wa)
    r1 = (w1 + 7) // 8 * 8
    info = np.empty((len(wa), N_INFO), dtype=np.int64)
    info[:, 0] = np.where(first, col_off[0:-1:2], col_off[1::2])
    info[:, 1] = w1
    info[:, 2] = np.where(first, na, nb)
    info[:, 3] = np.where(first, col_off[1::2], col_off[0:-1:2])
    info[:, 4] = w2
    info[:, 5] = np.where(first, nb, na)
    info[:, 6] = (na == 1) & (nb == 1)
    sizes = {}
    for field, name, size in ((7, "dirs", w2 * r1), (8, "rows", w1 + 1), (9, "cols", w2 + 1), (10, "path", w1 + w2)):
        ends = np.cumsum(size)
        info[:, field] = ends - size
        sizes[name] = int(ends[-1])
    threads = int(min(max_threads, max(32, -(-int(w2.max()) // 32) * 32)))
    return info, threads, sizes


def _free_bytes() -> int:
    free, _ = cp.cuda.runtime.memGetInfo()
    return int(free) + int(cp.get_default_memory_pool().free_bytes())


def _run_in_pieces(cost: np.ndarray, run: Callable[[int, int], None], limit: int | None = None) -> None:
    """Call ``run(lo, hi)`` over units ``[0, len(cost))`` in pieces whose cost (bytes) fits the free memory.

    The budget is MEMORY_FRACTION of the free memory, or ``limit`` bytes if
    that is lower. A piece that still runs out of device memory is halved and
    tried again.
    """
    cum = np.concatenate(([0.0], np.cumsum(cost, dtype=np.float64)))
    budget = _free_bytes() * MEMORY_FRACTION
    if limit is not None:
        budget = min(budget, limit)
    lo, n = 0, len(cost)
    while lo < n:
        hi = min(n, max(lo + 1, int(np.searchsorted(cum, cum[lo] + budget, side="right")) - 1))
        try:
            run(lo, hi)
        except cp.cuda.memory.OutOfMemoryError:
            if hi - lo == 1:
                raise
            cp.get_default_memory_pool().free_all_blocks()
            budget = (cum[hi] - cum[lo]) / 2
            continue
        lo = hi
