"""The compute-backend seam: pipeline modules get a Backend and never ask which one."""
from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

    from msa.kmers import KmerTables
    from msa.profile import AlignBatch, AlignResult


class BackendUnavailable(RuntimeError):
    """The requested device cannot be used on this machine."""


class Backend(Protocol):
    """Batch operations named after pipeline steps.

    Every implementation returns the same integers for the same input; the CPU
    backend is the oracle for the CUDA one.
    """

    name: str

    # Guide-tree stage (see msa.kmers for the struct-array layout, msa.tree.parttree
    # for how the batches are formed). Condensed matrices use scipy's pair order;
    # group g's matrix is out[out_off[g]:out_off[g+1]].
    def kmer_tables(self, codes, offsets) -> KmerTables: ...
    def nearest_reference(
        self, tables, ref_ids, ref_off, member_ids, member_node, cap: float = ...
    ) -> tuple[np.ndarray, np.ndarray]: ...
    def kmer_distance_matrix(
        self, tables, ids, group_off, cap: float = ...
    ) -> tuple[np.ndarray, np.ndarray]: ...
    def lcs_distance_matrix(self, codes, offsets, ids, group_off) -> tuple[np.ndarray, np.ndarray]: ...
    # Smith-Waterman score distances (msa.backends.cpu_sw): the 24x24 int64 matrix, GapCosts unrescaled.
    def sw_distance_matrix(
        self, codes, offsets, ids, group_off, matrix, gaps
    ) -> tuple[np.ndarray, np.ndarray]: ...
    # PartTree's LCS assignment (nearest, distance, link matrices, their offsets) and the
    # O(n)-memory single-linkage MST (edges a, b, weight); see msa.backends.cpu_lcs_tree.
    def lcs_nearest_reference(
        self, codes, offsets, ref_ids, ref_off, member_ids, member_node
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
    def lcs_prim_mst(self, codes, offsets, ids) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    # The sampled single-linkage split: nearest sample member and its distance, no link matrices.
    def lcs_nearest_sample(
        self, codes, offsets, ref_ids, ref_off, member_ids, member_node
    ) -> tuple[np.ndarray, np.ndarray]: ...

    # Progressive stage (msa.profile holds the batch layout, msa.progressive the driver).
    # Profile tables and column maps live in the backend's array module ``xp`` (NumPy, or
    # CuPy on the GPU) for the whole stage; ``profile_align`` takes and returns such arrays
    # (batch.counts may also be a host array) and only the final columns go through ``to_host``.
    xp: ModuleType

    def profile_align(self, batch: AlignBatch) -> AlignResult: ...
    def to_host(self, a) -> np.ndarray: ...


def get_backend(device: str = "auto", *, quiet: bool = False) -> Backend:
    """Pick the backend once per run; ``auto`` prefers CUDA when CuPy sees a GPU."""
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"unknown device {device!r}; choose auto, cpu or cuda")
    if device in ("auto", "cuda"):
        reason = _cuda_unavailable_reason()
        if reason is None:
            from msa.backends.cuda import CudaBackend

            backend: Backend = CudaBackend()
            if device == "auto" and not quiet:
                print("msa: using the GPU (cuda backend)", file=sys.stderr)
            return backend
        if device == "cuda":
            raise BackendUnavailable(f"--device cuda: {reason}")
        if not quiet:
            print(f"msa: using the CPU ({reason})", file=sys.stderr)
    from msa.backends.cpu import CpuBackend

    return CpuBackend()


def _cuda_unavailable_reason() -> str | None:
    try:
        import cupy
    except Exception:
        return "CuPy is not installed"
    try:
        if not cupy.is_available():
            return "no CUDA GPU found"
    except Exception as exc:  # driver problems surface here
        return f"CUDA is not usable ({exc})"
    try:
        import msa.backends.cuda  # noqa: F401
    except ImportError:
        return "the cuda backend is not built yet"
    return None
