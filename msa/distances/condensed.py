"""The condensed pair order of every distance matrix (scipy's): pairs i < j, row by row.

One Numba-compatible helper each for the index of a pair and for the rows of
many groups' matrices laid end to end; Python, Numba and the CUDA launch plans
use them (the CUDA kernels write the index as a one-liner that points here).
"""
from __future__ import annotations

import numpy as np

from msa.jit import njit


@njit(cache=True, nogil=True, inline="always")
def condensed_index(n: int, i: int, j: int) -> int:
    """Position of pair (i, j), ``i < j``, in the condensed matrix of ``n`` items.

    Example:
        >>> [condensed_index(4, i, j) for i in range(4) for j in range(i + 1, 4)]
        [0, 1, 2, 3, 4, 5]
    """
    return n * i - i * (i + 1) // 2 + j - i - 1


@njit(cache=True, nogil=True)
def condensed_offsets(group_off: np.ndarray) -> np.ndarray:
    """Each group's offset in many condensed matrices laid end to end (``s (s - 1) / 2`` pairs a group)."""
    n_groups = len(group_off) - 1
    out_off = np.zeros(n_groups + 1, dtype=np.int64)
    for g in range(n_groups):
        s = group_off[g + 1] - group_off[g]
        out_off[g + 1] = out_off[g] + s * (s - 1) // 2
    return out_off


@njit(cache=True, nogil=True)
def condensed_rows(group_off: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group, row) work items of many groups' condensed matrices, and each group's output offset.

    Group g has ``s = group_off[g+1] - group_off[g]`` items, rows ``0 .. s-2`` and its
    matrix at ``out[out_off[g]:out_off[g+1]]``; row i holds pairs (i, i+1 .. s-1).
    """
    n_groups = len(group_off) - 1
    out_off = condensed_offsets(group_off)
    n_rows = 0
    for g in range(n_groups):
        n_rows += max(group_off[g + 1] - group_off[g] - 1, 0)
    row_group = np.empty(n_rows, dtype=np.int64)
    row_index = np.empty(n_rows, dtype=np.int64)
    k = 0
    for g in range(n_groups):
        s = group_off[g + 1] - group_off[g]
        for i in range(s - 1):
            row_group[k] = g
            row_index[k] = i
            k += 1
    return row_group, row_index, out_off


@njit(cache=True, nogil=True, inline="always")
def condensed_row(
    t: int, row_group: np.ndarray, row_index: np.ndarray, group_off: np.ndarray, out_off: np.ndarray
) -> tuple[int, int, int, int]:
    """Work item ``t`` of :func:`condensed_rows`: (row i, the group's first id position, its size s,
    and o, where ``out[o + j]`` is the group's pair (i, j) for ``i < j < s``)."""
    g = row_group[t]
    i = row_index[t]
    base = group_off[g]
    s = group_off[g + 1] - base
    return i, base, s, out_off[g] + condensed_index(s, i, i + 1) - (i + 1)
