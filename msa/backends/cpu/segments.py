"""Data movement between progressive levels on the CPU: the oracle of msa.backends.cuda.segments
(kernels/segments.cu). A thread per segment, as the GPU's gather."""
from __future__ import annotations

import numpy as np
from numba import prange

from msa._runtime.jit import njit
from msa.profile import N_COUNTS
from msa.seqdb import _ranges


@njit(cache=True, nogil=True, parallel=True)
def _copy_rows(src: np.ndarray, start: np.ndarray, dst: np.ndarray, widths: np.ndarray, out: np.ndarray) -> None:
    """Rows ``src[start[k]:start[k] + widths[k]]`` to ``out[dst[k]:...]`` for every segment k
    (a thread per segment, as segments.cu's gather on the GPU)."""
    for k in prange(len(widths)):
        for r in range(widths[k]):
            out[dst[k] + r] = src[start[k] + r]


@njit(cache=True, nogil=True, parallel=True)
def _one_hot_rows(codes: np.ndarray, start: np.ndarray, dst: np.ndarray, widths: np.ndarray, out: np.ndarray) -> None:
    """Leaf segments: ``out[dst[k] + r, codes[start[k] + r]] = 1`` (``out`` zeroed)."""
    for k in prange(len(widths)):
        for r in range(widths[k]):
            out[dst[k] + r, codes[start[k] + r]] = 1


def gather_profiles(
    parts: list, part: np.ndarray, start: np.ndarray, widths: np.ndarray, codes: np.ndarray
) -> np.ndarray:
    """Segments of profile rows (or one-hot leaves) end to end; see Backend."""
    widths = np.asarray(widths, dtype=np.int64)
    start = np.asarray(start, dtype=np.int64)
    off = np.concatenate(([0], np.cumsum(widths)))
    out = np.zeros((int(off[-1]), N_COUNTS), dtype=np.int32)
    for p in np.unique(part).tolist():
        pick = part == p
        at = (start[pick], off[:-1][pick], widths[pick])
        if p < 0:
            _one_hot_rows(np.asarray(codes, dtype=np.uint8), *at, out)
        else:
            _copy_rows(np.ascontiguousarray(parts[p], dtype=np.int32), *at, out)
    return out


def place_segments(
    targets: list, target: np.ndarray, start: np.ndarray, values: np.ndarray, maps: np.ndarray,
    parent: np.ndarray, widths: np.ndarray,
) -> None:
    """Scatter composed columns to their targets; see Backend."""
    off = np.concatenate(([0], np.cumsum(widths)))
    here = values[np.repeat(parent, widths) + maps]
    for t in np.unique(target).tolist():
        pick = target == t
        targets[t][_ranges(start[pick], widths[pick])] = here[_ranges(off[:-1][pick], widths[pick])]
