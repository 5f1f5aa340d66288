"""CPU backend: NumPy plus Numba kernels, the oracle for every GPU kernel."""
from __future__ import annotations


class CpuBackend:
    """Runs every stage on the CPU cores (Numba threads, set by --threads)."""

    name = "cpu"
    # Stage owners attach their operations here as methods; see msa/backends/__init__.py.
