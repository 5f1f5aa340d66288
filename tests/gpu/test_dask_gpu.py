"""Dask workers sharing one GPU (``--gpus 1 --workers 2``): each caps its device memory at its
share, and their outputs are the single process's, byte for byte."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from msa import align_files

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "balifam" / "balifam1000" / "in"
EXAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "examples" / "example.fa"


def test_a_worker_sharing_its_gpu_caps_its_memory_at_its_share(monkeypatch) -> None:
    import cupy

    import msa.run.dask as run_dask

    total = int(cupy.cuda.runtime.memGetInfo()[1])
    monkeypatch.setenv(run_dask.GPU_SHARE_ENV, "3")
    assert run_dask._shared_cap("cuda", None) == total // 3 == run_dask._shared_cap("auto", total)
    assert run_dask._shared_cap("cuda", 1 << 20) == 1 << 20


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
