"""Shared fixtures: the shared data folder, a subprocess runner for the CLI, GPU skipping,
and the Hypothesis profiles of tests/property."""
from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Callable, Iterator

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # tests/property skip themselves without Hypothesis
    pass
else:
    _SLOW_DATA = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]
    # ci (the default): a fixed number of examples from a fixed seed, so CI is bounded and
    # reproducible; each test's own max_examples is scaled from this (tests/property/fuzz.py).
    settings.register_profile(
        "ci", max_examples=100, deadline=None, derandomize=True, database=None, print_blob=True,
        suppress_health_check=_SLOW_DATA,
    )
    # dev: HYPOTHESIS_PROFILE=dev for a long local run (random seeds, failures remembered).
    settings.register_profile("dev", max_examples=2000, deadline=None, suppress_health_check=_SLOW_DATA)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


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
    """Tests marked ``gpu`` are skipped where CuPy or a GPU is missing; tests marked ``slow`` unless
    ``-m`` selects them (``pytest -m slow``), so CI's plain ``pytest`` stays short."""
    if "slow" not in (config.getoption("markexpr", "") or ""):
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(pytest.mark.skip(reason="slow: run with -m slow"))
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


class ProcessMark:
    """A marker put in a run's environment, which every process the run starts inherits (a
    fork, a spawned or detached interpreter alike): :meth:`processes` finds any still running.
    Linux (``/proc``)."""

    VAR = "MSA_TEST_PROCESS_MARK"

    def __init__(self) -> None:
        self.value = uuid.uuid4().hex

    def env(self) -> dict[str, str]:
        """The environment of a ``python -m msa`` run of this checkout, marked."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        env.setdefault("NUMBA_NUM_THREADS", "2")
        env[self.VAR] = self.value
        return env

    def processes(self) -> list[int]:
        """The pids of this user's processes whose environment holds the marker."""
        needle = f"{self.VAR}={self.value}".encode()
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    environ = fh.read()
            except OSError:  # gone, or another user's
                continue
            if needle in environ.split(b"\0"):
                found.append(int(entry))
        return found


@pytest.fixture
def process_mark() -> Iterator[ProcessMark]:
    """A fresh :class:`ProcessMark`; whatever it marks is killed after the test, so a test that
    fails with a run still waiting (on a FIFO, stopped by SIGTSTP) leaves nothing behind."""
    mark = ProcessMark()
    yield mark
    for pid in mark.processes():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:  # gone meanwhile
            pass
