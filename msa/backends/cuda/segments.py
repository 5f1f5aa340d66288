"""Data movement between progressive levels on the GPU, and the levels' consistency bonuses and
their samples' walks (kernels/segments.cu), one launch per call."""
from __future__ import annotations

import cupy as cp
import numpy as np

from msa import kernels
from msa.backends.cuda.memory import DeviceStage
from msa.profile import N_COUNTS

#: kernels/segments.cu: elements a block copies, threads a block (passed with -D).
SEG_CHUNK = 4096
SEG_THREADS = 256


class SegmentsStage(DeviceStage):
    """gather_profiles and place_segments of :class:`~msa.backends.cuda.CudaBackend` (see Backend)."""

    def _load_segments(self) -> None:
        """Load kernels/segments.cu (the shipped fatbin, else NVRTC's compile) for this device."""
        segments = kernels.load("segments", (("SEG_CHUNK", SEG_CHUNK), ("SEG_THREADS", SEG_THREADS)), self.device)
        self._gather_profiles = segments.get_function("gather_profiles")
        self._place_segments = segments.get_function("place_segments")
        self._add_bonuses = segments.get_function("add_bonuses")
        self._walk_columns = segments.get_function("walk_columns")

    def gather_profiles(
        self, parts: list, part: np.ndarray, start: np.ndarray, widths: np.ndarray, codes: cp.ndarray,
        values: np.ndarray | None = None,
    ) -> cp.ndarray:
        """Segments of profile rows (or one-hot leaves, of their ``values``: 1 by default) end to
        end, one launch; see Backend."""
        widths = np.asarray(widths, dtype=np.int64)
        off = np.concatenate(([0], np.cumsum(widths)))
        one = np.ones(len(widths), dtype=np.int64) if values is None else np.asarray(values, dtype=np.int64)
        with cp.cuda.Device(self.device):
            out = cp.empty((int(off[-1]), N_COUNTS), dtype=cp.int32)
            ptrs = np.array([0 if p is None else p.data.ptr for p in parts] + [0], dtype=np.int64)
            rec = np.stack((ptrs[part], start, off[:-1], widths, one), axis=1)  # part -1: the last, 0
            self._segments(self._gather_profiles, rec, widths * N_COUNTS, (codes, out))
        return out

    def place_segments(
        self, targets: list, target: np.ndarray, start: np.ndarray, values: cp.ndarray, maps: cp.ndarray,
        parent: np.ndarray, widths: np.ndarray,
    ) -> None:
        """Scatter composed columns to their targets, one launch; see Backend."""
        widths = np.asarray(widths, dtype=np.int64)
        off = np.concatenate(([0], np.cumsum(widths)))
        ptrs = np.array([t.data.ptr for t in targets], dtype=np.int64)
        rec = np.stack((ptrs[target], start, off[:-1], parent, widths), axis=1)
        with cp.cuda.Device(self.device):
            self._segments(self._place_segments, rec, widths, (values, cp.ascontiguousarray(maps, dtype=cp.int32)))

    def add_bonuses(
        self, out: cp.ndarray, first: np.ndarray, count: np.ndarray, wb: np.ndarray, base: np.ndarray,
        scale: np.ndarray, lib_a: cp.ndarray, lib_b: cp.ndarray, vote: cp.ndarray, cur: cp.ndarray,
    ) -> None:
        """A level's consistency bonuses into its tables, one launch; see Backend. The library
        and its samples' columns stay on the device for the whole stage
        (msa.consistency.LevelBonuses)."""
        count = np.asarray(count, dtype=np.int64)
        rec = np.stack([np.asarray(x, dtype=np.int64) for x in (first, count, wb, base, scale)], axis=1)
        with cp.cuda.Device(self.device):
            self._segments(self._add_bonuses, rec, count, (lib_a, lib_b, vote, cur, out))

    def walk_columns(
        self, cur: cp.ndarray, start: np.ndarray, count: np.ndarray, base: np.ndarray, maps: cp.ndarray
    ) -> None:
        """A level's maps take its children's sampled residues to their parents' columns, one
        launch; see Backend."""
        count = np.asarray(count, dtype=np.int64)
        rec = np.stack([np.asarray(x, dtype=np.int64) for x in (start, count, base)], axis=1)
        with cp.cuda.Device(self.device):
            self._segments(self._walk_columns, rec, count, (cp.ascontiguousarray(maps, dtype=cp.int32), cur))

    @staticmethod
    def _segments(kernel: cp.RawKernel, rec: np.ndarray, elements: np.ndarray, args: tuple) -> None:
        """Launch a segments.cu kernel: one block per SEG_CHUNK elements of a segment (records rec)."""
        chunk_off = np.concatenate(([0], np.cumsum(-(-elements // SEG_CHUNK))))
        if chunk_off[-1] == 0:
            return
        meta = cp.asarray(np.concatenate((rec.astype(np.int64).ravel(), chunk_off)))
        kernel((int(chunk_off[-1]),), (SEG_THREADS,), (meta, meta[rec.size :], np.int64(len(rec)), *args))
