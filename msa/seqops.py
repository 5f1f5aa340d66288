"""Compiled whole-array operations on sequences laid end to end (``SeqDB``'s layout).

At 10^6 sequences x 300 residues the NumPy forms of these built index arrays of
8 bytes a residue (2.4 GB) and made several passes over them: de-duplication
took 6.2 s and each gather of a subset 1.2-1.3 s on the H100 machine's host.
Here each is one pass, over all threads. :mod:`msa.seqdb` imports this module
only when it needs it, so reading an input does not wait for Numba. :func:`cost_bounds` cuts
such work into runs of about equal cost.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from msa.jit import njit

#: The multiplier of the polynomial sequence hash (FNV-1a 64's prime).
HASH_PRIME = 1099511628211


@njit(cache=True, nogil=True, parallel=True)
def hash_sequences(residues: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``sum((residues[k] + 1) * HASH_PRIME**j)`` over each sequence's residues (``j`` the
    position within it), modulo 2**64: equal sequences hash equal, and a sequence differs
    from its own prefix or any shorter sequence in practice."""
    n = len(offsets) - 1
    out = np.zeros(n, dtype=np.uint64)
    prime = np.uint64(HASH_PRIME)
    one = np.uint64(1)
    for i in prange(n):
        acc = np.uint64(0)
        power = np.uint64(1)
        for k in range(offsets[i], offsets[i + 1]):
            acc += (np.uint64(residues[k]) + one) * power
            power *= prime
        out[i] = acc
    return out


@njit(cache=True, nogil=True, parallel=True)
def take_ranges(src: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``src[starts[i]:starts[i]+lengths[i]]`` for every ``i``, end to end (one pass, no index array)."""
    n = len(starts)
    at = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        at[i + 1] = at[i] + lengths[i]
    out = np.empty(at[n], dtype=src.dtype)
    for i in prange(n):
        s, o = starts[i], at[i]
        for k in range(lengths[i]):
            out[o + k] = src[s + k]
    return out


@njit(cache=True, nogil=True, parallel=True)
def same_sequences(residues: np.ndarray, offsets: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether sequence ``a[i]`` equals sequence ``b[i]`` byte for byte, for every ``i``."""
    out = np.zeros(len(a), dtype=np.bool_)
    for i in prange(len(a)):
        sa, sb = offsets[a[i]], offsets[b[i]]
        n = offsets[a[i] + 1] - sa
        if offsets[b[i] + 1] - sb != n:
            continue
        same = True
        for k in range(n):
            if residues[sa + k] != residues[sb + k]:
                same = False
                break
        out[i] = same
    return out


def cost_bounds(cum: np.ndarray, limit: int) -> np.ndarray:
    """Bounds of runs of items whose costs (``cum``: their running total) add up to about
    ``limit``; an item that costs more is a run of its own."""
    cuts = np.searchsorted(cum, np.arange(limit, cum[-1], limit), side="right") if len(cum) else []
    bounds = np.concatenate(([0], cuts, [len(cum)])).astype(np.int64)  # rising: repeats dropped below
    return bounds[np.diff(bounds, prepend=-1) > 0]  # (np.unique would import numpy.ma: 7 ms)
