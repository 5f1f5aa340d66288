"""CPU backend: NumPy plus Numba kernels, the oracle for every GPU kernel.

One module per stage, each beside its CUDA counterpart of the same name in
:mod:`msa.backends.cuda`: ``kmers`` (6-mer tables and distances), ``lcs``
(FAMSA's LCS distance, the nearest-reference searches and Prim's MST), ``sw``
(Smith-Waterman distances), ``align`` (the progressive DP), ``segments`` (profile rows
between progressive levels) and ``records`` (FASTA records into the output file).
"""
from __future__ import annotations

import functools
from typing import Callable

import numba
import numpy as np

from msa.backends.cpu import align as align_module
from msa.backends.cpu import forest, kmers, lcs, library, records, segments, sw
from msa.backends.cpu.align import align_batch
from msa.consistency import TopLibrary
from msa.distances.kmers import MAX_KMER_DIST, KmerAlphabet, KmerTables
from msa.interrupts import check
from msa.jit import njit
from msa.params import GapCosts
from msa.profile import N_COUNTS, AlignBatch, AlignResult
from msa.seqops import take_ranges
from msa.tree import guide_tree, linkage
from msa.tree import weights as tree_weights


@njit(cache=True, nogil=True)
def _first_compiled(x: np.ndarray) -> int:
    return x.size


#: msa add (profile_slots) puts at most about this many bytes of repeated profile tables in
#: one batch of merges.
ADD_BATCH_BYTES = 1 << 28


def first_compiled_call() -> None:
    """A run's first compiled call, made early (msa._runtime.startup): it starts Numba's runtime and
    threads, and where the call must compile, loads Numba's typing and lowering registries."""
    _first_compiled(np.zeros(1, dtype=np.int64))


def stage_functions() -> list:
    """The compiled functions a small run calls after its guide tree's distances, in about the
    order it calls them: the tree's linkage, the sequences' weights, the consistency library's
    pairwise alignments, the progressive stage (one call:
    msa.backends.cpu.forest), the records. msa._runtime.startup loads them on its background thread
    while the main thread de-duplicates the input and computes the distances, which load their own
    functions."""
    return [
        linkage.batch_linkage, linkage.graft, linkage._postorder, linkage._renumber, guide_tree.node_levels,
        tree_weights._clustalw, library.align_pairs, library.closed_up, forest.align_forest, records.fill_records,
    ]


