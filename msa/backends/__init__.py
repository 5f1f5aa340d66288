"""The compute-backend seam: pipeline modules get a Backend and never ask which one."""
from __future__ import annotations

import sys
from typing import Protocol


class BackendUnavailable(RuntimeError):
    """The requested device cannot be used on this machine."""


class Backend(Protocol):
    """Batch operations named after pipeline steps.

    Every implementation returns the same integers for the same input; the CPU
    backend is the oracle for the CUDA one.
    """

    name: str

    # Guide-tree stage (see msa.kmers / msa.tree.parttree for the array layouts).
    def shared_kmers(self, tables, refs, members): ...
    def nearest_reference(self, tables, refs, members): ...

    # Progressive stage (see msa.progressive for the batch layout).
    def profile_align(self, batch): ...


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
