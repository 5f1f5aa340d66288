"""GPU tests: every test here is marked ``gpu`` (the root conftest skips them without CuPy or a GPU)."""
from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark this folder's tests before the root conftest decides what to skip."""
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.gpu)


@pytest.fixture(scope="session")
def cuda_backend():
    """One CudaBackend for the session (compiles the kernels once)."""
    from msa.backends.cuda import CudaBackend

    return CudaBackend()


@pytest.fixture(autouse=True)
def _free_pool():
    """Give CuPy's pooled memory back after each test."""
    yield
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()


@pytest.fixture(autouse=True)
def _device_levels(monkeypatch):
    """Every progressive level on the GPU, so that these tests test the GPU's kernels; the
    tests of the hybrid (levels on the host where the model says so) ask for ``hybrid``."""
    import msa.progressive

    monkeypatch.setattr(msa.progressive, "HYBRID", False)


@pytest.fixture
def hybrid(monkeypatch):
    """Levels on the GPU or the host, as a user's run puts them."""
    import msa.progressive

    monkeypatch.setattr(msa.progressive, "HYBRID", True)
