"""The CPU and CUDA backends are laid out alike: one module per stage on both sides, each CUDA
stage beside its CPU oracle of the same name (no GPU or CuPy needed: it reads the folders)."""
from __future__ import annotations

from pathlib import Path

BACKENDS = Path(__file__).resolve().parents[2] / "msa" / "backends"
#: Modules of one side only: the packages' own __init__ (the backend classes), CUDA's memory
#: (cutting work into pieces that fit the free device memory, which the CPU does not need) and
#: the CPU's forest (the progressive stage in one compiled call, its levels' own calls fused;
#: the GPU runs a launch per level by msa.progressive's loop, which the CPU also keeps).
ONE_SIDED = {"__init__.py", "memory.py", "forest.py"}


def test_every_stage_has_a_cpu_and_a_cuda_module() -> None:
    cpu = {p.name for p in (BACKENDS / "cpu").glob("*.py")} - ONE_SIDED
    cuda = {p.name for p in (BACKENDS / "cuda").glob("*.py")} - ONE_SIDED
    assert cpu == cuda, f"CPU only: {sorted(cpu - cuda)}; CUDA only: {sorted(cuda - cpu)}"
    assert {"align.py", "kmers.py", "lcs.py", "records.py", "segments.py", "sw.py"} <= cpu


def test_the_cpu_backend_takes_its_stage_functions_from_them() -> None:
    from msa.backends.cpu import CpuBackend, records, segments

    assert CpuBackend.fill_records is records.fill_records
    assert CpuBackend.gather_profiles is segments.gather_profiles
    assert CpuBackend.place_segments is segments.place_segments
