"""6-mer stage on the GPU (kernels/kmer_counts.cu), beside its CPU oracle msa.backends.cpu.kmers.

The 6-mer struct arrays are built and kept on the device; only per-sequence
arrays (O(n)) and each call's small results (assignments, reference x
reference distances) come back to the host.
"""
from __future__ import annotations

import cupy as cp
import numpy as np

from msa import kernels
from msa.backends.cuda.memory import DeviceStage, condensed_layout, run_in_pieces
from msa.distances.kmers import MAX_KMER_DIST, N_KMERS, SECTION, KmerAlphabet, KmerTables, section_layout

#: Members (threads) per nearest_reference block; one block fills an SM's shared memory.
NEAREST_THREADS = 1024
#: Shared memory of nearest_reference: one 32-bit word (4 references x 8 bits) per 6-mer.
NEAREST_SHARED = 4 * N_KMERS
MATRIX_THREADS = 256
#: Shared memory of kmer_distance_matrix: one exact 16-bit count per 6-mer.
MATRIX_SHARED = 2 * N_KMERS
#: Device bytes per residue while building struct arrays (codes, groups, keys, sort scratch).
BUILD_BYTES_PER_RESIDUE = 48


class DeviceKmerTables(KmerTables):
    """:class:`KmerTables` whose struct arrays stay on the GPU.

    Per-sequence arrays are on both sides; ``kcodes``/``kcounts`` are copied to
    the host only when something reads them there (the CPU backend, tests).
    """

    def __init__(
        self, lengths, self_scores, n_distinct, slot, start, section_off, d_kcodes, d_kcounts, alphabet: KmerAlphabet
    ) -> None:
        self.lengths, self.self_scores, self.n_distinct = lengths, self_scores, n_distinct
        self.slot, self.start, self.section_off = slot, start, section_off
        self.d_kcodes, self.d_kcounts = d_kcodes, d_kcounts
        self.alphabet = alphabet
        self.d_lenfac = cp.asarray(np.asarray(alphabet.lenfac, dtype=np.float64))
        self.d_start = cp.asarray(start)
        self.d_n_distinct = cp.asarray(n_distinct)
        self.d_self_scores = cp.asarray(self_scores)
        self.d_lengths = cp.asarray(lengths)
        self._host: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def upload(cls, t: KmerTables) -> DeviceKmerTables:
        """Device copy of host-built tables (the CPU's, in tests)."""
        out = cls(t.lengths, t.self_scores, t.n_distinct, t.slot, t.start, t.section_off,
                  cp.asarray(t.kcodes), cp.asarray(t.kcounts), t.alphabet)
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


