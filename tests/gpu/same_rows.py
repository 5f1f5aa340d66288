"""The comparison the GPU tests of an alignment option share (imported by them, not collected)."""
from __future__ import annotations

import numpy as np

from msa.backends.cpu import CpuBackend
from msa.params import AlignParams
from msa.pipeline import align_db
from msa.seqdb import SeqDB


def assert_gpu_rows_are_cpus(db: SeqDB, params: AlignParams, cuda_backend, without: AlignParams) -> None:
    """The GPU's rows of ``db`` under ``params`` are the CPU's, and differ from the CPU's under
    ``without`` (the option off: the test tests something)."""
    cpu = align_db(db, params, CpuBackend())
    gpu = align_db(db, params, cuda_backend)
    assert gpu.names == cpu.names
    np.testing.assert_array_equal(gpu.rows, cpu.rows)
    off = align_db(db, without, CpuBackend())
    assert off.rows.shape != cpu.rows.shape or (off.rows != cpu.rows).any()
