"""The libraries' pairwise alignments on the GPU, beside its CPU oracle msa.backends.cpu.library.

The pairs of a library (a piece of it: msa.refine.pair_library cuts it where the device's
memory asks) run as one level of merges of one-sequence profiles on the merge kernels, whose
maps are read on the host (msa.backends.cpu.library.batch_residues). The one-hot tables are
gathered on the device from its codes: 112 bytes a residue not built on the host and copied
over, ~0.9 GB for the 13,000 pairs of a 10^4 family's consistency.
"""
from __future__ import annotations

import cupy as cp
import numpy as np


class LibraryStage:
    """CudaBackend's ``pair_residues``; the merges are AlignStage's, the gathers SegmentsStage's."""

    def pair_residues(
        self, codes: cp.ndarray, offsets: np.ndarray, pairs: np.ndarray, matrix: np.ndarray, gaps: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One batch of merges of one-sequence profiles (profile_align), read off its maps on
        the host; see Backend."""
        from msa.backends.cpu.library import batch_residues  # local: (b) Numba: the GPU path imports it only here (docs/start-up.md, step 8)

        return batch_residues(self, codes, offsets, pairs, matrix, gaps)
