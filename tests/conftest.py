"""Shared fixtures: the shared data folder, a subprocess runner for the CLI, GPU skipping."""
from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@functools.cache
def _gpu_missing_reason() -> str | None:
    try:
        import cupy
    except Exception:
        return "CuPy is not installed"
    try:
        return None if cupy.is_available() else "no CUDA GPU"
    except Exception as exc:
        return f"CUDA is not usable ({exc})"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` are skipped where CuPy or a GPU is missing."""
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    reason = _gpu_missing_reason()
    if reason is not None:
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` beside the checkout; tests that need it skip where it is absent."""
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent")
    return SHARED


@pytest.fixture(scope="session")
def run_msa() -> Callable[..., subprocess.CompletedProcess[bytes]]:
    """Run ``python -m msa ARGS`` in ``cwd`` with this checkout first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.setdefault("NUMBA_NUM_THREADS", "2")

    def run(*args: object, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "msa", *map(str, args)],
            input=stdin,
            capture_output=True,
            cwd=cwd,
            env=env,
            timeout=600,
        )

    return run
