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
from msa.backends.cpu.lcs import pow075_table
from msa.kmers import MAX_KMER_DIST, N_KMERS, PAD_CODE, SECTION, KmerTables, build_kmer_tables
from msa.params import GapCosts
from msa.profile import N_COUNTS, AlignBatch, AlignResult
from msa.seqdb import _ranges

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
#: dp_fill block shapes, one column of P2 per thread (dp_fill<K> with K = 1; K = 8 measured
#: slower, benchmarks/NOTES.md): at most DP_THREADS threads for batches with at least as many
#: merges as SMs, DP_FEW_THREADS for fewer (the long merges of deep trees and the root).
DP_THREADS = 256
DP_FEW_THREADS = 512
#: Most threads of each dp_fill<K> / dp_pipe<K> instantiation (kernels/profile_align.cu).
DP_ALLOWED_THREADS = {1: 512}
#: Batches with fewer merges than SMs whose P2 spans several chunks run dp_pipe: the chunks of a
#: merge on concurrent blocks, ~W1 + W2 wavefront steps instead of chunks x (W1 + threads).
#: False keeps them on dp_fill (one block per merge; tests compare the two).
DP_PIPELINE = True
#: dp_pipe block size (columns per chunk): fewer threads per block make a wavefront step
#: cheaper, more chunks spread a merge over more SMs (benchmarks/NOTES.md).
DP_PIPE_THREADS = 128
#: Pipelined batches run dp_scan (a chunk takes a row at a time, the horizontal gap state by a
#: block scan: ~min(W1, W2) row steps) rather than dp_pipe (a wavefront, ~W1 + W2 steps);
#: False measures dp_pipe (benchmarks/NOTES.md). Tests run both.
DP_SCAN = True
#: dp_scan's block (SCAN_THREADS) and columns per thread (SCAN_K, 4 only), compiled into the kernel.
SCAN_THREADS = 128
SCAN_K = 4
#: A dp_scan row costs about this many dp_pipe wavefront steps (H200: ~1.8-2.1 us against
#: ~0.7-0.75 us, benchmarks/NOTES.md), so a piece runs dp_scan only where its longest merge
#: takes fewer: min(W1, W2) + PUBLISH_ROWS * chunks rows against W1 + W2 steps.
SCAN_ROW_STEPS = 2.5
#: Rows a pipelined chunk publishes at a time (kernels/profile_align.cu's PUBLISH_ROWS).
PUBLISH_ROWS = 8
#: Block sizes of merge_info, traceback (warps per block) and build_parent (kernels/profile_align.cu).
MI_THREADS = 128
TB_WARPS = 4
BP_THREADS = 256
#: cell_scores tiles (kernels/profile_align.cu, CS_*): columns of P2 (threads) x rows of P1.
CS_THREADS = 128
CS_ROWS = 32
#: cell_scores blocks per SM a launch aims at (each block strides over its merge's tiles).
CS_BLOCKS_PER_SM = 8
#: Device bytes per DP cell of a dp_pipe piece: its int64 substitution score from cell_scores.
SCORE_BYTES = 8
#: kernels/segments.cu: elements a block copies, threads a block (its CHUNK and THREADS).
SEG_CHUNK = 4096
SEG_THREADS = 256
#: The DP fill kernels _merge_records chooses from.
FILLS = ("fill", "pipe", "scan")
#: int64 fields of a merge record (kernels/profile_align.cu, I_*).
N_INFO = 12
#: Device bytes per input column of a piece (counts, column terms, map).
ALIGN_BYTES_PER_COLUMN = 112 + 5 * 8 + 24 * 8 + 4 + 24 + 24 * 4 + 8
#: Device bytes per row of P1 of a chunk-boundary row buffer (D, H, V).
ROW_BYTES = 3 * 8
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
#: Threads of a Smith-Waterman tile (kernels/sw_distance.cu): one row sequence against up to this many later members.
SW_THREADS = 128
#: SW blocks per SM a grid aims at (96 registers per thread with int32 scores: 5 resident blocks).
SW_BLOCKS_PER_SM = 8
#: Most bytes of the SW strip-crossing scratch (H, E per row of b per thread); fewer blocks past it.
SW_SCRATCH = 1 << 30
#: Largest score magnitude the int32 SW kernels take; past it they run on int64.
SW_INT32_MAX = 2**31 - 1
#: Device bytes per pair (output, tiles), per residue (codes) and per sequence (offsets, self score) of an SW piece.
SW_BYTES_PER_PAIR = 8 + 16 / SW_THREADS
SW_BYTES_PER_RESIDUE = 1
SW_BYTES_PER_SEQUENCE = 16


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
    """Runs the guide-tree stage and the progressive merges on one GPU."""

    name = "cuda"

    def __init__(self, device: int = 0, memory_limit: int | None = None) -> None:
        """``memory_limit``: most device bytes one piece of guide-tree work may plan to use
        (default: MEMORY_FRACTION of the free memory); tests lower it to force the splitting."""
        self.device = device
        self.memory_limit = memory_limit
        with cp.cuda.Device(device) as dev:
            self.n_sm = int(dev.attributes["MultiProcessorCount"])
        module = kernels.load("kmer_counts", (("NR_THREADS", NEAREST_THREADS),), device)
        self._repack = module.get_function("repack")
        self._nearest = module.get_function("nearest_reference")
        self._nearest.max_dynamic_shared_size_bytes = NEAREST_SHARED
        self._matrix = module.get_function("kmer_distance_matrix")
        self._matrix.max_dynamic_shared_size_bytes = MATRIX_SHARED
        segments = kernels.load("segments", (), device)
        self._gather_profiles = segments.get_function("gather_profiles")
        self._place_segments = segments.get_function("place_segments")
        align = kernels.load("profile_align", (("SCAN_THREADS", SCAN_THREADS), ("SCAN_K", SCAN_K)), device)
        self._column_setup = align.get_function("column_setup")
        self._merge_info = align.get_function("merge_info")
        # The fills by _merge_records' choice: dp_fill1 (one block per merge), dp_pipe1 and
        # dp_scan (a merge's chunks on concurrent blocks).
        self._fills = {kind: align.get_function(f"dp_{kind}{'' if kind == 'scan' else 1}") for kind in FILLS}
        for kind in ("fill", "pipe"):
            self._fills[kind].max_dynamic_shared_size_bytes = _dp_shared(DP_ALLOWED_THREADS[1], 1, kind == "pipe")
        self._cell_scores = align.get_function("cell_scores")
        self._traceback = align.get_function("traceback")
        self._build_parent = align.get_function("build_parent")

    # ---- progressive stage
    xp = cp  # profile tables and maps stay CuPy arrays between levels

    @staticmethod
    def to_host(a: cp.ndarray) -> np.ndarray:
        """Device array to a NumPy array (one copy)."""
        return cp.asnumpy(a)

    def gather_profiles(
        self, parts: list, part: np.ndarray, start: np.ndarray, widths: np.ndarray, codes: cp.ndarray
    ) -> cp.ndarray:
        """Segments of profile rows (or one-hot leaves) end to end, one launch; see Backend."""
        widths = np.asarray(widths, dtype=np.int64)
        off = np.concatenate(([0], np.cumsum(widths)))
        with cp.cuda.Device(self.device):
            out = cp.empty((int(off[-1]), N_COUNTS), dtype=cp.int32)
            ptrs = np.array([0 if p is None else p.data.ptr for p in parts] + [0], dtype=np.int64)
            rec = np.stack((ptrs[part], start, off[:-1], widths, widths), axis=1)  # part -1: the last, 0
            self._segments(self._gather_profiles, rec, widths * N_COUNTS, (codes, out))
        return out

    def place_segments(
        self, targets: list, target: np.ndarray, start: np.ndarray, values: cp.ndarray, maps: cp.ndarray,
        parent: np.ndarray, widths: np.ndarray,
    ) -> None:
        """Scatter composed columns to their targets, one launch; see Backend."""
        widths = np.asarray(widths, dtype=np.int64)
        off = np.concatenate(([0], np.cumsum(widths)))
        ptrs = np.array([t.data.ptr for t in targets], dtype=np.int64)
        rec = np.stack((ptrs[target], start, off[:-1], parent, widths), axis=1)
        with cp.cuda.Device(self.device):
            self._segments(self._place_segments, rec, widths, (values, cp.ascontiguousarray(maps, dtype=cp.int32)))

    @staticmethod
    def _segments(kernel: cp.RawKernel, rec: np.ndarray, elements: np.ndarray, args: tuple) -> None:
        """Launch a segments.cu kernel: one block per SEG_CHUNK elements of a segment (records rec)."""
        chunk_off = np.concatenate(([0], np.cumsum(-(-elements // SEG_CHUNK))))
        if chunk_off[-1] == 0:
            return
        meta = cp.asarray(np.concatenate((rec.astype(np.int64).ravel(), chunk_off)))
        n = len(rec)
        kernel((int(chunk_off[-1]),), (SEG_THREADS,), (meta, meta[5 * n :], np.int64(n), *args))

    def profile_align(self, batch: AlignBatch) -> AlignResult:
        """Align every merge of a level batch on the GPU (kernels/profile_align.cu; equal to the CPU's).

        ``batch.counts`` may be a host or device array; maps and parent counts stay
        on the device. Merges are cut into pieces that fit the free device memory;
        each piece waits for the device once, to learn its parents' widths. Only a batch
        of fewer merges than SMs may run dp_pipe, so only its cost counts the cell scores.
        """
        off = np.ascontiguousarray(batch.col_offsets, dtype=np.int64)
        n_merges = batch.n_merges
        parents: list[cp.ndarray] = []
        lengths: list[np.ndarray] = []
        w = np.diff(off)
        wa, wb = w[0::2], w[1::2]
        cost = (wa + wb) * (ALIGN_BYTES_PER_COLUMN + 1 + 112) + _boundary_bytes(wa, wb) + (wa + 8) * (wb + 8) + 64
        if n_merges < self.n_sm:
            cost = cost + SCORE_BYTES * wa * wb
        with cp.cuda.Device(self.device):
            maps = cp.empty(int(off[-1]), dtype=cp.int64)
            consts = np.concatenate((np.ravel(batch.matrix), np.ravel(batch.gaps))).astype(np.int64)

            pipeline = n_merges < self.n_sm

            def piece(lo: int, hi: int) -> None:
                a, b = off[2 * lo], off[2 * hi]
                try:
                    piece_maps, piece_parents, piece_lengths = self._align_piece(batch, lo, hi, consts, pipeline)
                except cp.cuda.memory.OutOfMemoryError:
                    if not pipeline or hi - lo > 1:  # several merges: _run_in_pieces halves the piece
                        raise
                    # One merge whose 8-byte cell scores do not fit: dp_fill needs 1 byte a cell.
                    cp.get_default_memory_pool().free_all_blocks()
                    piece_maps, piece_parents, piece_lengths = self._align_piece(batch, lo, hi, consts, False)
                maps[a:b] = piece_maps
                parents.append(piece_parents)
                lengths.append(piece_lengths)

            if n_merges:
                _run_in_pieces(cost, piece)
            if len(parents) == 1:
                counts = parents[0]
            elif parents:
                counts = cp.concatenate(parents)
            else:
                counts = cp.zeros((0, N_COUNTS), dtype=cp.int32)
        parent_off = np.zeros(n_merges + 1, dtype=np.int64)
        if lengths:
            np.cumsum(np.concatenate(lengths), out=parent_off[1:])
        return AlignResult(maps, counts, parent_off)

    def _align_piece(
        self, batch: AlignBatch, lo: int, hi: int, consts: np.ndarray, pipeline: bool
    ) -> tuple[cp.ndarray, cp.ndarray, np.ndarray]:
        """Merges ``lo..hi`` of a batch: (maps of their input columns, parent counts, parent widths).

        One upload (offsets, sizes, scratch offsets, matrix, gaps), six launches (seven with
        dp_pipe), one wait (the parent widths). The fill is dp_pipe when _merge_records says so
        (a piece of a batch of fewer merges than SMs, whose cost counted the cell scores): a
        grid of at most one block per SM drawing (merge, chunk) tickets, after cell_scores has
        written every cell's substitution score (CS_BLOCKS_PER_SM blocks per SM in all).
        ``pipeline``: the batch may run dp_pipe (fewer merges than SMs; its cost counted the scores).
        """
        off = batch.col_offsets
        a, b = int(off[2 * lo]), int(off[2 * hi])
        n, n_cols = hi - lo, b - a
        col_off = np.ascontiguousarray(off[2 * lo : 2 * hi + 1] - a, dtype=np.int64)
        n_seqs = np.ascontiguousarray(batch.n_seqs[2 * lo : 2 * hi], dtype=np.int64)
        counts = cp.ascontiguousarray(cp.asarray(batch.counts[a:b], dtype=cp.int32))
        info, t, k, fill, sizes = _merge_records(col_off, few=n < self.n_sm, pipeline=pipeline)
        meta = cp.asarray(np.concatenate((col_off, n_seqs, consts, info.ravel())))
        d_col_off, d_n_seqs = meta[: 2 * n + 1], meta[2 * n + 1 : 4 * n + 1]
        d_m, d_g = meta[4 * n + 1 : 4 * n + 1 + N_CODES * N_CODES], meta[4 * n + 1 + N_CODES * N_CODES :][:4]
        d_info = meta[len(meta) - n * N_INFO :]
        terms = [cp.empty(n_cols, dtype=cp.int64) for _ in range(5)]  # gapc, res, start, cont, retype
        s2 = cp.empty((n_cols, N_CODES), dtype=cp.int64)
        nnz = cp.empty(n_cols, dtype=cp.int32)
        nzc = cp.empty(n_cols, dtype=cp.int32)
        codes = cp.empty((n_cols, N_CODES), dtype=cp.uint8)
        mult = cp.empty((n_cols, N_CODES), dtype=cp.int32)
        self._column_setup(
            ((n_cols + 127) // 128,), (128,),
            (counts, np.int64(n_cols), d_col_off, np.int64(2 * n), d_n_seqs, d_m, d_g,
             *terms, s2, nnz, codes, mult, nzc),
        )
        self._merge_info((n,), (MI_THREADS,), (d_col_off, d_n_seqs, nzc, d_info))
        rows = [cp.empty(max(sizes["rows"], 1), dtype=cp.int64) for _ in range(3)]
        dirs = cp.empty(max(sizes["dirs"] // 8, 1), dtype=cp.uint64)
        final3 = cp.empty(3 * n, dtype=cp.int64)
        args = (d_info, d_g, *terms, s2, nnz, codes, mult, *rows, dirs, final3)
        if fill == "fill":
            self._fills["fill"]((n,), (t,), args, shared_mem=_dp_shared(t, k, False))
        else:
            scores = cp.empty(max(sizes["scores"], 1), dtype=cp.int64)
            grid = min(sizes["score_tiles"], -(-CS_BLOCKS_PER_SM * self.n_sm // n))
            self._cell_scores(
                (grid, n), (CS_THREADS,),
                (d_info, terms[0], terms[1], s2, nnz, codes, mult, scores, np.int64(fill == "scan")),
            )
            tickets = sizes["tickets"]
            sync = cp.zeros(1 + tickets, dtype=cp.int64)  # ticket counter, then rows done per ticket
            grid, ticket_args = (min(tickets, self.n_sm),), (sync, np.int64(n), np.int64(tickets))
            if fill == "scan":
                self._fills["scan"](grid, (t,), (d_info, d_g, *terms[1:], scores, *rows, dirs, final3, *ticket_args))
            else:
                self._fills["pipe"](grid, (t,), (*args, scores, *ticket_args), shared_mem=_dp_shared(t, k, True))
            del scores
        del s2, codes, mult, rows, terms, nzc
        paths = cp.empty(max(n_cols, 1), dtype=cp.uint8)
        lengths = cp.empty(n, dtype=cp.int64)
        self._traceback(
            ((n + TB_WARPS - 1) // TB_WARPS,), (32 * TB_WARPS,), (d_info, np.int64(n), dirs, final3, paths, lengths)
        )
        del dirs
        parent_off = cp.zeros(n + 1, dtype=cp.int64)
        cp.cumsum(lengths, out=parent_off[1:])
        parents = cp.empty((n_cols, N_COUNTS), dtype=cp.int32)  # a parent is at most as wide as its two children
        maps = cp.empty(n_cols, dtype=cp.int64)
        self._build_parent((n,), (BP_THREADS,), (d_info, counts, paths, lengths, parent_off, maps, parents))
        widths = lengths.get()
        return maps, parents[: int(widths.sum())], widths

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
        sizes, pairs, out, out_off = _condensed_layout(group_off)
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
        """Condensed FAMSA indel075_div_lcs matrices of many groups (kernels/lcs_distance.cu; equal to the CPU's).

        Groups are cut into pieces that fit the free device memory; a piece
        uploads only its own sequences' codes and brings back its distances.
        """
        lens = np.diff(offsets)[np.asarray(ids, dtype=np.int64)]
        with cp.cuda.Device(self.device):
            d_pow = cp.asarray(pow075_table(2 * max(int(lens.max(initial=0)), 1) + 1))
            return self._condensed_in_pieces(
                codes, offsets, ids, group_off, (LCS_BYTES_PER_PAIR, LCS_BYTES_PER_RESIDUE, 64),
                lambda c, o, piece_ids, piece_off: self._lcs_piece(c, o, piece_ids, piece_off, d_pow),
            )

    def _condensed_in_pieces(
        self, codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray,
        costs: tuple[float, float, float], run: Callable[..., np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray]:
        """Condensed matrices of many groups, groups cut into pieces that fit the free device memory.

        ``costs``: device bytes per pair, per residue and per sequence of a piece;
        ``run(codes, offsets, ids, group_off)`` gives a piece's condensed distances on the host.
        """
        codes = np.ascontiguousarray(codes, dtype=np.uint8)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        group_off = np.ascontiguousarray(group_off, dtype=np.int64)
        sizes, pairs, out, out_off = _condensed_layout(group_off)
        if out_off[-1] == 0:
            return out, out_off
        res_cum = np.concatenate(([0], np.cumsum(offsets[ids + 1] - offsets[ids])))
        residues = res_cum[group_off[1:]] - res_cum[group_off[:-1]]

        def piece(lo: int, hi: int) -> None:
            a, b = group_off[lo], group_off[hi]
            out[out_off[lo] : out_off[hi]] = run(codes, offsets, ids[a:b], group_off[lo : hi + 1] - a)

        per_pair, per_residue, per_sequence = costs
        cost = per_pair * pairs + per_residue * residues + per_sequence * sizes + 64
        _run_in_pieces(cost, piece, self.memory_limit)
        return out, out_off

    def _lcs_piece(
        self, codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray, d_pow: cp.ndarray
    ) -> np.ndarray:
        """One launch per word class for the condensed LCS matrices of these groups (host result)."""
        module = kernels.load("lcs_distance", (), self.device)
        lens, d_codes, d_seq_off = _sequences_on_device(codes, offsets, ids)
        plan = _lcs_tiles(group_off, lens)
        out = cp.empty(int(plan["out_off"][-1]), dtype=cp.float64)
        d = {k: cp.asarray(plan[k]) for k in ("group_off", "out_off", "row_group", "row_index", "tile_row", "tile_j0")}
        args = (d_codes, d_seq_off, d["group_off"], d["out_off"], d["row_group"], d["row_index"])
        bounds = plan["class_off"]
        for k in range(len(LCS_WORDS) + 1):
            lo, hi = int(bounds[k]), int(bounds[k + 1])
            if lo < hi:
                tiles = (d["tile_row"][lo:hi], d["tile_j0"][lo:hi], np.int64(hi - lo), d_pow, out)
                self._lcs_launch(module, "lcs_tiles", k, (*args, *tiles), hi - lo, int(plan["long_words"]))
        return out.get()

    def sw_distance_matrix(
        self, codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray,
        matrix: np.ndarray, gaps: GapCosts,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Condensed Smith-Waterman score distances of many groups (kernels/sw_distance.cu; equal to the CPU's).

        Groups are cut into pieces that fit the free device memory, as in
        lcs_distance_matrix; a piece computes its sequences' self scores, then its pairs.
        """
        with cp.cuda.Device(self.device):
            d_matrix = cp.asarray(np.ascontiguousarray(matrix, dtype=np.int64))
            return self._condensed_in_pieces(
                codes, offsets, ids, group_off, (SW_BYTES_PER_PAIR, SW_BYTES_PER_RESIDUE, SW_BYTES_PER_SEQUENCE),
                lambda c, o, piece_ids, piece_off: self._sw_piece(c, o, piece_ids, piece_off, matrix, d_matrix, gaps),
            )

    def _sw_piece(
        self, codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray,
        matrix: np.ndarray, d_matrix: cp.ndarray, gaps: GapCosts,
    ) -> np.ndarray:
        """Self scores, then every pair's tile, of these groups (host result); int32 scores where they fit."""
        module = kernels.load("sw_distance", (), self.device)
        n = len(ids)
        lens, d_codes, d_seq_off = _sequences_on_device(codes, offsets, ids)
        plan = _sw_tiles(group_off, lens)
        max_len = max(int(lens.max()), 1)
        wide = not _sw_fits_int32(matrix, gaps, max_len)
        kind, score = ("i64", np.int64) if wide else ("i32", np.int32)
        cross_bytes = 2 * np.dtype(score).itemsize
        n_tiles = len(plan["tile_row"])
        blocks = max(1, min(n_tiles, SW_BLOCKS_PER_SM * self.n_sm, SW_SCRATCH // (cross_bytes * max_len * SW_THREADS)))
        scratch = cp.empty(2 * blocks * SW_THREADS * max_len, dtype=score)
        gap_args = (score(gaps.open), score(gaps.extend))
        self_scores = cp.empty(n, dtype=cp.int64)
        module.get_function(f"sw_self_{kind}")(
            (max(1, min(blocks, -(-n // SW_THREADS))),), (SW_THREADS,),
            (d_codes, d_seq_off, np.int64(n), d_matrix, *gap_args, scratch, self_scores),
        )
        out = cp.empty(int(plan["out_off"][-1]), dtype=cp.float64)
        d = {k: cp.asarray(plan[k]) for k in ("group_off", "out_off", "row_group", "row_index", "tile_row", "tile_j0")}
        module.get_function(f"sw_tiles_{kind}")(
            (blocks,), (SW_THREADS,),
            (d_codes, d_seq_off, d["group_off"], d["out_off"], d["row_group"], d["row_index"], d["tile_row"],
             d["tile_j0"], np.int64(n_tiles), d_matrix, *gap_args, self_scores, scratch, out),
        )
        return out.get()

    # ---- LCS guide-tree operations: nearest reference and Prim's MST delegated to the CPU until GPU
    # kernels exist (owner: guide-tree accuracy work; see msa/backends/cpu/lcs.py).
    def lcs_nearest_reference(self, codes, offsets, ref_ids, ref_off, member_ids, member_node):
        """CPU implementation (msa.backends.cpu.lcs); same results by construction."""
        from msa.backends.cpu import CpuBackend

        return CpuBackend().lcs_nearest_reference(codes, offsets, ref_ids, ref_off, member_ids, member_node)

    def lcs_prim_mst(self, codes, offsets, ids):
        """CPU implementation (msa.backends.cpu.lcs); same results by construction."""
        from msa.backends.cpu import CpuBackend

        return CpuBackend().lcs_prim_mst(codes, offsets, ids)

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
            d_pow = cp.asarray(pow075_table(2 * max_len + 1))

            def piece(lo: int, hi: int) -> None:
                best[lo:hi], best_d[lo:hi] = self._sample_piece(
                    codes, offsets, ref_ids, ref_off, member_ids[lo:hi], member_node[lo:hi], d_pow
                )

            cost = SAMPLE_BYTES_PER_PAIR * n_refs + LCS_BYTES_PER_RESIDUE * lens[member_ids] + 128
            _run_in_pieces(cost, piece, self.memory_limit)
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
        lens, d_codes, d_seq_off = _sequences_on_device(codes, offsets, np.concatenate((member_ids[order], ref_ids[ref_pos])))
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

    def _lcs_launch(self, module, prefix: str, k: int, args: tuple, n_tiles: int, long_words: int) -> None:
        """Launch ``prefix``'s kernel of word class ``k`` over ``n_tiles`` tiles (the last class: ``prefix_long``,
        masks in shared or global memory, V in a global scratch of at most LCS_LONG_SCRATCH bytes)."""
        blocks = min(n_tiles, LCS_BLOCKS_PER_SM * self.n_sm)
        if k < len(LCS_WORDS):
            w = int(LCS_WORDS[k])
            module.get_function(f"{prefix}_{w}")((blocks,), (LCS_THREADS,), args, shared_mem=20 * w * 8)
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


def _lcs_tiles(group_off: np.ndarray, lens: np.ndarray) -> dict[str, np.ndarray]:
    """Tiles of the condensed LCS matrices, ordered by the word class of their row sequence.

    Row ``r`` (member ``row_index`` of group ``row_group``) against later
    members ``tile_j0 .. tile_j0 + LCS_THREADS``; the tiles of class ``k``
    (``LCS_WORDS[k]`` words, the last class: longer rows, of at most
    ``long_words`` words) are ``class_off[k] .. class_off[k + 1]``.
    """
    sizes = np.diff(group_off)
    rows = np.maximum(sizes - 1, 0)
    n_rows = int(rows.sum())
    row_group = np.repeat(np.arange(len(sizes), dtype=np.int64), rows)
    row_index = np.arange(n_rows, dtype=np.int64) - np.repeat(np.cumsum(rows) - rows, rows)
    out_off = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes * (sizes - 1) // 2, out=out_off[1:])
    row_tiles = -(-(sizes[row_group] - 1 - row_index) // LCS_THREADS)
    words = np.maximum(-(-lens[group_off[row_group] + row_index] // 64), 1)
    row_class = np.searchsorted(LCS_WORDS, words)
    n_tiles = int(row_tiles.sum())
    tile_row = np.repeat(np.arange(n_rows, dtype=np.int64), row_tiles)
    first = np.repeat(np.cumsum(row_tiles) - row_tiles, row_tiles)
    tile_j0 = row_index[tile_row] + 1 + LCS_THREADS * (np.arange(n_tiles, dtype=np.int64) - first)
    order = np.argsort(row_class[tile_row], kind="stable")
    class_off = np.zeros(len(LCS_WORDS) + 2, dtype=np.int64)
    np.cumsum(np.bincount(row_class[tile_row], minlength=len(LCS_WORDS) + 1), out=class_off[1:])
    long_rows = row_class == len(LCS_WORDS)
    return {
        "group_off": group_off, "out_off": out_off, "row_group": row_group, "row_index": row_index,
        "tile_row": tile_row[order], "tile_j0": tile_j0[order], "class_off": class_off,
        "long_words": np.int64(words[long_rows].max() if long_rows.any() else 0),
    }


def _sw_tiles(group_off: np.ndarray, lens: np.ndarray) -> dict[str, np.ndarray]:
    """Tiles of the condensed SW matrices (row ``r`` against later members ``tile_j0 .. + SW_THREADS``),
    longest row sequence first, so that the grid's last tiles are the cheapest."""
    sizes = np.diff(group_off)
    rows = np.maximum(sizes - 1, 0)
    n_rows = int(rows.sum())
    row_group = np.repeat(np.arange(len(sizes), dtype=np.int64), rows)
    row_index = np.arange(n_rows, dtype=np.int64) - np.repeat(np.cumsum(rows) - rows, rows)
    out_off = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes * (sizes - 1) // 2, out=out_off[1:])
    row_tiles = -(-(sizes[row_group] - 1 - row_index) // SW_THREADS)
    n_tiles = int(row_tiles.sum())
    tile_row = np.repeat(np.arange(n_rows, dtype=np.int64), row_tiles)
    first = np.repeat(np.cumsum(row_tiles) - row_tiles, row_tiles)
    tile_j0 = row_index[tile_row] + 1 + SW_THREADS * (np.arange(n_tiles, dtype=np.int64) - first)
    order = np.argsort(-lens[group_off[row_group] + row_index][tile_row], kind="stable")
    return {
        "group_off": group_off, "out_off": out_off, "row_group": row_group, "row_index": row_index,
        "tile_row": tile_row[order], "tile_j0": tile_j0[order],
    }


def _sw_fits_int32(matrix: np.ndarray, gaps: GapCosts, max_len: int) -> bool:
    """Whether every SW value of sequences up to ``max_len`` fits int32 (kernels/sw_distance.cu's bound:
    values lie in [open + extend, max|M| * (max_len + 1)])."""
    top = int(np.abs(matrix).max()) * (max_len + 1)
    bottom = abs(int(gaps.open)) + abs(int(gaps.extend))
    return max(top, bottom) <= SW_INT32_MAX


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


def _dp_shared(threads: int, k: int, pipe: bool) -> int:
    """Dynamic shared memory of a dp_fill<k> block (S2 of its columns, exchange buffers), or of a
    dp_pipe<k> block (exchange buffers only: its cells' scores come from cell_scores)."""
    return 8 * threads * ((0 if pipe else N_CODES * k) + 6)


def _boundary_bytes(wa: np.ndarray, wb: np.ndarray) -> np.ndarray:
    """Most device bytes of a merge's dp_fill / dp_pipe boundary buffers and progress counters
    (what _merge_records gives it, whichever kernel and block size its piece gets)."""
    wide = np.maximum(wa, wb)
    chunks = -(-wide // min(DP_FEW_THREADS, DP_PIPE_THREADS))
    return ROW_BYTES * np.maximum(chunks - 1, 1) * (wide + 1) + 8 * chunks


def _merge_records(
    col_off: np.ndarray, few: bool, pipeline: bool
) -> tuple[np.ndarray, int, int, bool, dict[str, int]]:
    """Per-merge records for the DP kernels (scratch offsets; merge_info fills in the roles),
    the fill's block size, columns per thread (K) and kind (FILLS), and the scratch
    sizes (``tickets``: dp_pipe's (merge, chunk) tickets; ``scores``: its cells, I_SC;
    ``score_tiles``: the most cell_scores tiles of a merge, for either role).

    Which profile plays P1 is decided on the device, so the scratch is sized for
    either choice: direction bytes for the larger of W2 * roundup8(W1), boundary rows
    and chunks for the wider profile. dp_fill hands a merge's chunk boundaries on in one
    row buffer; dp_pipe, whose chunks run at once, needs one per boundary (chunks - 1).
    Pieces with fewer merges than SMs (``few``) run dp_scan where it takes fewer wavefront-step
    equivalents (SCAN_ROW_STEPS), else dp_pipe where some merge spans more than one chunk, if
    ``pipeline`` (the piece cost counted the cell scores); their tickets run merge-major,
    chunk-ascending (I_TICK: first ticket).
    """
    w = np.diff(col_off)
    wa, wb = w[0::2], w[1::2]
    wide = np.maximum(wa, wb)
    widest = int(wide.max())
    threads, k = min(DP_FEW_THREADS if few else DP_THREADS, max(32, -(-widest // 32) * 32)), 1
    chunks = -(-wide // (threads * k))
    fill = "fill"
    if few and pipeline and DP_PIPELINE:
        scan_chunks = -(-wide // (SCAN_THREADS * SCAN_K))
        scan_rows = (np.minimum(wa, wb) + PUBLISH_ROWS * scan_chunks).max()
        if DP_SCAN and SCAN_ROW_STEPS * scan_rows < (wa + wb).max():
            fill, threads, k = "scan", SCAN_THREADS, SCAN_K
        elif chunks.max() > 1:
            fill, threads = "pipe", DP_PIPE_THREADS
        chunks = -(-wide // (threads * k))
    slices = np.ones_like(wide) if fill == "fill" else np.maximum(chunks - 1, 1)
    info = np.zeros((len(wa), N_INFO), dtype=np.int64)
    dirs = np.maximum(wb * ((wa + 7) // 8 * 8), wa * ((wb + 7) // 8 * 8))
    sizes = {}
    fields = (
        (7, "dirs", dirs), (8, "rows", slices * (wide + 1)), (9, "tickets", chunks), (10, "path", wa + wb),
        (11, "scores", wa * wb),
    )
    for field, name, size in fields:
        ends = np.cumsum(size)
        info[:, field] = ends - size
        sizes[name] = int(ends[-1])
    tiles = np.maximum((-(-wb // CS_THREADS)) * (-(-wa // CS_ROWS)), (-(-wa // CS_THREADS)) * (-(-wb // CS_ROWS)))
    sizes["score_tiles"] = int(tiles.max())
    return info, threads, k, fill, sizes


def _sequences_on_device(
    codes: np.ndarray, offsets: np.ndarray, seqs: np.ndarray
) -> tuple[np.ndarray, cp.ndarray, cp.ndarray]:
    """Lengths of sequences ``seqs``, and their codes packed end to end and offsets, uploaded."""
    lens = offsets[seqs + 1] - offsets[seqs]
    seq_off = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum(lens, out=seq_off[1:])
    return lens, cp.asarray(codes[_ranges(offsets[seqs], lens)]), cp.asarray(seq_off)


def _condensed_layout(group_off: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group sizes, pairs per group, the condensed output array and each group's offset in it."""
    sizes = np.diff(group_off)
    pairs = sizes * (sizes - 1) // 2
    out_off = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(pairs, out=out_off[1:])
    return sizes, pairs, np.empty(out_off[-1], dtype=np.float64), out_off


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
