"""6-mer stage on the GPU (kernels/kmer_counts.cu), beside its CPU oracle msa.backends.cpu.kmers.

The 6-mer struct arrays are built and kept on the device; only per-sequence
arrays (O(n)) and each call's small results (assignments, reference x
reference distances) come back to the host.
"""
from __future__ import annotations

import cupy as cp
import numpy as np

from msa import kernels
from msa.backends.cpu.kmers import build_kmer_tables
from msa.backends.cuda.memory import DeviceStage, condensed_layout, run_in_pieces
from msa.distances.condensed import condensed_rows
from msa.distances.kmers import MAX_COUNT, MAX_KMER_DIST, N_KMERS, PAD_CODE, SECTION, KmerAlphabet, KmerTables

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
        self.d_lenfac = cp.asarray(alphabet.lenfac, dtype=cp.float64)
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
        self._repack = module.get_function("repack")
        self._nearest = module.get_function("nearest_reference")
        self._nearest.max_dynamic_shared_size_bytes = NEAREST_SHARED
        self._matrix = module.get_function("kmer_distance_matrix")
        self._matrix.max_dynamic_shared_size_bytes = MATRIX_SHARED

    def kmer_tables(self, codes: np.ndarray, offsets: np.ndarray, alphabet: KmerAlphabet) -> DeviceKmerTables:
        """6-mer struct arrays built on the device (layout in msa.distances.kmers; equal to the CPU's)."""
        codes = np.ascontiguousarray(codes, dtype=np.uint8)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        n = len(offsets) - 1
        if n == 0:
            return DeviceKmerTables.upload(build_kmer_tables(codes, offsets, alphabet))
        parts: list[tuple[cp.ndarray, ...]] = []

        with cp.cuda.Device(self.device):
            groups = cp.asarray(alphabet.groups)

            def build(lo: int, hi: int) -> None:
                a, b = offsets[lo], offsets[hi]
                parts.append(_sorted_runs(codes[a:b], offsets[lo : hi + 1] - a, lo, groups))

            run_in_pieces(np.diff(offsets) * BUILD_BYTES_PER_RESIDUE + 64, build, self.memory_limit)
            run_seq, run_code, run_count, windows = (cp.concatenate(p) for p in zip(*parts))
            return _interleave(n, run_seq, run_code, run_count, windows, np.diff(offsets), alphabet)

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
             d_refs, d_ref_off, np.float64(cap), t.d_lenfac, best, best_d),
            shared_mem=NEAREST_SHARED,
        )
        return best.get(), best_d.get()

    def _matrix_piece(self, t, ids: np.ndarray, group_off: np.ndarray, cap: float) -> np.ndarray:
        """One launch for the condensed matrices of these groups (host result)."""
        row_group, row_index, out_off = condensed_rows(group_off)
        n_rows = len(row_group)
        n_pos = -(-len(ids) // SECTION) * SECTION
        pos_seq = cp.full(n_pos, -1, dtype=cp.int64)
        pos_seq[: len(ids)] = cp.asarray(ids)
        packed, sec_off = self._packed(t, pos_seq)
        out = cp.empty(int(out_off[-1]), dtype=cp.float64)
        self._matrix(
            (min(n_rows, 8 * self.n_sm),), (MATRIX_THREADS,),
            (packed, sec_off, pos_seq, cp.asarray(group_off), cp.asarray(row_group), cp.asarray(row_index),
             np.int64(n_rows), cp.asarray(out_off), t.d_kcodes, t.d_kcounts, t.d_start, t.d_n_distinct,
             t.d_self_scores, t.d_lengths, np.float64(cap), t.d_lenfac, out),
            shared_mem=MATRIX_SHARED,
        )
        return out.get()


def _sorted_runs(codes: np.ndarray, offsets: np.ndarray, seq0: int, groups: cp.ndarray) -> tuple[cp.ndarray, ...]:
    """Sorted 6-mer runs of some sequences (``groups``: the alphabet's group table, on the device):
    (sequence id, code, count) per run, windows per sequence."""
    n = len(offsets) - 1
    group = groups[cp.asarray(codes)]
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


def _interleave(
    n, run_seq, run_code, run_count, windows, lengths: np.ndarray, alphabet: KmerAlphabet
) -> DeviceKmerTables:
    """Rank sequences by run count, pad sections and scatter the runs (msa.distances.kmers layout)."""
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
        lengths, windows.get(), n_distinct.get(), slot.get(), start.get(), section_off.get(), kcodes, kcounts,
        alphabet,
    )
