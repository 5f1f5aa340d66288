"""--gpu-memory on the CPU: the option's plumbing to the CUDA backend, its one-line errors, and
run_in_pieces under a cap (with a stand-in for CuPy; tests/gpu/test_memory_cap_gpu.py runs it
on a device)."""
from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import msa.backends
from msa.backends import GB, DeviceMemoryError, prepare_backend
from msa.backends.cpu import CpuBackend
from msa.cli import app

FAMILY = b">a\nMKVLAAGIVG\n>b\nMKVLGIVG\n>c\nMKLAAGIVW\n"


class FakeOutOfMemory(MemoryError):
    """CuPy's OutOfMemoryError(size, total, limit), as its attributes are."""

    def __init__(self, size: int, total: int, limit: int = 0) -> None:
        super().__init__(f"Out of memory allocating {size:,} bytes")
        self._size, self._total, self._limit = size, total, limit


def test_the_error_names_the_cap_and_what_is_needed() -> None:
    assert str(DeviceMemoryError(3_210_000_000, 2 * GB)) == (
        "--gpu-memory 2 GB is too small for this input; at least 3.3 GB is needed"
    )
    # An estimate at or under the cap still asks for more than the cap.
    assert str(DeviceMemoryError(GB, int(1.5 * GB))).endswith("at least 1.6 GB is needed")
    assert "at least 0.4 GB free" in str(DeviceMemoryError(310_000_000, None))
    error = DeviceMemoryError.from_exception(FakeOutOfMemory(2 * GB, GB, int(2.5 * GB)))
    assert (error.needed, error.limit) == (3 * GB, int(2.5 * GB))
    assert DeviceMemoryError.from_exception(MemoryError("host")) is None


def test_cpu_notes_the_cap_is_ignored() -> None:
    make, note = prepare_backend("cpu", 2 * GB)
    assert make is CpuBackend and note == "msa: --gpu-memory 2 GB is ignored on the CPU"
    assert prepare_backend("cpu")[1] is None
    with pytest.raises(ValueError, match="positive"):
        prepare_backend("cpu", 0)


@pytest.fixture
def fake_cuda(monkeypatch):
    """A 'cuda' backend that computes on the CPU and records how it was made."""
    made: list[dict] = []

    class FakeCuda(CpuBackend):
        fail: BaseException | None = None

        def __init__(self, device: int = 0, memory_limit=None, memory_cap=None) -> None:
            made.append({"memory_limit": memory_limit, "memory_cap": memory_cap})

        def profile_align(self, batch):
            if FakeCuda.fail is not None:
                raise FakeCuda.fail
            return super().profile_align(batch)

    module = types.ModuleType("msa.backends.cuda")
    module.CudaBackend = FakeCuda
    monkeypatch.setitem(sys.modules, "msa.backends.cuda", module)
    monkeypatch.setattr(msa.backends, "_cuda_unavailable_reason", lambda: None)
    return FakeCuda, made


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_the_cap_reaches_the_cuda_backend(fake_cuda, tmp_path: Path) -> None:
    _, made = fake_cuda
    (tmp_path / "in.fa").write_bytes(FAMILY)
    plain = invoke("align", str(tmp_path / "in.fa"), "--device", "cpu", "-q")
    capped = invoke("align", str(tmp_path / "in.fa"), "--device", "cuda", "--gpu-memory", "1.5", "-q")
    assert capped.exit_code == 0, capped.stderr
    assert made == [{"memory_limit": None, "memory_cap": 1_500_000_000}]
    assert capped.stdout_bytes == plain.stdout_bytes  # not part of the result
    result = invoke("align", str(tmp_path / "in.fa"), "-O", str(tmp_path / "out"), "--device", "cuda",
                    "--gpu-memory", "0.25", "-q")
    assert result.exit_code == 0, result.stderr
    result = invoke("tree", str(tmp_path / "in.fa"), "--device", "auto", "--gpu-memory", "3", "-q")
    assert result.exit_code == 0, result.stderr
    assert [m["memory_cap"] for m in made] == [1_500_000_000, 250_000_000, 3 * GB]
    assert msa.backends.get_backend("cuda", memory_cap=GB) is not None and made[-1]["memory_cap"] == GB


