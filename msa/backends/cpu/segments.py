"""Data movement between progressive levels on the CPU: the oracle of msa.backends.cuda.segments
(kernels/segments.cu). A thread per segment, as the GPU's gather; small calls on the calling thread.

Each copy has a serial and a parallel build (separate functions: Numba's cache keys on the
function, not on ``parallel``). Deep trees are mostly levels of one or two merges whose
segments hold a few hundred rows; waking the thread pool for them cost ~40 us a call
(PF00037.10000, 3,113 levels: 0.28 s of the CPU's 0.63 s progressive stage on 2 cores),
more than the copy.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from msa.jit import njit
from msa.profile import N_COUNTS

#: Calls moving fewer rows (gathers) or columns (placements) than this run on the calling thread.
SERIAL_ROWS = 1 << 14


@njit(cache=True, nogil=True)
def _copy_segment(src: np.ndarray, s: int, d: int, w: int, out: np.ndarray) -> None:
    for r in range(w):
        for c in range(N_COUNTS):
            out[d + r, c] = src[s + r, c]


@njit(cache=True, nogil=True)
def _one_hot_segment(codes: np.ndarray, s: int, d: int, w: int, value: int, out: np.ndarray) -> None:
    for r in range(w):
        out[d + r, codes[s + r]] = value


@njit(cache=True, nogil=True, parallel=True)
def _copy_rows(src: np.ndarray, start: np.ndarray, dst: np.ndarray, widths: np.ndarray, out: np.ndarray) -> None:
    """Rows ``src[start[k]:start[k] + widths[k]]`` to ``out[dst[k]:...]`` for every segment k."""
    for k in prange(len(widths)):
        _copy_segment(src, start[k], dst[k], widths[k], out)


@njit(cache=True, nogil=True)
def _copy_rows_serial(src: np.ndarray, start: np.ndarray, dst: np.ndarray, widths: np.ndarray, out: np.ndarray) -> None:
    """:func:`_copy_rows` on the calling thread."""
    for k in range(len(widths)):
        _copy_segment(src, start[k], dst[k], widths[k], out)


@njit(cache=True, nogil=True, parallel=True)
def _one_hot_rows(
    codes: np.ndarray, start: np.ndarray, dst: np.ndarray, widths: np.ndarray, values: np.ndarray, out: np.ndarray
) -> None:
    """Leaf segments: ``out[dst[k] + r, codes[start[k] + r]] = values[k]`` (``out`` zeroed)."""
    for k in prange(len(widths)):
        _one_hot_segment(codes, start[k], dst[k], widths[k], values[k], out)


@njit(cache=True, nogil=True)
def _one_hot_rows_serial(
    codes: np.ndarray, start: np.ndarray, dst: np.ndarray, widths: np.ndarray, values: np.ndarray, out: np.ndarray
) -> None:
    """:func:`_one_hot_rows` on the calling thread."""
    for k in range(len(widths)):
        _one_hot_segment(codes, start[k], dst[k], widths[k], values[k], out)


@njit(cache=True, nogil=True)
def _place_segment(target: np.ndarray, s: int, values: np.ndarray, p: int, maps: np.ndarray, o: int, w: int) -> None:
    for c in range(w):
        target[s + c] = values[p + maps[o + c]]


@njit(cache=True, nogil=True, parallel=True)
def _place(target: np.ndarray, start: np.ndarray, values: np.ndarray, parent: np.ndarray, maps: np.ndarray,
           off: np.ndarray, widths: np.ndarray) -> None:
    """``target[start[k] + c] = values[parent[k] + maps[off[k] + c]]`` for every segment k."""
    for k in prange(len(widths)):
        _place_segment(target, start[k], values, parent[k], maps, off[k], widths[k])


@njit(cache=True, nogil=True)
def _place_serial(target: np.ndarray, start: np.ndarray, values: np.ndarray, parent: np.ndarray, maps: np.ndarray,
                  off: np.ndarray, widths: np.ndarray) -> None:
    """:func:`_place` on the calling thread."""
    for k in range(len(widths)):
        _place_segment(target, start[k], values, parent[k], maps, off[k], widths[k])


def gather_profiles(
    parts: list, part: np.ndarray, start: np.ndarray, widths: np.ndarray, codes: np.ndarray,
    values: np.ndarray | None = None,
) -> np.ndarray:
    """Segments of profile rows (or one-hot leaves, of their ``values``: 1 by default) end to end;
    see Backend."""
    widths = np.asarray(widths, dtype=np.int64)
    off = np.zeros(len(widths) + 1, dtype=np.int64)
    np.cumsum(widths, out=off[1:])
    out = np.zeros((int(off[-1]), N_COUNTS), dtype=np.int32)
    serial = off[-1] < SERIAL_ROWS
    seg = (np.asarray(start, dtype=np.int64), off[:-1], widths)
    for p, pick in _by_label(np.asarray(part)):
        at = seg if pick is None else tuple(a[pick] for a in seg)
        if p < 0:
            one = np.ones(len(widths), dtype=np.int32) if values is None else np.asarray(values, dtype=np.int32)
            (_one_hot_rows_serial if serial else _one_hot_rows)(
                np.asarray(codes, dtype=np.uint8), *at, one if pick is None else one[pick], out)
        else:
            (_copy_rows_serial if serial else _copy_rows)(np.ascontiguousarray(parts[p], dtype=np.int32), *at, out)
    return out


def place_segments(
    targets: list, target: np.ndarray, start: np.ndarray, values: np.ndarray, maps: np.ndarray,
    parent: np.ndarray, widths: np.ndarray,
) -> None:
    """Scatter composed columns to their targets; see Backend."""
    widths = np.asarray(widths, dtype=np.int64)
    off = np.zeros(len(widths) + 1, dtype=np.int64)
    np.cumsum(widths, out=off[1:])
    place = _place_serial if off[-1] < SERIAL_ROWS else _place
    seg = (np.asarray(start, dtype=np.int64), np.asarray(parent, dtype=np.int64), off[:-1], widths)
    for t, pick in _by_label(np.asarray(target)):
        s, p, o, w = seg if pick is None else (a[pick] for a in seg)
        place(targets[t], s, values, p, maps, o, w)


def _by_label(labels: np.ndarray) -> list[tuple[int, np.ndarray | None]]:
    """Each distinct label with the mask of its entries (None where every entry has it: a
    level's segments mostly come from one place)."""
    if len(labels) == 0:
        return []
    if (labels == labels[0]).all():
        return [(int(labels[0]), None)]
    return [(int(label), labels == label) for label in np.unique(labels).tolist()]
