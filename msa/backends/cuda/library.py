"""The libraries' pairwise alignments on the GPU, beside its CPU oracle msa.backends.cpu.library.

The pairs of a library (a piece of it: msa.refine.pair_library cuts it where the device's
memory asks) run as one level of merges of one-sequence profiles on the merge kernels, whose
maps are read on the host (msa.backends.cpu.library.aligned_residues). The one-hot tables are
gathered on the device from its codes: 112 bytes a residue not built on the host and copied
over, ~0.9 GB for the 13,000 pairs of a 10^4 family's consistency.
"""
from __future__ import annotations

import cupy as cp
import numpy as np

from msa.profile import AlignBatch


class LibraryStage:
    """CudaBackend's ``pair_residues``; the merges are AlignStage's, the gathers SegmentsStage's."""

    def pair_residues(
        self, codes: cp.ndarray, offsets: np.ndarray, pairs: np.ndarray, matrix: np.ndarray, gaps: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One batch of merges of one-sequence profiles (profile_align), read off its maps on
        the host; see Backend."""
        from msa.backends.cpu.library import aligned_residues  # local: (b) Numba: the GPU path imports it only here (docs/start-up.md, step 8)

        lengths = np.diff(offsets)
        seqs = pairs.reshape(-1)
        col_off = np.concatenate(([0], np.cumsum(lengths[seqs]))).astype(np.int64)
        tables = self.gather_profiles([], np.full(len(seqs), -1), offsets[seqs], lengths[seqs], codes)
        result = self.profile_align(AlignBatch(
            tables, col_off, np.ones(len(seqs), dtype=np.int64), matrix, gaps, parents=False,
        ))
        del tables
        maps = self.to_host(result.maps).astype(np.int64)
        return aligned_residues(maps, col_off, np.ascontiguousarray(offsets[seqs], dtype=np.int64))
