"""CUDA backend: CuPy array plumbing around the kernels of ``kernels/*.cu``.

Besides :mod:`msa.kernels`, the only package that imports CuPy (importing it
needs CuPy; :func:`msa.backends.get_backend` imports it only where a GPU is
usable). Every operation returns exactly what
:class:`~msa.backends.cpu.CpuBackend` returns (the CPU is the oracle,
tests/gpu checks it). One module per stage, each beside its CPU oracle of the
same name: ``kmers``, ``lcs``, ``sw``, ``align``, ``library`` (the libraries' pairwise
alignments), ``segments`` (profile rows between progressive levels), ``records`` (FASTA
records); ``memory``, CUDA's alone, cuts work into pieces that fit the free device memory. :class:`CudaBackend` mixes the stages together.

The stage modules import the host-side Numba functions they call (the CPU's tables and
layouts) inside the functions that call them, so that importing this package and making the
backend import no Numba: ``msa add`` and ``msa merge`` on the GPU, whose records are written
here too, never import it (msa._runtime.startup).
"""
from __future__ import annotations

import cupy as cp
import numpy as np

from msa.backends.cuda.align import AlignStage
from msa.backends.cuda.kmers import DeviceKmerTables, KmerStage
from msa.backends.cuda.lcs import LcsStage
from msa.backends.cuda.library import LibraryStage
from msa.backends.cuda.records import RecordsStage
from msa.backends.cuda.segments import SegmentsStage
from msa.backends.cuda.sw import SwStage

__all__ = ["CudaBackend", "DeviceKmerTables"]


class CudaBackend(KmerStage, LcsStage, SwStage, AlignStage, LibraryStage, SegmentsStage, RecordsStage):
    """Runs the guide-tree stage and the progressive merges on one GPU."""

    name = "cuda"
    #: Every single-linkage LCS group goes through Prim: one launch runs all groups' steps at once.
    prim_every_group = True
    #: Uncut: a PartTree depth's call ends within a second on the GPU even at 10^6 sequences,
    #: and every cut would add a round of uploads and launches.
    lcs_pairs_per_call = 1 << 40
    xp = cp  # profile tables and maps stay CuPy arrays between levels
    align_forest = None  # a launch per level: msa.progressive's level loop drives the stage

    def __init__(self, device: int = 0, memory_limit: int | None = None, memory_cap: int | None = None) -> None:
        """``memory_limit``: most device bytes one piece of work may plan to use (default:
        MEMORY_FRACTION of the free memory, and of ``memory_cap``); tests lower it to force
        the splitting. ``memory_cap`` (``--gpu-memory``): most device bytes msa's arrays may
        take, set as the limit of CuPy's memory pool, so that work runs in smaller pieces
        (msa.backends.cuda.memory.run_in_pieces) instead of failing; a unit of work that
        does not fit even alone raises msa.backends.DeviceMemoryError with the cap it needs.
        The CUDA context and the loaded kernels (a few hundred MB) come on top."""
        self.device = device
        self.memory_cap = memory_cap
        self.memory_limit = memory_limit if memory_limit is not None else memory_cap
        with cp.cuda.Device(device) as dev:
            if memory_cap is not None:
                cp.get_default_memory_pool().set_limit(size=int(memory_cap))
            self.n_sm = int(dev.attributes["MultiProcessorCount"])
        self._load_kmers()
        self._load_segments()
        self._load_align()
        self._load_records()

    @staticmethod
    def to_host(a: cp.ndarray) -> np.ndarray:
        """Device array to a NumPy array (one copy)."""
        return cp.asnumpy(a)
