"""One BLAS thread in msa's processes, set before NumPy loads.

No stage of msa calls BLAS: its matrix products are of integers, which NumPy computes without
it. But NumPy's OpenBLAS starts a thread per core when it loads, and on a 16-core host those
threads took ~1.6 s of CPU in every run, more than the alignment (docs/start-up.md). A value
the user set is left alone; msa's child processes (Dask's workers) inherit it.
"""
from __future__ import annotations

import os

#: The variables that size NumPy's BLAS thread pool (OpenBLAS, the one the PyPI wheels carry).
BLAS_THREADS = ("OPENBLAS_NUM_THREADS",)


def one_blas_thread() -> None:
    for name in BLAS_THREADS:
        os.environ.setdefault(name, "1")