class CpuBackend:
    """Runs every stage on the CPU cores (Numba threads, set by --threads)."""

    name = "cpu"
    #: Prim only past exact_tree_max: below it the condensed matrix is faster on the CPU.
    prim_every_group = False
    #: ~1.3 s for 10^6 pairs of ~210 residues on 2 cores: the calls between checkpoints.
    lcs_pairs_per_call = 1 << 20
    xp = np  # profile tables stay NumPy arrays
    # Stage owners attach their operations here as methods; see msa/backends/__init__.py.

    @staticmethod
    def to_host(a: np.ndarray) -> np.ndarray:
        """Already on the host: no copy."""
        return a

    #: FASTA records straight into a mapped output file, on every thread; see Backend.
    fill_records = staticmethod(records.fill_records)
    #: A level's consistency bonuses into its tables (msa.consistency.LevelBonuses); see Backend.
    add_bonuses = staticmethod(forest.add_bonuses)
    #: A level's walk of the consistency samples' columns (msa.consistency.LevelBonuses); see Backend.
    walk_columns = staticmethod(forest.walk_columns)

    def profile_slots(
        self, profile: np.ndarray, n_profile: int, codes: np.ndarray, offsets: np.ndarray, matrix: np.ndarray,
        gaps: np.ndarray, advance: Callable[[int], None] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """msa add's merges, every sequence against one profile; see Backend. Batches of
        merges of the profile (repeated) with a sequence each, aligned by profile_align as any
        level's merges and read off the maps (residue_slots); ADD_BATCH_BYTES bounds the
        repeated tables."""
        offsets = np.asarray(offsets, dtype=np.int64)
        lengths = np.diff(offsets)
        w, m = len(profile), len(lengths)
        slot = np.empty(int(offsets[-1]), dtype=np.int64)
        hit = np.empty(int(offsets[-1]), dtype=bool)
        per_batch = max(1, ADD_BATCH_BYTES // max(1, w * N_COUNTS * 4))
        for lo in range(0, m, per_batch):
            hi = min(m, lo + per_batch)
            n = hi - lo
            start = np.zeros(2 * n, dtype=np.int64)
            start[1::2] = offsets[lo:hi]
            widths = np.zeros(2 * n, dtype=np.int64)
            widths[0::2], widths[1::2] = w, lengths[lo:hi]
            gathered = self.gather_profiles([profile], np.tile(np.array([0, -1]), n), start, widths, codes)
            col_offsets = np.concatenate(([0], np.cumsum(widths)))
            n_seqs = np.tile(np.array([n_profile, 1], dtype=np.int64), n)
            result = self.profile_align(AlignBatch(gathered, col_offsets, n_seqs, matrix, gaps, parents=False))
            seg = slice(int(offsets[lo]), int(offsets[hi]))
            slot[seg], hit[seg] = self.residue_slots(result.maps, col_offsets, w)
            if advance is not None:
                advance(n)
        return slot, hit

    @staticmethod
    def residue_slots(maps: np.ndarray, col_offsets: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
        """profile_slots' reading of a batch whose merge k aligned the profile of ``width``
        columns with sequence k (inputs laid out by ``col_offsets``, as in AlignBatch): for every
        residue of the sequences, how many profile columns map left of its parent column and
        whether one maps to it. Each merge's maps are made one rising sequence over the batch
        (merge k's plus k times a stride above any parent width), so one searchsorted finds
        every residue's slot."""
        col_offsets = np.asarray(col_offsets, dtype=np.int64)
        lengths = col_offsets[2::2] - col_offsets[1:-1:2]
        m = len(lengths)
        stride = width + int(lengths.max(initial=0)) + 1
        prof = take_ranges(maps, col_offsets[0:-1:2], np.full(m, width, dtype=np.int64)).astype(np.int64)
        prof += np.repeat(np.arange(m, dtype=np.int64) * stride, width)
        merge = np.repeat(np.arange(m, dtype=np.int64), lengths)
        res = take_ranges(maps, col_offsets[1:-1:2], lengths).astype(np.int64) + merge * stride
        at = np.searchsorted(prof, res)
        hit = prof[np.minimum(at, max(len(prof) - 1, 0))] == res if len(prof) else np.zeros(len(res), dtype=bool)
        return at - merge * width, hit

    @staticmethod
    def level_cuts(kid_widths: np.ndarray) -> np.ndarray:
        """One piece: host memory holds what a level gathers; see Backend."""
        return np.array([0, len(kid_widths) // 2], dtype=np.int64)

    #: Data movement between levels (msa.backends.cpu.segments); see Backend.
    gather_profiles = staticmethod(segments.gather_profiles)
    place_segments = staticmethod(segments.place_segments)
    #: The libraries' pairwise alignments, straight from the codes (msa.backends.cpu.library); see Backend.
    pair_residues = staticmethod(library.pair_residues)

    @staticmethod
    def align_forest(
        codes: np.ndarray, offsets: np.ndarray, weights: np.ndarray, children: np.ndarray, levels: np.ndarray,
        gaps: np.ndarray, matrix: np.ndarray, advance: Callable[[int], None], library: tuple | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The progressive stage of a forest in one compiled call (msa.backends.cpu.forest); see
        Backend. Its arrays are passed writable and C-ordered, so one compiled entry serves
        every call (a family's gap rows are a read-only broadcast)."""
        n = len(offsets) - 1
        order = np.argsort(levels, kind="stable")
        bounds = np.concatenate(([0], np.flatnonzero(np.diff(levels[order])) + 1, [len(order)])).astype(np.int64)
        own = functools.partial(np.require, requirements=("C", "W"))
        return forest.run(
            own(codes, np.uint8), own(offsets, np.int64), own(weights, np.int64), own(children, np.int64), order + n,
            bounds, own(gaps, np.int64), own(matrix, np.int64), align_module.SERIAL_CELLS,
            TopLibrary.empty(len(children)).arrays if library is None else library, advance,
        )

    def profile_align(self, batch: AlignBatch) -> AlignResult:
        """Align every merge of a level batch (Numba, one merge per thread). The parents come
        out of the same loop as the maps, so they are dropped, not skipped, if not wanted."""
        maps, counts, offsets = align_batch(
            batch.counts, batch.col_offsets, batch.n_seqs, batch.matrix, batch.gap_rows(), batch.bonus
        )
        return AlignResult(maps, counts if batch.parents else None, offsets)

    # ---- guide-tree stage
    def kmer_tables(self, codes: np.ndarray, offsets: np.ndarray, alphabet: KmerAlphabet) -> KmerTables:
        """6-mer struct arrays of every sequence (layout in msa.distances.kmers)."""
        return kmers.build_kmer_tables(codes, offsets, alphabet)

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
        return kmers.nearest_reference(
            tables.kcodes, tables.kcounts, tables.start, tables.n_distinct, tables.self_scores,
            tables.lengths, _i64(ref_ids), _i64(ref_off), _i64(member_ids), _i64(member_node),
            float(cap), tables.alphabet.lenfac, numba.get_num_threads(),
        )

    def kmer_distance_matrix(
        self, tables: KmerTables, ids: np.ndarray, group_off: np.ndarray, cap: float = MAX_KMER_DIST
    ) -> tuple[np.ndarray, np.ndarray]:
        """Condensed 6-mer distance matrices of many groups, and each group's offset in them."""
        return kmers.kmer_distance_matrix(
            tables.kcodes, tables.kcounts, tables.start, tables.n_distinct, tables.self_scores,
            tables.lengths, _i64(ids), _i64(group_off), float(cap), tables.alphabet.lenfac,
            numba.get_num_threads(),
        )

    def lcs_distance_matrix(
        self, codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Condensed FAMSA indel075_div_lcs matrices of many groups, and their offsets."""
        return lcs.lcs_distance_matrix(
            np.ascontiguousarray(codes, dtype=np.uint8), _i64(offsets), _i64(ids), _i64(group_off),
            numba.get_num_threads(),
        )

    def sw_distance_matrix(
        self, codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray,
        matrix: np.ndarray, gaps: GapCosts,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Condensed Smith-Waterman score distances of many groups (msa.backends.cpu.sw), and their offsets.

        ``matrix``: the 24x24 int64 fixed-point table; ``gaps``: its open/extend costs (<= 0).
        """
        return sw.sw_distance_matrix(
            np.ascontiguousarray(codes, dtype=np.uint8), _i64(offsets), _i64(ids), _i64(group_off),
            np.ascontiguousarray(matrix, dtype=np.int64), int(gaps.open), int(gaps.extend),
            numba.get_num_threads(),
        )

    def lcs_nearest_reference(
        self,
        codes: np.ndarray,
        offsets: np.ndarray,
        ref_ids: np.ndarray,
        ref_off: np.ndarray,
        member_ids: np.ndarray,
        member_node: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Nearest reference by LCS distance, its distance, and each node's cluster-link matrix."""
        return lcs.lcs_nearest_reference(
            np.ascontiguousarray(codes, dtype=np.uint8), _i64(offsets), _i64(ref_ids), _i64(ref_off),
            _i64(member_ids), _i64(member_node), numba.get_num_threads(),
        )

    def lcs_nearest_sample(
        self,
        codes: np.ndarray,
        offsets: np.ndarray,
        ref_ids: np.ndarray,
        ref_off: np.ndarray,
        member_ids: np.ndarray,
        member_node: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Nearest reference by LCS distance and its distance, without link matrices (many references)."""
        return lcs.lcs_nearest_sample(
            np.ascontiguousarray(codes, dtype=np.uint8), _i64(offsets), _i64(ref_ids), _i64(ref_off),
            _i64(member_ids), _i64(member_node), numba.get_num_threads(),
        )

    def lcs_prim_msts(
        self, codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Minimum spanning trees of many groups under LCS distances, rows computed on the fly
        (group g's edges at rows group_off[g] - g), one group at a time on every core."""
        codes, offsets, ids = np.ascontiguousarray(codes, dtype=np.uint8), _i64(offsets), _i64(ids)
        parts = [_prim_mst(codes, offsets, ids[lo:hi]) for lo, hi in zip(group_off[:-1], group_off[1:])]
        if not parts:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0)
        return tuple(np.concatenate(column) for column in zip(*parts))  # type: ignore[return-value]


#: Work (vertices left x residues x 64-bit words of the joining vertex) of one call of Prim's
#: steps: about 0.3 s on the 2-core dev machine, shared; a checkpoint of msa.interrupts between
#: calls, so a large exact tree (up to MST_TREE_MAX sequences) stops within a second.
PRIM_CALL_WORK = 1 << 30


def _prim_mst(codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """lcs.lcs_prim_mst of one group; a large one a slice of steps at a time (lcs.lcs_prim_steps)."""
    s, threads = len(ids), numba.get_num_threads()
    length = int((offsets[ids + 1] - offsets[ids]).mean()) if s else 0
    per_call = max(1, PRIM_CALL_WORK // max(1, s * length * ((length + 63) // 64)))
    if per_call >= s - 1:
        return lcs.lcs_prim_mst(codes, offsets, ids, threads)
    in_tree, best, via = np.zeros(s, dtype=np.bool_), np.full(s, np.inf), np.zeros(s, dtype=np.int64)
    in_tree[0] = True
    edges = np.empty(s - 1, dtype=np.int64), np.empty(s - 1, dtype=np.int64), np.empty(s - 1)
    for first in range(0, s - 1, per_call):
        check()
        lcs.lcs_prim_steps(codes, offsets, ids, threads, in_tree, best, via, *edges, first, min(s - 1, first + per_call))
    return edges


def _i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)