@pytest.mark.parametrize(
    "failure",
    [DeviceMemoryError(3_300_000_000, 1_500_000_000), FakeOutOfMemory(3_000_000_000, 300_000_000, 1_500_000_000)],
    ids=["run_in_pieces gave up", "CuPy's error elsewhere"],
)
def test_a_cap_too_small_is_one_line_and_no_file(fake_cuda, tmp_path: Path, failure: BaseException) -> None:
    FakeCuda, _ = fake_cuda
    FakeCuda.fail = failure
    (tmp_path / "in.fa").write_bytes(FAMILY)
    result = invoke("align", str(tmp_path / "in.fa"), "--device", "cuda", "--gpu-memory", "1.5",
                    "-o", str(tmp_path / "out.fa"))
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert result.stderr == "msa: error: --gpu-memory 1.5 GB is too small for this input; at least 3.3 GB is needed\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fa"]


def test_in_a_many_family_run_the_family_fails_alone(fake_cuda, tmp_path: Path) -> None:
    FakeCuda, _ = fake_cuda
    FakeCuda.fail = DeviceMemoryError(3_300_000_000, GB)
    (tmp_path / "in.fa").write_bytes(FAMILY)
    result = invoke("align", str(tmp_path / "in.fa"), "-O", str(tmp_path / "out"), "--device", "cuda",
                    "--gpu-memory", "1", "-q")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"msa: error: {tmp_path / 'in.fa'}: --gpu-memory 1 GB is too small for this input; at least 3.3 GB is needed",
        "msa: error: 1 of 1 families failed",
    ]


@pytest.mark.parametrize("value", ["0", "-2", "nan"])
def test_a_cap_that_is_no_size_is_one_line(tmp_path: Path, value: str) -> None:
    (tmp_path / "in.fa").write_bytes(FAMILY)
    result = invoke("align", str(tmp_path / "in.fa"), "--gpu-memory", value, "--device", "cpu")
    assert result.exit_code == 1
    assert result.stderr.startswith("msa: error: --gpu-memory") and result.stderr.count("\n") == 1


# ----------------------------------------------------------------------------- run_in_pieces


class FakePool:
    def __init__(self, limit: int, used: int) -> None:
        self.limit, self.used = limit, used

    def get_limit(self) -> int:
        return self.limit

    def used_bytes(self) -> int:
        return self.used

    def free_bytes(self) -> int:
        return 0

    def total_bytes(self) -> int:
        return self.used

    def free_all_blocks(self) -> None:
        pass


@pytest.fixture
def memory(monkeypatch):
    """msa/backends/cuda/memory.py loaded against a stand-in for CuPy: 80 GB free, a pool capped
    at 2 GB with 0.5 GB in use."""
    pool = FakePool(2 * GB, GB // 2)
    fake = types.ModuleType("cupy")
    fake.get_default_memory_pool = lambda: pool
    fake.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(memGetInfo=lambda: (80 * GB, 80 * GB)),
        memory=types.SimpleNamespace(OutOfMemoryError=FakeOutOfMemory),
    )
    monkeypatch.setitem(sys.modules, "cupy", fake)
    path = Path(msa.backends.__file__).parent / "cuda" / "memory.py"
    spec = importlib.util.spec_from_file_location("_memory_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, pool


def test_free_memory_counts_the_cap(memory) -> None:
    module, pool = memory
    assert module.free_bytes() == int(1.5 * GB)
    pool.limit = 0
    assert module.free_bytes() == 80 * GB


def test_pieces_shrink_under_the_cap_and_cover_every_unit(memory) -> None:
    module, _ = memory
    cost = np.full(40, 0.1 * GB)
    pieces: list[tuple[int, int]] = []

    def run(lo: int, hi: int) -> None:
        if cost[lo:hi].sum() > 0.3 * GB:  # the planned budget (0.75 GB) is too optimistic
            raise FakeOutOfMemory(int(cost[lo:hi].sum()), GB // 2, 2 * GB)
        pieces.append((lo, hi))

    module.run_in_pieces(cost, run)
    assert [lo for lo, _ in pieces] == [0] + [hi for _, hi in pieces[:-1]] and pieces[-1][1] == 40
    assert max(hi - lo for lo, hi in pieces) <= 3


def test_a_unit_that_cannot_fit_names_the_cap_it_needs(memory) -> None:
    module, _ = memory
    cost = np.array([0.2 * GB, 2.5 * GB, 0.1 * GB])

    def run(lo: int, hi: int) -> None:
        if hi - lo > 1 or lo == 1:
            raise FakeOutOfMemory(int(cost[lo:hi].sum()), GB // 2, 2 * GB)

    with pytest.raises(DeviceMemoryError) as caught:
        module.run_in_pieces(cost, run)
    assert caught.value.needed == GB // 2 + int(2.5 * GB)  # in use before it, plus its cost
    assert str(caught.value) == "--gpu-memory 2 GB is too small for this input; at least 3.0 GB is needed"
