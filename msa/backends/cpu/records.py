"""FASTA records written straight into a mapped output file, on every thread: the CPU oracle of
msa.backends.cuda.records (kernels/records.cu)."""
from __future__ import annotations

import numba
import numpy as np

from msa.jit import njit


@njit(cache=True, nogil=True, parallel=True)
def fill_records(
    out: np.ndarray, rec_off: np.ndarray, heads: np.ndarray, head_off: np.ndarray, template: np.ndarray,
    width: int, ids: np.ndarray, offsets: np.ndarray, columns: np.ndarray, letters: np.ndarray,
) -> None:
    """Record ``k`` at ``out[rec_off[k]:]``: its header ``heads[head_off[k]:head_off[k + 1]]``,
    then ``template`` (a row of gaps wrapped at ``width``) with sequence ``ids[k]``'s residues
    at their columns. Records in parallel: each thread touches its own pages of the output."""
    for k in numba.prange(len(ids)):
        at = rec_off[k]
        h = head_off[k + 1] - head_off[k]
        out[at : at + h] = heads[head_off[k] : head_off[k + 1]]
        base = at + h
        out[base : base + len(template)] = template
        s = ids[k]
        for p in range(offsets[s], offsets[s + 1]):
            c = columns[p]
            out[base + c + c // width] = letters[p]
