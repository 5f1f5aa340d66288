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
