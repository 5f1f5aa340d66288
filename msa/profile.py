"""Profiles as integer count tables, and the flat batch layout a merge kernel takes.

A profile of N sequences and W columns is an ``(W, N_COUNTS)`` int32 table: per
column the count of each of the 24 residue codes, then the typed gap counts of
FAMSA (src/core/profile.h, ``CProfile``'s counters): internal gap opens and extensions, terminal gap opens and
extensions. The score table S that FAMSA keeps beside the counts is a linear
function of them, so kernels derive it on the fly instead of storing it.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

import numpy as np

from msa.alphabet import N_CODES
from msa.params import GapCosts

#: Column layout of a profile table: residue codes 0..23, then the four gap types.
GO, GE, TGO, TGE = N_CODES, N_CODES + 1, N_CODES + 2, N_CODES + 3
N_COUNTS = N_CODES + 4


@dataclass
class AlignBatch:
    """Independent merges laid out as flat arrays, the form a GPU kernel takes.

    Merge ``k`` aligns profile ``2k`` (FAMSA's first profile) with ``2k+1``.
    Profile ``p`` is ``counts[col_offsets[p]:col_offsets[p+1]]`` over
    ``n_seqs[p]`` sequences. ``gaps`` is one gap vector (:func:`gap_vector`) for
    every merge, or one row per merge (merges of families of different sizes,
    whose gap costs are rescaled differently, share a batch); backends read
    :meth:`gap_rows`. ``parents``: whether the parent profiles are wanted (``msa add``
    reads only the maps; the GPU then builds none).
    """

    counts: np.ndarray  # int32 (total columns, N_COUNTS), host or the backend's device array
    col_offsets: np.ndarray  # int64 (2 * n_merges + 1,)
    n_seqs: np.ndarray  # int64 (2 * n_merges,)
    matrix: np.ndarray  # int64 (24, 24)
    gaps: np.ndarray  # int64 [open, extend, term_open, term_extend], (4,) or (n_merges, 4)
    parents: bool = True
    #: Cell bonuses (msa.consistency), ``(values, offsets)``: merge ``k``'s table of its first
    #: child's columns by its second's is ``values[offsets[k]:offsets[k + 1]]`` (empty: none),
    #: added to each cell's column score (dp_path on the CPU, cell_scores on the GPU).
    bonus: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def n_merges(self) -> int:
        return len(self.n_seqs) // 2

    def gap_rows(self) -> np.ndarray:
        """The gap vector of every merge: int64 ``(n_merges, 4)``, C-contiguous."""
        return merge_gap_rows(self.gaps, self.n_merges)


@dataclass
class AlignResult:
    """What a batch of merges gives back.

    ``maps[c]`` is the parent column of input column ``c`` (same layout as
    ``AlignBatch.counts``); parent ``k`` is
    ``counts[col_offsets[k]:col_offsets[k+1]]`` (None where the batch wanted no parents).
    """

    maps: np.ndarray  # integer (total input columns,): int64 on the CPU, int32 on the GPU; in ``Backend.xp``
    counts: np.ndarray | None  # int32 (total parent columns, N_COUNTS), likewise
    col_offsets: np.ndarray  # int64 (n_merges + 1,)


def gap_vector(gaps: GapCosts) -> np.ndarray:
    """The four gap penalties in the order kernels read them."""
    return np.array([gaps.open, gaps.extend, gaps.term_open, gaps.term_extend], dtype=np.int64)


def merge_gap_rows(gaps: np.ndarray, n_merges: int) -> np.ndarray:
    """``gaps`` (one gap vector, or one per merge) as one row per merge, int64 ``(n_merges, 4)``.

    >>> merge_gap_rows(np.array([-3, -1, -2, -2]), 2).tolist()
    [[-3, -1, -2, -2], [-3, -1, -2, -2]]
    """
    g = np.asarray(gaps, dtype=np.int64)
    if g.shape == (4,):
        return np.ascontiguousarray(np.broadcast_to(g, (n_merges, 4)))
    if g.shape != (n_merges, 4):
        raise ValueError(f"gaps must be (4,) or ({n_merges}, 4) for {n_merges} merges, got {g.shape}")
    return np.ascontiguousarray(g)


def sequence_counts(codes: np.ndarray, xp: ModuleType = np) -> np.ndarray:
    """Profile tables of ungapped sequences laid end to end: one residue per column.

    A one-sequence profile has no gaps, so its table is one-hot rows of codes.
    ``xp`` is the array module ``codes`` lives in (a backend's, so GPU leaves are built on the GPU).
    """
    out = xp.zeros((len(codes), N_COUNTS), dtype=xp.int32)
    out[xp.arange(len(codes)), codes] = 1
    return out


def gap_counts_from_rows(gapped: np.ndarray) -> np.ndarray:
    """Typed gap counts (GO, GE, TGO, TGE per column) recomputed from a boolean gap matrix.

    ``gapped`` is ``(n, W)``, True where a row has a gap. This is FAMSA's
    ``CalculateCounters`` definition, the reference the incremental counts of a
    merge must agree with (a check, not a hot path).
    """
    n, w = gapped.shape
    out = np.zeros((w, 4), dtype=np.int64)
    if w == 0:
        return out
    res = ~gapped
    has_res = res.any(axis=1)
    first = np.where(has_res, res.argmax(axis=1), w)
    last = np.where(has_res, w - 1 - res[:, ::-1].argmax(axis=1), -1)
    col = np.arange(w)[None, :]
    lead = gapped & (col < first[:, None])
    trail = gapped & (col > last[:, None])
    inner = gapped & ~lead & ~trail
    prev_gap = np.zeros_like(gapped)
    prev_gap[:, 1:] = gapped[:, :-1]
    is_open = ~prev_gap
    # A trailing run opens in the column after the last residue; a leading run at column 0.
    out[:, 0] = (inner & is_open).sum(axis=0)
    out[:, 1] = (inner & ~is_open).sum(axis=0)
    term = lead | trail
    out[:, 2] = (term & is_open).sum(axis=0)
    out[:, 3] = (term & ~is_open).sum(axis=0)
    return out


def block_counts(
    codes: np.ndarray, offsets: np.ndarray, columns: np.ndarray, width: int, weights: np.ndarray | None = None
) -> np.ndarray:
    """The profile table of an existing alignment (``msa merge``/``msa add``), from its residues alone.

    Sequence ``i``'s residue codes ``codes[offsets[i]:offsets[i+1]]`` sit at the
    (increasing) ``columns`` of the same layout, in a ``width``-column block; every
    sequence has a residue. Residue counts per column, and FAMSA's typed gap counts
    as :func:`gap_counts_from_rows` defines them (a leading run opens at column 0,
    the others after a residue; runs before the first or after the last residue are
    terminal), built from the runs between residues without a row matrix, so
    ``O(residues + width)``. The same table a progressive merge builds for those rows;
    with ``weights`` (integers, one per sequence) each sequence counts that many times,
    as in a weighted progressive merge (msa.tree.weights).
    """
    columns = np.asarray(columns, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    seq_w = None if weights is None else np.asarray(weights, dtype=np.float64)  # bincount's weights: exact below 2^53
    res_w = None if seq_w is None else np.repeat(seq_w, np.diff(offsets))

    def pick(w: np.ndarray | None, at) -> np.ndarray | None:
        return None if w is None else w[at]

    out = np.bincount(columns * N_COUNTS + codes, weights=res_w, minlength=width * N_COUNTS).reshape(width, N_COUNTS)
    first, last = columns[offsets[:-1]], columns[offsets[1:] - 1]
    # Inner gap runs: between residues of one row two or more columns apart (mostly, neighbours
    # are next to each other, so the runs are found first and only they are gathered).
    gapped = columns[1:] - columns[:-1] > 1
    gapped[offsets[1:-1] - 1] = False  # a row's last residue and the next row's first
    at = np.flatnonzero(gapped)
    a, b = columns[at], columns[at + 1]
    run_w = pick(res_w, at)

    def count(at: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        return np.bincount(at, weights=w, minlength=width + 1)[:width]

    def runs(lo: np.ndarray, hi: np.ndarray, w: np.ndarray | None) -> np.ndarray:  # columns lo..hi-1 of each run
        ok = hi > lo
        return np.cumsum(np.bincount(lo[ok], weights=pick(w, ok), minlength=width + 1)
                         - np.bincount(hi[ok], weights=pick(w, ok), minlength=width + 1))[:width]

    lead, trail = first > 0, last < width - 1  # rows with a leading / a trailing gap run
    out[:, GO] = count(a + 1, run_w)
    out[:, GE] = runs(a + 2, b, run_w)
    out[:, TGO] = count(np.concatenate((np.zeros(int(lead.sum()), dtype=np.int64), last[trail] + 1)),
                        None if seq_w is None else np.concatenate((seq_w[lead], seq_w[trail])))
    out[:, TGE] = runs(np.concatenate((np.ones(len(first), np.int64), last + 2)),
                       np.concatenate((first, np.full(len(last), width, np.int64))),
                       None if seq_w is None else np.concatenate((seq_w, seq_w)))
    return out.astype(np.int32)
