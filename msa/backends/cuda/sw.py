"""Smith-Waterman tree distances on the GPU (kernels/sw_distance.cu), beside its CPU oracle msa.backends.cpu.sw."""
from __future__ import annotations

import cupy as cp
import numpy as np

from msa import kernels
from msa.backends.cuda.memory import DeviceStage, condensed_in_pieces, sequences_on_device
from msa.params import GapCosts

#: Threads of a Smith-Waterman tile (kernels/sw_distance.cu): one row sequence against up to this many later members.
SW_THREADS = 128
#: SW blocks per SM a grid aims at (96 registers per thread with int32 scores: 5 resident blocks).
SW_BLOCKS_PER_SM = 8
#: Most bytes of the SW strip-crossing scratch (H, E per row of b per thread); fewer blocks past it.
SW_SCRATCH = 1 << 30
#: Largest score magnitude the int32 SW kernels take; past it they run on int64.
SW_INT32_MAX = 2**31 - 1
#: Device bytes per pair (output, tiles), per residue (codes) and per sequence (offsets, self score) of an SW piece.
SW_BYTES_PER_PAIR = 8 + 16 / SW_THREADS
SW_BYTES_PER_RESIDUE = 1
SW_BYTES_PER_SEQUENCE = 16


class SwStage(DeviceStage):
    """sw_distance_matrix of :class:`~msa.backends.cuda.CudaBackend`."""

    def sw_distance_matrix(
        self, codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray,
        matrix: np.ndarray, gaps: GapCosts,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Condensed Smith-Waterman score distances of many groups (kernels/sw_distance.cu; equal to the CPU's).

        Groups are cut into pieces that fit the free device memory, as in
        lcs_distance_matrix; a piece computes its sequences' self scores, then its pairs.
        """
        with cp.cuda.Device(self.device):
            d_matrix = cp.asarray(np.ascontiguousarray(matrix, dtype=np.int64))
            return condensed_in_pieces(
                codes, offsets, ids, group_off, (SW_BYTES_PER_PAIR, SW_BYTES_PER_RESIDUE, SW_BYTES_PER_SEQUENCE),
                lambda c, o, piece_ids, piece_off: self._sw_piece(c, o, piece_ids, piece_off, matrix, d_matrix, gaps),
                self.memory_limit,
            )

    def _sw_piece(
        self, codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray,
        matrix: np.ndarray, d_matrix: cp.ndarray, gaps: GapCosts,
    ) -> np.ndarray:
        """Self scores, then every pair's tile, of these groups (host result); int32 scores where they fit."""
        module = kernels.load("sw_distance", (), self.device)
        n = len(ids)
        lens, d_codes, d_seq_off = sequences_on_device(codes, offsets, ids)
        plan = _sw_tiles(group_off, lens)
        max_len = max(int(lens.max()), 1)
        wide = not _sw_fits_int32(matrix, gaps, max_len)
        kind, score = ("i64", np.int64) if wide else ("i32", np.int32)
        cross_bytes = 2 * np.dtype(score).itemsize
        n_tiles = len(plan["tile_row"])
        blocks = max(1, min(n_tiles, SW_BLOCKS_PER_SM * self.n_sm, SW_SCRATCH // (cross_bytes * max_len * SW_THREADS)))
        scratch = cp.empty(2 * blocks * SW_THREADS * max_len, dtype=score)
        gap_args = (score(gaps.open), score(gaps.extend))
        self_scores = cp.empty(n, dtype=cp.int64)
        module.get_function(f"sw_self_{kind}")(
            (max(1, min(blocks, -(-n // SW_THREADS))),), (SW_THREADS,),
            (d_codes, d_seq_off, np.int64(n), d_matrix, *gap_args, scratch, self_scores),
        )
        out = cp.empty(int(plan["out_off"][-1]), dtype=cp.float64)
        d = {k: cp.asarray(plan[k]) for k in ("group_off", "out_off", "row_group", "row_index", "tile_row", "tile_j0")}
        module.get_function(f"sw_tiles_{kind}")(
            (blocks,), (SW_THREADS,),
            (d_codes, d_seq_off, d["group_off"], d["out_off"], d["row_group"], d["row_index"], d["tile_row"],
             d["tile_j0"], np.int64(n_tiles), d_matrix, *gap_args, self_scores, scratch, out),
        )
        return out.get()


def _sw_tiles(group_off: np.ndarray, lens: np.ndarray) -> dict[str, np.ndarray]:
    """Tiles of the condensed SW matrices (row ``r`` against later members ``tile_j0 .. + SW_THREADS``),
    longest row sequence first, so that the grid's last tiles are the cheapest."""
    from msa.distances.condensed import condensed_rows  # local: (b) Numba: the GPU path imports it only here (docs/start-up.md, step 8)

    sizes = np.diff(group_off)
    row_group, row_index, out_off = condensed_rows(group_off)
    n_rows = len(row_group)
    row_tiles = -(-(sizes[row_group] - 1 - row_index) // SW_THREADS)
    n_tiles = int(row_tiles.sum())
    tile_row = np.repeat(np.arange(n_rows, dtype=np.int64), row_tiles)
    first = np.repeat(np.cumsum(row_tiles) - row_tiles, row_tiles)
    tile_j0 = row_index[tile_row] + 1 + SW_THREADS * (np.arange(n_tiles, dtype=np.int64) - first)
    order = np.argsort(-lens[group_off[row_group] + row_index][tile_row], kind="stable")
    return {
        "group_off": group_off, "out_off": out_off, "row_group": row_group, "row_index": row_index,
        "tile_row": tile_row[order], "tile_j0": tile_j0[order],
    }


def _sw_fits_int32(matrix: np.ndarray, gaps: GapCosts, max_len: int) -> bool:
    """Whether every SW value of sequences up to ``max_len`` fits int32 (kernels/sw_distance.cu's bound:
    values lie in [open + extend, max|M| * (max_len + 1)])."""
    top = int(np.abs(matrix).max()) * (max_len + 1)
    bottom = abs(int(gaps.open)) + abs(int(gaps.extend))
    return max(top, bottom) <= SW_INT32_MAX
