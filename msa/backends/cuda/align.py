"""Progressive merges on the GPU (kernels/merge_dp.cu, sequence_profile.cu, build_parent.cu), beside
its CPU oracle msa.backends.cpu.align.

Integer-exact with the CPU DP: the same column maps and parent profiles. A
level batch is cut into pieces that fit the free device memory; the DP fill
kernel (dp_fill, dp_pipe or dp_scan) is chosen per piece by _merge_records.
"""
from __future__ import annotations

from typing import Callable

import cupy as cp
import numpy as np

from msa import kernels
from msa.alphabet import N_CODES
from msa.backends.cuda.memory import DeviceStage, piece_budget, piece_cuts, run_in_pieces
from msa.profile import N_COUNTS, AlignBatch, AlignResult

#: dp_fill block shapes, one column of P2 per thread (dp_fill<K> with K = 1; K = 8 measured
#: slower, docs/progressive.md): at most DP_THREADS threads for batches with at least as many
#: merges as SMs, DP_FEW_THREADS for fewer (the long merges of deep trees and the root).
#: 128 rather than 256: a chunk of P2 costs W1 + threads - 1 wavefront steps, so narrower
#: chunks waste fewer thread-steps where a level has merges enough to fill the GPU (on an
#: H100 whole progressive stages 3-12 % faster than with 256, `msa add`'s batches 6 %).
DP_THREADS = 128
DP_FEW_THREADS = 512
#: Most threads of each dp_fill<K> / dp_pipe<K> instantiation (kernels/merge_dp.cu).
DP_ALLOWED_THREADS = {1: 512}
#: Batches with fewer merges than SMs whose P2 spans several chunks run dp_pipe: the chunks of a
#: merge on concurrent blocks, ~W1 + W2 wavefront steps instead of chunks x (W1 + threads).
#: False keeps them on dp_fill (one block per merge; tests compare the two).
DP_PIPELINE = True
#: dp_pipe block size (columns per chunk): fewer threads per block make a wavefront step
#: cheaper, more chunks spread a merge over more SMs (docs/progressive.md).
DP_PIPE_THREADS = 128
#: Pipelined batches run dp_scan (a chunk takes a row at a time, the horizontal gap state by a
#: block scan: ~min(W1, W2) row steps) rather than dp_pipe (a wavefront, ~W1 + W2 steps);
#: False measures dp_pipe (docs/progressive.md). Tests run both.
DP_SCAN = True
#: Batches of at least as many merges as SMs whose merges all have a one-sequence side (P1 then
#: is that sequence: `msa add`'s batches) run dp_rows, a warp a merge with the sequence's rows on
#: its lanes, ~W2 steps of 4 cells a lane per 128 rows (dp_fill: W1 + threads - 1 steps per chunk
#: of P2, a block barrier each). False keeps them on dp_fill (tests compare the two).
DP_ROWS = True
#: dp_rows: merges (warps) per block, and the ring of P2's column terms each warp keeps in shared
#: memory, columns x int64 a column (kernels/sequence_profile.cu, ROWS_*; passed with -D).
ROWS_WARPS = 2
ROWS_RING = 64
ROWS_STRIDE = 31
#: dp_scan's block (SCAN_THREADS) and columns per thread (SCAN_K, 4 only), passed with -D.
SCAN_THREADS = 128
SCAN_K = 4
#: A dp_scan row costs about this many dp_pipe wavefront steps (H200: ~1.8-2.1 us against
#: ~0.7-0.75 us, docs/progressive.md), so a piece runs dp_scan only where its longest merge
#: takes fewer: min(W1, W2) + PUBLISH_ROWS * chunks rows against W1 + W2 steps.
SCAN_ROW_STEPS = 2.5
#: Rows a pipelined chunk publishes at a time (kernels/merge_dp.cu's PUBLISH_ROWS, passed with -D).
PUBLISH_ROWS = 8
#: Block sizes of merge_info, traceback (warps per block) (kernels/merge_dp.cu) and of build_parent and
#: sequence_slots (walk_path.cuh), passed with -D.
MI_THREADS = 128
TB_WARPS = 4
BP_THREADS = 256
#: cell_scores tiles (kernels/merge_dp.cu, CS_*, passed with -D): columns of P2 (threads) x rows of P1.
CS_THREADS = 128
CS_ROWS = 32
#: cell_scores blocks per SM a launch aims at (each block strides over its merge's tiles).
CS_BLOCKS_PER_SM = 8
#: Device bytes per DP cell of a dp_pipe piece: its int64 substitution score from cell_scores.
SCORE_BYTES = 8
#: The DP fill kernels _merge_records chooses from.
FILLS = ("fill", "pipe", "scan", "rows")
#: int64 fields of a merge record (kernels/merge.cuh, I_*; passed with -D as N_INFO).
N_INFO = 12
#: Device bytes per input column of a piece (counts, column terms, map).
ALIGN_BYTES_PER_COLUMN = 112 + 5 * 8 + 24 * 8 + 4 + 24 + 24 * 4 + 8
#: Device bytes per row of P1 of a chunk-boundary row buffer (D, H, V).
ROW_BYTES = 3 * 8
#: Device bytes a merge's input column holds outside profile_align while its level runs: the
#: gathered table and at most one parent column (int32 x N_COUNTS each), and the int32 map kept
#: for the top-down pass.
LEVEL_BYTES_PER_COLUMN = 2 * 4 * N_COUNTS + 4


