"""Device memory of the CUDA backend: work cut into pieces that fit, and the state every stage shares.

Work that may not fit is cut into pieces sized from the free device memory
(MEMORY_FRACTION of it, or the backend's ``memory_limit``), and a piece that
still runs out of memory is halved. The free memory counts the limit of
CuPy's pool (``--gpu-memory``, CudaBackend's ``memory_cap``); a single unit
that runs out of memory ends the run with msa.backends.DeviceMemoryError,
naming the cap that would do.
"""
from __future__ import annotations

from collections.abc import Callable

import cupy as cp
import numpy as np

from msa.backends import DeviceMemoryError

#: Share of the free device memory one piece of work may plan to use.
MEMORY_FRACTION = 0.5


class DeviceStage:
    """What the stage mix-ins of :class:`msa.backends.cuda.CudaBackend` read from the backend."""

    #: CUDA device ordinal.
    device: int
    #: Streaming multiprocessors of the device (grids are sized from it).
    n_sm: int
    #: Most device bytes one piece of guide-tree work may plan to use (None: MEMORY_FRACTION of the free memory).
    memory_limit: int | None


def sequences_on_device(
    codes: np.ndarray, offsets: np.ndarray, seqs: np.ndarray
) -> tuple[np.ndarray, cp.ndarray, cp.ndarray]:
    """Lengths of sequences ``seqs``, and their codes packed end to end and offsets, uploaded."""
    from msa.seqops import take_ranges  # local: (b) Numba: the GPU path imports it only here (docs/start-up.md, step 8)

    lens = offsets[seqs + 1] - offsets[seqs]
    seq_off = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum(lens, out=seq_off[1:])
    return lens, cp.asarray(take_ranges(codes, offsets[seqs], lens)), cp.asarray(seq_off)


def condensed_layout(group_off: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group sizes, pairs per group, the condensed output array and each group's offset in it."""
    from msa.distances.condensed import condensed_offsets  # local: (b) Numba: the GPU path imports it only here (docs/start-up.md, step 8)

    out_off = condensed_offsets(group_off)
    return np.diff(group_off), np.diff(out_off), np.empty(out_off[-1], dtype=np.float64), out_off


def free_bytes() -> int:
    """Free device bytes, counting what CuPy's pool holds but does not use, within the pool's
    limit (``--gpu-memory``) when it has one.

    Under a limit the pool's cached blocks are released first and only what the pool has not
    reserved counts: CuPy checks the limit against its reserved bytes (cached blocks included)
    and does not release them before refusing, and a split block cannot be released at all."""
    free, _ = cp.cuda.runtime.memGetInfo()
    pool = cp.get_default_memory_pool()
    limit = int(pool.get_limit())
    if limit:
        pool.free_all_blocks()
        return max(min(int(free), limit - int(pool.total_bytes())), 0)
    return int(free) + int(pool.free_bytes())


def too_small(planned: float, exc: BaseException) -> DeviceMemoryError:
    """The error of a unit of work that ran out of device memory alone: it needs at least
    what was in use before it plus its planned cost, or what CuPy had allocated plus the
    allocation that failed, whichever is more; the cap is the pool's limit (None: no cap)."""
    seen = DeviceMemoryError.from_exception(exc)
    needed = max(int(planned), seen.needed if seen is not None else 0)
    limit = int(cp.get_default_memory_pool().get_limit()) or None
    return DeviceMemoryError(needed, limit)


def piece_budget(limit: int | None = None) -> float:
    """Bytes one piece of work may plan to use: MEMORY_FRACTION of the free memory, at most ``limit``."""
    budget = free_bytes() * MEMORY_FRACTION
    return budget if limit is None else min(budget, limit)


def piece_cuts(cost: np.ndarray, budget: float) -> np.ndarray:
    """Boundaries of consecutive pieces of units ``cost`` (bytes each), each within ``budget``
    unless one unit alone is over it."""
    cum = np.concatenate(([0.0], np.cumsum(cost, dtype=np.float64)))
    cuts, lo = [0], 0
    while lo < len(cost):
        lo = _piece_end(cum, lo, budget)
        cuts.append(lo)
    return np.array(cuts, dtype=np.int64)


def _piece_end(cum: np.ndarray, lo: int, budget: float) -> int:
    """End of the piece starting at unit ``lo``: as many units as fit ``budget``, at least one."""
    n = len(cum) - 1
    return min(n, max(lo + 1, int(np.searchsorted(cum, cum[lo] + budget, side="right")) - 1))


def run_in_pieces(cost: np.ndarray, run: Callable[[int, int], None], limit: int | None = None) -> None:
    """Call ``run(lo, hi)`` over units ``[0, len(cost))`` in pieces whose cost (bytes) fits the free memory.

    The budget is MEMORY_FRACTION of the free memory, or ``limit`` bytes if
    that is lower. A piece that still runs out of device memory is tried once more
    after the pool's cached blocks are released, then halved; one unit that runs out
    of memory alone raises DeviceMemoryError.
    """
    cum = np.concatenate(([0.0], np.cumsum(cost, dtype=np.float64)))
    budget = piece_budget(limit)
    pool = cp.get_default_memory_pool()
    lo, n = 0, len(cost)
    retried = False
    while lo < n:
        hi = _piece_end(cum, lo, budget)
        used = int(pool.used_bytes())
        try:
            run(lo, hi)
        except cp.cuda.memory.OutOfMemoryError as exc:
            pool.free_all_blocks()
            if not retried:
                retried = True
                continue
            if hi - lo == 1:
                raise too_small(used + float(cost[lo]), exc) from None
            budget = (cum[hi] - cum[lo]) / 2
            continue
        lo, retried = hi, False


def condensed_in_pieces(
    codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray,
    costs: tuple[float, float, float], run: Callable[..., np.ndarray],
    limit: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Condensed matrices of many groups, groups cut into pieces that fit the free device memory.

    ``costs``: device bytes per pair, per residue and per sequence of a piece;
    ``run(codes, offsets, ids, group_off)`` gives a piece's condensed distances on the host;
    ``limit``: the backend's memory_limit.
    """
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    group_off = np.ascontiguousarray(group_off, dtype=np.int64)
    sizes, pairs, out, out_off = condensed_layout(group_off)
    if out_off[-1] == 0:
        return out, out_off
    res_cum = np.concatenate(([0], np.cumsum(offsets[ids + 1] - offsets[ids])))
    residues = res_cum[group_off[1:]] - res_cum[group_off[:-1]]

    def piece(lo: int, hi: int) -> None:
        a, b = group_off[lo], group_off[hi]
        out[out_off[lo] : out_off[hi]] = run(codes, offsets, ids[a:b], group_off[lo : hi + 1] - a)

    per_pair, per_residue, per_sequence = costs
    cost = per_pair * pairs + per_residue * residues + per_sequence * sizes + 64
    run_in_pieces(cost, piece, limit)
    return out, out_off
