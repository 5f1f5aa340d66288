"""FASTA records written on the GPU (kernels/records.cu), beside their CPU oracle msa.backends.cpu.records.

``msa add`` and ``msa merge`` on the GPU need Numba for nothing else: with the records
filled here, their runs never import it (msa._runtime.startup), and its import no longer takes the
GIL from the reading and the aligning (docs/start-up.md).
"""
from __future__ import annotations

import cupy as cp
import numpy as np

from msa import kernels
from msa.backends.cuda.memory import DeviceStage

#: kernels/records.cu's block (passed with -D).
RECORD_THREADS = 128


class RecordsStage(DeviceStage):
    """fill_records of :class:`~msa.backends.cuda.CudaBackend` (see Backend)."""

    def _load_records(self) -> None:
        records = kernels.load("records", (("RECORD_THREADS", RECORD_THREADS),), self.device)
        self._fill_records = records.get_function("fill_records")

    def fill_records(
        self, out: np.ndarray, rec_off: np.ndarray, heads: np.ndarray, head_off: np.ndarray, template: np.ndarray,
        width: int, ids: np.ndarray, offsets: np.ndarray, columns: np.ndarray, letters: np.ndarray,
    ) -> None:
        """msa.backends.cpu.records.fill_records on the device: the window ``out`` (host memory, a mapped file)
        is built on the GPU and copied back from its first record on. Only the window's span of
        sequences goes up. Where the device memory is full, the CPU fills it instead."""
        if len(ids) == 0:
            return
        ids = np.asarray(ids, dtype=np.int64)
        s0, s1 = int(ids.min()), int(ids.max()) + 1
        r0, r1 = int(offsets[s0]), int(offsets[s1])
        h0, h1 = int(head_off[0]), int(head_off[-1])
        first = int(rec_off[0])
        try:
            with cp.cuda.Device(self.device):
                window = cp.empty(len(out), dtype=cp.uint8)
                host = (rec_off, heads[h0:h1], head_off - h0, template, ids - s0, offsets[s0 : s1 + 1] - r0,
                        columns[r0:r1], letters[r0:r1])
                kinds = (np.int64, np.uint8, np.int64, np.uint8, np.int64, np.int64, np.int64, np.uint8)
                d = [cp.asarray(np.ascontiguousarray(a, dtype=k)) for a, k in zip(host, kinds)]  # host casts: no CuPy kernel
                self._fill_records(
                    (len(ids),), (RECORD_THREADS,),
                    (window, d[0], d[1], d[2], d[3], np.int64(len(template)), np.int64(width), *d[4:]),
                )
                window[first:].get(out=out[first:])
        except cp.cuda.memory.OutOfMemoryError:
            cp.get_default_memory_pool().free_all_blocks()
            from msa.backends.cpu.records import fill_records  # local: (b) Numba: the GPU path imports it only here (docs/start-up.md, step 8)

            fill_records(out, rec_off, heads, head_off, template, width, ids, offsets, columns, letters)