class KmerStage(DeviceStage):
    """kmer_tables, nearest_reference and kmer_distance_matrix of :class:`~msa.backends.cuda.CudaBackend`."""

    def _load_kmers(self) -> None:
        """Compile (or fetch from the cache) kernels/kmer_counts.cu for this device."""
        module = kernels.load("kmer_counts", (("NR_THREADS", NEAREST_THREADS),), self.device)
        self._window_keys = module.get_function("window_keys")
        self._sequence_runs = module.get_function("sequence_runs")
        self._scatter_runs = module.get_function("scatter_runs")
        self._repack = module.get_function("repack")
        self._nearest = module.get_function("nearest_reference")
        self._nearest.max_dynamic_shared_size_bytes = NEAREST_SHARED
        self._matrix = module.get_function("kmer_distance_matrix")
        self._matrix.max_dynamic_shared_size_bytes = MATRIX_SHARED

    def kmer_tables(self, codes: np.ndarray, offsets: np.ndarray, alphabet: KmerAlphabet) -> DeviceKmerTables:
        """6-mer struct arrays built on the device (layout in msa.distances.kmers; equal to the CPU's).

        A piece of sequences at a time: each residue's window key (``window_keys``), CuPy's
        sort, then each sequence's runs (``sequence_runs``, counted, then written compactly);
        the host lays out the sections from the run counts, and ``scatter_runs`` places every
        piece's runs. Only per-sequence arrays cross PCIe, and no CuPy operation needs NVRTC."""
        codes = np.ascontiguousarray(codes, dtype=np.uint8)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        n = len(offsets) - 1
        if n == 0:
            from msa.backends.cpu.kmers import build_kmer_tables  # local: (b) Numba: the GPU path imports it only here (docs/start-up.md, step 8)

            return DeviceKmerTables.upload(build_kmer_tables(codes, offsets, alphabet))
        windows = np.zeros(n, dtype=np.int64)
        n_distinct = np.zeros(n, dtype=np.int32)
        pieces: list[tuple[int, int, cp.ndarray, cp.ndarray, cp.ndarray]] = []

        with cp.cuda.Device(self.device):
            groups = cp.asarray(np.ascontiguousarray(alphabet.groups, dtype=np.uint8))

            def build(lo: int, hi: int) -> None:
                run_code, run_count, run_off, windows[lo:hi], n_distinct[lo:hi] = self._piece_runs(
                    codes, offsets, lo, hi, groups
                )
                pieces.append((lo, hi, run_code, run_count, run_off))

            run_in_pieces(np.diff(offsets) * BUILD_BYTES_PER_RESIDUE + 64, build, self.memory_limit)
            slot, start, section_off = section_layout(n_distinct)
            total = int(section_off[-1])
            kcodes = cp.empty(max(total, 1), dtype=cp.uint16)
            kcodes.data.memset_async(0xFF, kcodes.nbytes)  # PAD_CODE in every uint16
            kcounts = cp.zeros(max(total, 1), dtype=cp.uint16)
            for lo, hi, run_code, run_count, run_off in pieces:
                self._scatter_runs(
                    (-(-(hi - lo) // 256),), (256,),
                    (run_code, run_count, run_off, cp.asarray(start[lo:hi]), np.int64(hi - lo),
                     kcodes, kcounts),
                )
            return DeviceKmerTables(
                np.diff(offsets), windows, n_distinct, slot, start, section_off, kcodes[:total], kcounts[:total],
                alphabet,
            )

    def _piece_runs(self, codes: np.ndarray, offsets: np.ndarray, lo: int, hi: int, groups: cp.ndarray):
        """Sequences lo..hi: on the device their runs end to end (codes, counts) and each one's
        first run (``hi - lo + 1`` offsets); on the host their windows and run counts."""
        n_seq = hi - lo
        a, b = int(offsets[lo]), int(offsets[hi])
        local = offsets[lo : hi + 1] - a
        keys = cp.empty(max(b - a, 1), dtype=cp.int64)
        d_windows = cp.zeros(n_seq, dtype=cp.uint64)
        if b > a:
            self._window_keys(
                (-(-(b - a) // 256),), (256,),
                (cp.asarray(codes[a:b]), np.int64(b - a), cp.asarray(local), np.int64(n_seq), groups, keys, d_windows),
            )
            keys.sort()  # CuPy's thrust sort, shipped compiled; KEY_NONE last
        windows = d_windows.get().view(np.int64)
        wstart = np.concatenate(([0], np.cumsum(windows)[:-1])).astype(np.int64)
        d_wstart, d_win = cp.asarray(wstart), d_windows.view(cp.int64)  # the counts stay on the device
        d_nd = cp.empty(n_seq, dtype=cp.int32)
        grid = (-(-n_seq // 256),)
        null = np.uint64(0)  # no run_off / out_code / out_count: count only
        self._sequence_runs(grid, (256,), (keys, d_wstart, d_win, np.int64(n_seq), d_nd, null, null, null))
        nd = d_nd.get()
        run_off = np.concatenate(([0], np.cumsum(nd, dtype=np.int64)))
        run_code = cp.empty(max(int(run_off[-1]), 1), dtype=cp.uint16)
        run_count = cp.empty_like(run_code)
        d_run_off = cp.asarray(run_off)
        self._sequence_runs(
            grid, (256,), (keys, d_wstart, d_win, np.int64(n_seq), d_nd, d_run_off, run_code, run_count)
        )
        return run_code, run_count, d_run_off, windows, nd

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
            d_refs = cp.asarray(np.asarray(ref_ids, dtype=np.int64))  # typed on the host: no CuPy cast kernel
            d_ref_off = cp.asarray(np.asarray(ref_off, dtype=np.int64))

            def piece(lo: int, hi: int) -> None:
                best[lo:hi], best_d[lo:hi] = self._nearest_piece(
                    t, d_refs, d_ref_off, member_ids[lo:hi], member_node[lo:hi], cap
                )

            run_in_pieces(4.5 * tables.n_distinct[member_ids] + 160, piece, self.memory_limit)
        return best, best_d

    def kmer_distance_matrix(
        self, tables: KmerTables, ids: np.ndarray, group_off: np.ndarray, cap: float = MAX_KMER_DIST
    ) -> tuple[np.ndarray, np.ndarray]:
        """Condensed 6-mer distance matrices of many groups, and each group's offset in them."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        group_off = np.ascontiguousarray(group_off, dtype=np.int64)
        sizes, pairs, out, out_off = condensed_layout(group_off)
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
            run_in_pieces(cost, piece, self.memory_limit)
        return out, out_off

    @staticmethod
    def _on_device(tables: KmerTables) -> DeviceKmerTables:
        return tables if isinstance(tables, DeviceKmerTables) else DeviceKmerTables.upload(tables)

    def _packed(self, t: DeviceKmerTables, pos_seq: np.ndarray) -> tuple[cp.ndarray, cp.ndarray, cp.ndarray]:
        """Runs of ``pos_seq`` (length a multiple of 32; -1 = empty) in warp sections (see the
        kernel): the packed runs, the sections' offsets and pos_seq, on the device. The
        sections are laid out on the host (per-position arrays only)."""
        nd = np.where(pos_seq >= 0, t.n_distinct[np.maximum(pos_seq, 0)], 0)
        width = nd.reshape(-1, SECTION).max(axis=1).astype(np.int64)
        sec_off = np.concatenate(([0], np.cumsum(SECTION * width)))
        packed = cp.empty(max(int(sec_off[-1]), 1), dtype=cp.uint32)
        d_pos, d_off = cp.asarray(pos_seq), cp.asarray(sec_off)
        n_pos = len(pos_seq)
        self._repack(
            ((n_pos + 255) // 256,), (256,),
            (d_pos, np.int64(n_pos), d_off, t.d_start, t.d_n_distinct, t.d_kcodes, t.d_kcounts, packed),
        )
        return packed, d_off, d_pos

    def _nearest_piece(self, t, d_refs, d_ref_off, member_ids, member_node, cap):
        """One launch: members sorted by (node, run count), cut into per-node chunks of a block
        (the plan on the host: per-member arrays only)."""
        m = len(member_ids)
        mem = np.asarray(member_ids, dtype=np.int64)
        node = np.asarray(member_node, dtype=np.int64)
        order = np.argsort(node * 65536 + t.n_distinct[mem], kind="stable")
        seq_s, node_s = mem[order], node[order]
        node_first = np.concatenate(([0], np.flatnonzero(node_s[1:] != node_s[:-1]) + 1))
        node_size = np.diff(np.concatenate((node_first, [m])))
        n_chunks = (node_size + NEAREST_THREADS - 1) // NEAREST_THREADS
        chunk_first = np.cumsum(n_chunks) - n_chunks
        c = int(n_chunks.sum())
        chunk = np.arange(c, dtype=np.int64)
        owner = np.searchsorted(chunk_first, chunk, side="right") - 1
        chunk_lo = node_first[owner] + (chunk - chunk_first[owner]) * NEAREST_THREADS
        chunk_n = np.minimum(NEAREST_THREADS, node_first[owner] + node_size[owner] - chunk_lo)
        padded = (chunk_n + SECTION - 1) // SECTION * SECTION  # each chunk starts a section
        chunk_pos = np.cumsum(padded) - padded
        n_pos = int(chunk_pos[-1] + padded[-1])
        rank = np.arange(m, dtype=np.int64)
        of = np.searchsorted(chunk_lo, rank, side="right") - 1
        pos = chunk_pos[of] + rank - chunk_lo[of]
        pos_seq = np.full(n_pos, -1, dtype=np.int64)
        pos_seq[pos] = seq_s
        pos_out = np.full(n_pos, -1, dtype=np.int64)
        pos_out[pos] = order
        packed, sec_off, d_pos_seq = self._packed(t, pos_seq)
        best = cp.empty(m, dtype=cp.int32)
        best_d = cp.empty(m, dtype=cp.float64)
        self._nearest(
            (c,), (NEAREST_THREADS,),
            (packed, sec_off, cp.asarray(chunk_pos), cp.asarray(chunk_n.astype(np.int32)),
             cp.asarray(node_s[chunk_lo]), d_pos_seq, cp.asarray(pos_out),
             t.d_kcodes, t.d_kcounts, t.d_start, t.d_n_distinct, t.d_self_scores, t.d_lengths,
             d_refs, d_ref_off, np.float64(cap), t.d_lenfac, best, best_d),
            shared_mem=NEAREST_SHARED,
        )
        return best.get(), best_d.get()

    def _matrix_piece(self, t, ids: np.ndarray, group_off: np.ndarray, cap: float) -> np.ndarray:
        """One launch for the condensed matrices of these groups (host result)."""
        from msa.distances.condensed import condensed_rows  # local: (b) Numba: the GPU path imports it only here (docs/start-up.md, step 8)

        row_group, row_index, out_off = condensed_rows(group_off)
        n_rows = len(row_group)
        n_pos = -(-len(ids) // SECTION) * SECTION
        pos_seq = np.full(n_pos, -1, dtype=np.int64)
        pos_seq[: len(ids)] = ids
        packed, sec_off, d_pos_seq = self._packed(t, pos_seq)
        out = cp.empty(int(out_off[-1]), dtype=cp.float64)
        self._matrix(
            (min(n_rows, 8 * self.n_sm),), (MATRIX_THREADS,),
            (packed, sec_off, d_pos_seq, cp.asarray(group_off), cp.asarray(row_group), cp.asarray(row_index),
             np.int64(n_rows), cp.asarray(out_off), t.d_kcodes, t.d_kcounts, t.d_start, t.d_n_distinct,
             t.d_self_scores, t.d_lengths, np.float64(cap), t.d_lenfac, out),
            shared_mem=MATRIX_SHARED,
        )
        return out.get()