class AlignStage(DeviceStage):
    """profile_align of :class:`~msa.backends.cuda.CudaBackend`."""

    def _load_align(self) -> None:
        """Load (the shipped fatbin, else NVRTC's compile) the merge kernels with this module's sizes."""
        align = kernels.load(
            "merge_dp",
            (("SCAN_THREADS", SCAN_THREADS), ("SCAN_K", SCAN_K), ("MI_THREADS", MI_THREADS), ("CS_THREADS", CS_THREADS),
             ("CS_ROWS", CS_ROWS), ("PUBLISH_ROWS", PUBLISH_ROWS), ("TB_WARPS", TB_WARPS), ("N_INFO", N_INFO)),
            self.device,
        )
        parents = kernels.load("build_parent", (("BP_THREADS", BP_THREADS), ("N_INFO", N_INFO)), self.device)
        rows = kernels.load(
            "sequence_profile",
            (("BP_THREADS", BP_THREADS), ("ROWS_WARPS", ROWS_WARPS), ("ROWS_RING", ROWS_RING),
             ("ROWS_STRIDE", ROWS_STRIDE), ("N_INFO", N_INFO)),
            self.device,
        )
        self._column_setup = align.get_function("column_setup")
        self._merge_info = align.get_function("merge_info")
        # The fills by _merge_records' choice: dp_fill1 (one block per merge), dp_pipe1 and
        # dp_scan (a merge's chunks on concurrent blocks), dp_rows (a warp per merge).
        self._fills = {kind: align.get_function(f"dp_{kind}{'1' if kind in ('fill', 'pipe') else ''}")
                       for kind in FILLS if kind != "rows"}
        self._fills["rows"] = rows.get_function("dp_rows")
        for kind in ("fill", "pipe"):
            self._fills[kind].max_dynamic_shared_size_bytes = _dp_shared(DP_ALLOWED_THREADS[1], 1, kind == "pipe")
        self._cell_scores = align.get_function("cell_scores")
        self._traceback = align.get_function("traceback")
        self._build_parent = parents.get_function("build_parent")
        self._sequence_slots = rows.get_function("sequence_slots")

    def profile_align(self, batch: AlignBatch) -> AlignResult:
        """Align every merge of a level batch on the GPU (the merge kernels; equal to the CPU's).

        ``batch.counts`` may be a host or device array; maps and parent counts stay
        on the device. Merges are cut into pieces that fit the free device memory;
        each piece waits for the device once, to learn its parents' widths. Only a batch
        of fewer merges than SMs may run dp_pipe, so only its cost counts the cell scores.
        A batch with cell bonuses (``batch.bonus``) runs the fills that read cell_scores' output,
        which adds them.
        """
        off = np.ascontiguousarray(batch.col_offsets, dtype=np.int64)
        n_merges = batch.n_merges
        parents: list[cp.ndarray] = []
        lengths: list[np.ndarray] = []
        scored = batch.bonus is not None
        cost = self._align_cost(np.diff(off), scored)
        with cp.cuda.Device(self.device):
            maps = cp.empty(int(off[-1]), dtype=cp.int32)
            matrix = np.ascontiguousarray(np.ravel(batch.matrix), dtype=np.int64)
            gap_rows = batch.gap_rows()  # each merge's own gap costs (families of different sizes)

            pipeline = n_merges < self.n_sm or scored

            def piece(lo: int, hi: int) -> None:
                a, b = off[2 * lo], off[2 * hi]
                try:
                    piece_maps, piece_parents, piece_lengths = self._align_piece(
                        batch, lo, hi, matrix, gap_rows, pipeline
                    )
                except cp.cuda.memory.OutOfMemoryError:
                    if not pipeline or hi - lo > 1 or scored:  # several merges: run_in_pieces halves the piece
                        raise
                    # One merge whose 8-byte cell scores do not fit: dp_fill needs 1 byte a cell.
                    cp.get_default_memory_pool().free_all_blocks()
                    piece_maps, piece_parents, piece_lengths = self._align_piece(
                        batch, lo, hi, matrix, gap_rows, False
                    )
                maps[a:b].data.copy_from_device_async(piece_maps.data, piece_maps.nbytes)  # a copy, not a CuPy kernel
                parents.append(piece_parents)
                lengths.append(piece_lengths)

            if n_merges:
                run_in_pieces(cost, piece, self.memory_limit)
            if not batch.parents:
                counts = None
            elif len(parents) == 1:
                counts = parents[0]
            elif parents:
                counts = cp.concatenate(parents)
            else:
                counts = cp.zeros((0, N_COUNTS), dtype=cp.int32)
        parent_off = np.zeros(n_merges + 1, dtype=np.int64)
        if lengths:
            np.cumsum(np.concatenate(lengths), out=parent_off[1:])
        return AlignResult(maps, counts, parent_off)

    def profile_slots(
        self, profile: np.ndarray, n_profile: int, codes: np.ndarray, offsets: np.ndarray, matrix: np.ndarray,
        gaps: np.ndarray, advance: Callable[[int], None] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """msa add's merges, every sequence against one profile; see Backend. The profile's
        table is gathered once a piece and every merge of the piece reads its column terms (the
        CPU repeats it in every merge: 10^4 copies of a 2,442-column profile were 2.7 GB of
        tables and 18 ms of column_setup); the DP and the traceback are profile_align's, and
        sequence_slots reads each residue's place off the path, where the CPU reads it off the
        maps (CpuBackend.residue_slots)."""
        offsets = np.asarray(offsets, dtype=np.int64)
        lengths = np.diff(offsets)
        w, m = len(profile), len(lengths)
        slot = np.empty(int(offsets[-1]), dtype=np.int64)
        hit = np.empty(int(offsets[-1]), dtype=bool)
        matrix = np.ascontiguousarray(np.ravel(matrix), dtype=np.int64)
        with cp.cuda.Device(self.device):
            stored = [cp.asarray(np.ascontiguousarray(profile, dtype=np.int32))]
            d_codes = cp.asarray(np.asarray(codes, dtype=np.uint8))

            def piece(lo: int, hi: int) -> None:
                n, ls = hi - lo, lengths[lo:hi]
                tables = self.gather_profiles(
                    stored, np.concatenate(([0], np.full(n, -1))), np.concatenate(([0], offsets[lo:hi])),
                    np.concatenate(([w], ls)), d_codes,
                )
                table_off = np.concatenate(([0, w], w + np.cumsum(ls))).astype(np.int64)
                n_seqs = np.concatenate(([n_profile], np.ones(n, dtype=np.int64)))
                sides = np.zeros((2, 2 * n), dtype=np.int64)  # lo, hi of each merge's profile, then sequence
                sides[1, 0::2] = w
                sides[0, 1::2], sides[1, 1::2] = table_off[1:-1], table_off[2:]
                widths = np.zeros(2 * n + 1, dtype=np.int64)  # the scratch, sized as a level's
                widths[1::2], widths[2::2] = w, ls
                records = _merge_records(np.cumsum(widths), few=n < self.n_sm, pipeline=False, seq_side=True)
                merge_seqs = np.tile(np.array([n_profile, 1], dtype=np.int64), n)
                # Every merge has the same gap costs: column_setup reads table t's at row t // 2.
                gap_rows = np.tile(np.asarray(gaps, dtype=np.int64), (n + 1, 1))
                info, paths, path_lengths = self._paths(
                    tables, table_off, n_seqs, sides, merge_seqs, matrix, gap_rows, records
                )
                d_slot = cp.empty(max(int(ls.sum()), 1), dtype=cp.int64)
                d_hit = cp.empty(max(int(ls.sum()), 1), dtype=cp.uint8)
                self._sequence_slots(
                    (n,), (BP_THREADS,), (info, paths, path_lengths, np.int64(w), np.int64(w), d_slot, d_hit)
                )
                seg = slice(int(offsets[lo]), int(offsets[hi]))
                slot[seg] = d_slot[: seg.stop - seg.start].get()
                hit[seg] = d_hit[: seg.stop - seg.start].get().astype(bool)
                if advance is not None:
                    advance(n)

            if m:
                run_in_pieces(self._slots_cost(w, lengths), piece, self.memory_limit)
        return slot, hit

    @staticmethod
    def _slots_cost(w: int, lengths: np.ndarray) -> np.ndarray:
        """Device bytes profile_slots plans for each merge: its sequence's table, column terms and
        slots, boundary rows, directions and path (the profile's table and terms, once a piece,
        are left to run_in_pieces' retry where they do not fit)."""
        wa = np.full(len(lengths), w, dtype=np.int64)
        return (lengths * (ALIGN_BYTES_PER_COLUMN + 112 + 9) + _boundary_bytes(wa, lengths)
                + (wa + 8) * (lengths + 8) + wa + 64)

    def level_cuts(self, kid_widths: np.ndarray) -> np.ndarray:
        """Pieces of a level that fit MEMORY_FRACTION of the free memory (within ``--gpu-memory``)
        with their gathered tables, parents and kept maps, so that each runs as one piece of
        profile_align (no concatenation of parent pieces); see Backend."""
        w = np.asarray(kid_widths, dtype=np.int64)
        level = (w[0::2] + w[1::2]) * LEVEL_BYTES_PER_COLUMN
        with cp.cuda.Device(self.device):
            budget = piece_budget(self.memory_limit)
        return piece_cuts(self._align_cost(w) + level, budget)

    def _align_cost(self, widths: np.ndarray, scored: bool = False) -> np.ndarray:
        """Device bytes profile_align plans for each merge (input widths two per merge): its
        column terms and maps, boundary rows, directions, and cell scores (and bonuses) where the
        batch (fewer merges than SMs, or ``scored``: with cell bonuses) may run dp_pipe."""
        wa, wb = widths[0::2], widths[1::2]
        cost = (wa + wb) * (ALIGN_BYTES_PER_COLUMN + 1 + 112) + _boundary_bytes(wa, wb) + (wa + 8) * (wb + 8) + 64
        if len(wa) < self.n_sm or scored:
            cost = cost + SCORE_BYTES * wa * wb * (2 if scored else 1)
        return cost

    def _align_piece(
        self, batch: AlignBatch, lo: int, hi: int, matrix: np.ndarray, gap_rows: np.ndarray, pipeline: bool
    ) -> tuple[cp.ndarray, cp.ndarray | None, np.ndarray]:
        """Merges ``lo..hi`` of a batch: (maps of their input columns, parent counts or None
        where the batch wants none, parent widths): _paths, then one wait (the parent widths)
        and build_parent. ``pipeline``: the batch may run dp_pipe (fewer merges than SMs; its
        cost counted the scores).
        """
        off = batch.col_offsets
        a, b = int(off[2 * lo]), int(off[2 * hi])
        n, n_cols = hi - lo, b - a
        col_off = np.ascontiguousarray(off[2 * lo : 2 * hi + 1] - a, dtype=np.int64)
        n_seqs = np.ascontiguousarray(batch.n_seqs[2 * lo : 2 * hi], dtype=np.int64)
        counts = cp.ascontiguousarray(cp.asarray(batch.counts[a:b], dtype=cp.int32))
        seq_side = bool(np.all(np.minimum(n_seqs[0::2], n_seqs[1::2]) == 1))
        bonus = None
        if batch.bonus is not None:
            values, boff = batch.bonus
            if boff[hi] > boff[lo]:
                bonus = (cp.asarray(values[boff[lo] : boff[hi]], dtype=cp.int64),  # made there (LevelBonuses)
                         cp.asarray(np.ascontiguousarray(boff[lo : hi + 1] - boff[lo], dtype=np.int64)))
        records = _merge_records(col_off, few=n < self.n_sm, pipeline=pipeline, seq_side=seq_side,
                                 scored=bonus is not None)
        sides = np.stack((col_off[:-1], col_off[1:]))  # a level's sides lie end to end
        d_info, paths, lengths = self._paths(counts, col_off, n_seqs, sides, n_seqs, matrix, gap_rows[lo:hi], records,
                                             bonus)
        widths = lengths.get()
        # the parents' offsets from the host: cp.cumsum(out=...) copies its result with a CuPy kernel
        parent_off = cp.asarray(np.concatenate(([0], np.cumsum(widths))).astype(np.int64))
        maps = cp.empty(n_cols, dtype=cp.int32)
        # A parent is at most as wide as its two children; without parents, a null pointer (the maps only).
        parents = cp.empty((n_cols, N_COUNTS), dtype=cp.int32) if batch.parents else None
        out = np.uint64(0) if parents is None else parents
        self._build_parent((n,), (BP_THREADS,), (d_info, counts, paths, lengths, parent_off, maps, out))
        return maps, None if parents is None else parents[: int(widths.sum())], widths

    def _paths(
        self, counts: cp.ndarray, table_off: np.ndarray, table_seqs: np.ndarray, sides: np.ndarray,
        side_seqs: np.ndarray, matrix: np.ndarray, gap_rows: np.ndarray, records: tuple,
        bonus: tuple[cp.ndarray, cp.ndarray] | None = None,
    ) -> tuple[cp.ndarray, cp.ndarray, cp.ndarray]:
        """The DP of ``n`` merges up to their paths: (merge records, paths, path lengths), on the device.

        ``counts``: profile tables end to end (``table_off``, over ``table_seqs`` sequences each);
        merge q aligns the columns ``sides[0, s] .. sides[1, s] - 1`` (s = 2q, 2q + 1; over
        ``side_seqs[s]`` sequences) with gap costs ``gap_rows[q]`` (table t's terms use row t // 2);
        ``records``: _merge_records' for the merges. One upload (offsets, sizes, matrix, gap rows,
        sides, scratch offsets), four launches (five with dp_pipe or dp_scan): column_setup,
        merge_info, the fill _merge_records chose, traceback. dp_pipe (a piece of a batch of fewer
        merges than SMs, whose cost counted the cell scores) runs a grid of at most one block per
        SM drawing (merge, chunk) tickets, after cell_scores has written every cell's
        substitution score (CS_BLOCKS_PER_SM blocks per SM in all), plus its ``bonus`` (cell
        bonuses and per-merge offsets on the device; _merge_records chose such a fill for it).
        """
        info, t, k, fill, sizes = records
        n, n_tables, n_cols = len(info), len(table_seqs), int(table_off[-1])
        meta = cp.asarray(np.concatenate((
            table_off, table_seqs, side_seqs, matrix, np.ravel(gap_rows), np.ravel(sides), info.ravel(),
        )).astype(np.int64, copy=False))
        parts, at = [], 0
        for size in (n_tables + 1, n_tables, 2 * n, N_CODES * N_CODES, gap_rows.size, 2 * n, 2 * n):
            parts.append(meta[at : at + size])
            at += size
        d_table_off, d_table_seqs, d_side_seqs, d_m, d_g, d_lo, d_hi = parts
        d_info = meta[at:]
        terms = [cp.empty(n_cols, dtype=cp.int64) for _ in range(5)]  # gapc, res, start, cont, retype
        s2 = cp.empty((n_cols, N_CODES), dtype=cp.int64)
        nnz = cp.empty(n_cols, dtype=cp.int32)
        nzc = cp.empty(n_cols, dtype=cp.int32)
        codes = cp.empty((n_cols, N_CODES), dtype=cp.uint8)
        mult = cp.empty((n_cols, N_CODES), dtype=cp.int32)
        self._column_setup(
            ((n_cols + 127) // 128,), (128,),
            (counts, np.int64(n_cols), d_table_off, np.int64(n_tables), d_table_seqs, d_m, d_g,
             *terms, s2, nnz, codes, mult, nzc),
        )
        self._merge_info((n,), (MI_THREADS,), (d_lo, d_hi, d_side_seqs, nzc, d_info))
        rows = [cp.empty(max(sizes["rows"], 1), dtype=cp.int64) for _ in range(3)]
        dirs = cp.empty(max(sizes["dirs"] // 8, 1), dtype=cp.uint64)
        final3 = cp.empty(3 * n, dtype=cp.int64)
        args = (d_info, d_g, *terms, s2, nnz, codes, mult, *rows, dirs, final3)
        if fill == "fill":
            self._fills["fill"]((n,), (t,), args, shared_mem=_dp_shared(t, k, False))
        elif fill == "rows":
            self._fills["rows"](
                (-(-n // ROWS_WARPS),), (32 * ROWS_WARPS,), (*args, np.int64(n)),
                shared_mem=8 * ROWS_WARPS * ROWS_RING * ROWS_STRIDE,
            )
        else:
            scores = cp.empty(max(sizes["scores"], 1), dtype=cp.int64)
            grid = min(sizes["score_tiles"], -(-CS_BLOCKS_PER_SM * self.n_sm // n))
            self._cell_scores(
                (grid, n), (CS_THREADS,),
                (d_info, terms[0], terms[1], s2, nnz, codes, mult, scores, np.int64(fill == "scan"),
                 *((np.uint64(0), np.uint64(0)) if bonus is None else bonus)),
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
        paths = cp.empty(max(sizes["path"], 1), dtype=cp.uint8)
        lengths = cp.empty(n, dtype=cp.int64)
        self._traceback(
            ((n + TB_WARPS - 1) // TB_WARPS,), (32 * TB_WARPS,), (d_info, np.int64(n), dirs, final3, paths, lengths)
        )
        return d_info, paths, lengths


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
    col_off: np.ndarray, few: bool, pipeline: bool, seq_side: bool = False, scored: bool = False
) -> tuple[np.ndarray, int, int, str, dict[str, int]]:
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
    chunk-ascending (I_TICK: first ticket). Pieces of many merges that all have a one-sequence
    side (``seq_side``) run dp_rows (DP_ROWS), which uses dp_fill's records and scratch.
    Pieces with cell bonuses (``scored``) always run dp_scan or dp_pipe: cell_scores adds them.
    """
    w = np.diff(col_off)
    wa, wb = w[0::2], w[1::2]
    wide = np.maximum(wa, wb)
    widest = int(wide.max())
    threads, k = min(DP_FEW_THREADS if few else DP_THREADS, max(32, -(-widest // 32) * 32)), 1
    chunks = -(-wide // (threads * k))
    fill = "rows" if seq_side and not few and DP_ROWS else "fill"
    if (few and pipeline and DP_PIPELINE) or scored:
        scan_chunks = -(-wide // (SCAN_THREADS * SCAN_K))
        scan_rows = (np.minimum(wa, wb) + PUBLISH_ROWS * scan_chunks).max()
        if DP_SCAN and SCAN_ROW_STEPS * scan_rows < (wa + wb).max():
            fill, threads, k = "scan", SCAN_THREADS, SCAN_K
        elif chunks.max() > 1 or scored:
            fill, threads = "pipe", DP_PIPE_THREADS
        chunks = -(-wide // (threads * k))
    slices = np.ones_like(wide) if fill in ("fill", "rows") else np.maximum(chunks - 1, 1)
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
