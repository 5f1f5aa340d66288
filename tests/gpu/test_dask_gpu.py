"""Dask workers sharing one GPU (``--gpus 1 --workers 2``): each plans its work within its
share of the GPU's memory, and their outputs are the single process's, byte for byte."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from msa import align_files

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "balifam" / "balifam1000" / "in"
EXAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "examples" / "example.fa"


def test_a_worker_sharing_its_gpu_plans_within_its_share(monkeypatch) -> None:
    import cupy

    import msa.run.dask as run_dask
    from msa.backends.cuda import CudaBackend
    from msa.backends.cuda.memory import MEMORY_FRACTION

    total = int(cupy.cuda.runtime.memGetInfo()[1])
    monkeypatch.setenv(run_dask.GPU_SHARE_ENV, "3")
    shared = CudaBackend()
    run_dask._plan_within_share(shared)
    assert shared.memory_limit == int(total * MEMORY_FRACTION) // 3
    capped = CudaBackend(memory_cap=1 << 30)  # --gpu-memory 1 GB: planned within it, and a hard cap
    run_dask._plan_within_share(capped)
    assert capped.memory_limit == 1 << 30
    cupy.get_default_memory_pool().set_limit(size=0)


@pytest.mark.skipif(importlib.util.find_spec("dask_cuda") is None, reason="dask-cuda is not installed")
def test_workers_sharing_one_gpu_match_the_single_process(tmp_path: Path) -> None:
    """Balifam1000 families where present (consistency on), else pieces of the example."""
    inputs = sorted(SHARED.iterdir())[:6] if SHARED.is_dir() else []
    if not inputs:
        records = [b">" + r for r in EXAMPLE.read_bytes().split(b">")[1:]]
        for k in range(4):
            (tmp_path / f"f{k}.fa").write_bytes(b"".join(records[k * 40:(k + 1) * 40 + 10]))
        inputs = sorted(tmp_path.glob("f*.fa"))
    one = align_files(inputs, tmp_path / "one", device="cuda")
    two = align_files(inputs, tmp_path / "two", device="cuda", gpus=1, workers=2)
    assert len(one.done) == len(two.done) == len(inputs)
    for path in sorted((tmp_path / "one").iterdir()):
        assert (tmp_path / "two" / path.name).read_bytes() == path.read_bytes(), path.name
